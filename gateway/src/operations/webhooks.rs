//! Translation of the webhook use cases to `lab.webhooks.v1.WebhooksService`. Mutations carry the
//! caller's `Idempotency-Key` as metadata and report whether webhooks-svc answered with a stored
//! replay. Registration checks the spec's subscription rule here, before the service is called.

use super::{Replayable, is_replay, missing, service_error};
use crate::caller::Caller;
use crate::dto::webhooks::{
    CreateWebhookRequest, DeliveriesQuery, WebhookDelivery, WebhookDeliveryEnvelope, WebhookDeliveryList,
    WebhookEndpoint, WebhookEndpointEnvelope, WebhookEndpointList, WebhookSecretEnvelope, WebhooksQuery,
};
use crate::peers::Peers;
use platform::error::ApiError;
use platform::grpc::{outgoing, outgoing_idempotent};
use platform::mesh::WEBHOOKS_SVC;
use proto::webhooks as pb;
use uuid::Uuid;

/// `POST /webhooks`: validates the body (400), checks `webhooks:write` plus the read scope of
/// every selected event (403), then registers the endpoint; the answer carries the secret.
pub async fn create_endpoint(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    body: CreateWebhookRequest,
) -> Result<Replayable<WebhookSecretEnvelope>, ApiError> {
    let request = body.into_proto()?;
    platform::access::require_subscription(&request.events, &caller.principal.scopes)?;
    let response = peers
        .webhooks()
        .create_endpoint(outgoing_idempotent(
            request,
            &caller.token(WEBHOOKS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let created = response.into_inner();
    Ok(Replayable {
        body: WebhookSecretEnvelope::new(created.endpoint, created.signing_secret)?,
        replayed,
    })
}

/// `GET /webhooks`: one page of the customer's endpoints (safe metadata only).
pub async fn list_endpoints(
    peers: &Peers,
    caller: &Caller,
    query: WebhooksQuery,
) -> Result<WebhookEndpointList, ApiError> {
    let request = pb::ListEndpointsRequest {
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .webhooks()
        .list_endpoints(outgoing(request, &caller.token(WEBHOOKS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .endpoints
        .into_iter()
        .map(WebhookEndpoint::try_from)
        .collect::<Result<_, _>>()?;
    Ok(WebhookEndpointList::new(data, page.next_cursor))
}

/// `DELETE /webhooks/{endpointId}`: the deleted endpoint.
pub async fn delete_endpoint(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    endpoint_id: Uuid,
) -> Result<Replayable<WebhookEndpointEnvelope>, ApiError> {
    let request = pb::DeleteEndpointRequest {
        endpoint_id: endpoint_id.to_string(),
    };
    let response = peers
        .webhooks()
        .delete_endpoint(outgoing_idempotent(
            request,
            &caller.token(WEBHOOKS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let endpoint = response
        .into_inner()
        .endpoint
        .ok_or_else(|| missing("endpoint"))?;
    Ok(Replayable {
        body: WebhookEndpoint::try_from(endpoint)?.into(),
        replayed,
    })
}

/// `POST /webhooks/{endpointId}/rotate-secret`: the endpoint and its new secret.
pub async fn rotate_secret(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    endpoint_id: Uuid,
) -> Result<Replayable<WebhookSecretEnvelope>, ApiError> {
    let request = pb::RotateSecretRequest {
        endpoint_id: endpoint_id.to_string(),
    };
    let response = peers
        .webhooks()
        .rotate_secret(outgoing_idempotent(
            request,
            &caller.token(WEBHOOKS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let rotated = response.into_inner();
    Ok(Replayable {
        body: WebhookSecretEnvelope::new(rotated.endpoint, rotated.signing_secret)?,
        replayed,
    })
}

/// `POST /webhooks/{endpointId}/test`: the test delivery with the outcome of its first attempt.
pub async fn send_test_delivery(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    endpoint_id: Uuid,
) -> Result<Replayable<WebhookDeliveryEnvelope>, ApiError> {
    let request = pb::SendTestDeliveryRequest {
        endpoint_id: endpoint_id.to_string(),
    };
    let response = peers
        .webhooks()
        .send_test_delivery(outgoing_idempotent(
            request,
            &caller.token(WEBHOOKS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let delivery = response
        .into_inner()
        .delivery
        .ok_or_else(|| missing("delivery"))?;
    Ok(Replayable {
        body: WebhookDelivery::try_from(delivery)?.into(),
        replayed,
    })
}

/// `GET /webhooks/{endpointId}/deliveries`: one page of the endpoint's deliveries, newest first.
pub async fn list_deliveries(
    peers: &Peers,
    caller: &Caller,
    endpoint_id: Uuid,
    query: DeliveriesQuery,
) -> Result<WebhookDeliveryList, ApiError> {
    let request = pb::ListDeliveriesRequest {
        endpoint_id: endpoint_id.to_string(),
        status: query.status,
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .webhooks()
        .list_deliveries(outgoing(request, &caller.token(WEBHOOKS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .deliveries
        .into_iter()
        .map(WebhookDelivery::try_from)
        .collect::<Result<_, _>>()?;
    Ok(WebhookDeliveryList::new(data, page.next_cursor))
}

//! REST handlers of webhook endpoints: register, list, delete, rotate the secret, send a test
//! delivery, and (our addition) list an endpoint's deliveries. Mutations need `Idempotency-Key`;
//! answers that carry a signing secret are marked `Cache-Control: no-store`.

use crate::caller::Caller;
use crate::dto::webhooks::{
    CreateWebhookRequest, DeliveriesQuery, EmptyBody, WebhookDeliveryEnvelope, WebhookDeliveryList,
    WebhookEndpointEnvelope, WebhookEndpointList, WebhookSecretEnvelope, WebhooksQuery,
};
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, ApiQuery, EndpointId, IdempotencyKey, OptionalApiJson};
use crate::http::{AppState, replayable_response};
use crate::operations::webhooks as operations;
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

/// Registers a public HTTPS endpoint and returns its signing secret.
///
/// Besides `webhooks:write`, the key must hold the read scope of every selected event
/// (`coa.published` → `results:read` when `events` is absent), else 403 `insufficient_scope` with
/// `details.required` and `details.missing`. An unknown event type is 400 `unknown_event` with
/// `details.field` = `events[i]`; an address that is not public HTTPS is 400
/// `invalid_webhook_url`. A customer has at most 20 endpoints (deleted ones do not count): the
/// next registration is 409 `webhook_endpoint_limit_reached` with `details.limit` (not stored for
/// replay: retried after a deletion, the same request runs again). The secret is shown here
/// only; replaying the identical request with the same `Idempotency-Key` (same API key) answers
/// the same 201 with the same secret and `Idempotent-Replayed: true` while the replay record is
/// retained.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", operation_id = "createWebhookEndpoint",
    request_body = CreateWebhookRequest,
    responses((status = 201, description = "the endpoint and its signing secret (also for a replay, with Idempotent-Replayed: true)",
        body = WebhookSecretEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn create_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<CreateWebhookRequest>,
) -> Result<Response, ErrorResponse> {
    let created = operations::create_endpoint(&state.peers, &caller, &key, body).await?;
    Ok(no_store(replayable_response(StatusCode::CREATED, created)))
}

/// Lists the customer's endpoints as safe metadata (never a signing secret).
#[utoipa::path(get, path = "/webhooks", tag = "webhooks", operation_id = "listWebhookEndpoints",
    params(WebhooksQuery),
    responses((status = 200, description = "one page of endpoints", body = WebhookEndpointList)))]
pub async fn list_endpoints(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<WebhooksQuery>,
) -> Result<Json<WebhookEndpointList>, ErrorResponse> {
    Ok(Json(
        operations::list_endpoints(&state.peers, &caller, query).await?,
    ))
}

/// Deletes an endpoint.
///
/// Its pending deliveries are abandoned. No body (an empty body or `{}` is accepted). A replay
/// with the same `Idempotency-Key` answers the same 200 with `Idempotent-Replayed: true`.
#[utoipa::path(delete, path = "/webhooks/{endpointId}", tag = "webhooks", operation_id = "deleteWebhookEndpoint",
    params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)")),
    responses((status = 200, description = "the deleted endpoint (also for a replay, with Idempotent-Replayed: true)",
        body = WebhookEndpointEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn delete_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    EndpointId(endpoint_id): EndpointId,
    IdempotencyKey(key): IdempotencyKey,
    OptionalApiJson(EmptyBody {}): OptionalApiJson<EmptyBody>,
) -> Result<Response, ErrorResponse> {
    let deleted = operations::delete_endpoint(&state.peers, &caller, &key, endpoint_id).await?;
    Ok(replayable_response(StatusCode::OK, deleted))
}

/// Issues a new signing secret.
///
/// The previous secret keeps signing beside the new one until `previousSecretExpiresAt`. A
/// replay of the same `Idempotency-Key` (same API key) answers the same 200 with the same secret
/// and `Idempotent-Replayed: true` while the replay record is retained.
#[utoipa::path(post, path = "/webhooks/{endpointId}/rotate-secret", tag = "webhooks", operation_id = "rotateWebhookSecret",
    params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)")),
    request_body(content = Option<EmptyBody>, description = "absent, empty or `{}`"),
    responses((status = 200, description = "the endpoint and its new signing secret (also for a replay, with Idempotent-Replayed: true)",
        body = WebhookSecretEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: Caller,
    EndpointId(endpoint_id): EndpointId,
    IdempotencyKey(key): IdempotencyKey,
    OptionalApiJson(EmptyBody {}): OptionalApiJson<EmptyBody>,
) -> Result<Response, ErrorResponse> {
    let rotated = operations::rotate_secret(&state.peers, &caller, &key, endpoint_id).await?;
    Ok(no_store(replayable_response(StatusCode::OK, rotated)))
}

/// Sends a signed test delivery.
///
/// Queues one signed `webhook.test` delivery, attempts it at once and reports the outcome of
/// that first attempt.
#[utoipa::path(post, path = "/webhooks/{endpointId}/test", tag = "webhooks", operation_id = "sendWebhookTest",
    params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)")),
    request_body(content = Option<EmptyBody>, description = "absent, empty or `{}`"),
    responses((status = 200, description = "the test delivery with its first attempt (also for a replay, with Idempotent-Replayed: true)",
        body = WebhookDeliveryEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn send_test_delivery(
    State(state): State<AppState>,
    caller: Caller,
    EndpointId(endpoint_id): EndpointId,
    IdempotencyKey(key): IdempotencyKey,
    OptionalApiJson(EmptyBody {}): OptionalApiJson<EmptyBody>,
) -> Result<Response, ErrorResponse> {
    let sent = operations::send_test_delivery(&state.peers, &caller, &key, endpoint_id).await?;
    Ok(replayable_response(StatusCode::OK, sent))
}

/// Lists an endpoint's deliveries with every attempt, newest first.
///
/// Not in the spec's table: our addition, so that customers can read what was attempted and why
/// it failed.
#[utoipa::path(get, path = "/webhooks/{endpointId}/deliveries", tag = "webhooks", operation_id = "listWebhookDeliveries",
    params(("endpointId" = uuid::Uuid, Path, description = "endpoint UUID (anything else is 400 invalid_request)"), DeliveriesQuery),
    responses((status = 200, description = "one page of deliveries", body = WebhookDeliveryList)))]
pub async fn list_deliveries(
    State(state): State<AppState>,
    caller: Caller,
    EndpointId(endpoint_id): EndpointId,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> Result<Json<WebhookDeliveryList>, ErrorResponse> {
    Ok(Json(
        operations::list_deliveries(&state.peers, &caller, endpoint_id, query).await?,
    ))
}

/// Marks an answer that carries a signing secret as not storable by caches.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

//! gRPC adapter of `lab.webhooks.v1.WebhooksService`: who may call each rpc ([`ACCESS`],
//! enforced by the platform's access layer), then per rpc: principal, idempotency key, the use
//! case, conversion back. No business rule lives here.

use crate::domain::{DeliveryStatus, NewEndpoint};
use crate::service::{Viewer, WebhooksService, endpoint_id};
use platform::access::{self, AccessTable};
use platform::error::{ApiError, ErrorCode};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::pagination::PageRequest;
use platform::principal::{PrincipalKind, roles};
use proto::webhooks as pb;
use proto::webhooks::webhooks_service_server::WebhooksService as WebhooksApi;
use tonic::{Request, Response, Status};

const READ: access::Rule = access::customer(&[proto::scopes::WEBHOOKS_READ]);
const WRITE: access::Rule = access::customer(&[proto::scopes::WEBHOOKS_WRITE]);

/// Who may call each rpc: API keys with their scope (a subscription's event read scopes are
/// checked by the use case); operators with `webhooks.admin` inspect, redeliver and replay.
pub const ACCESS: AccessTable = &[
    ("CreateEndpoint", WRITE),
    ("ListEndpoints", READ),
    ("DeleteEndpoint", WRITE),
    ("RotateSecret", WRITE),
    ("SendTestDelivery", WRITE),
    ("ListDeliveries", READ.or_staff(roles::WEBHOOKS_ADMIN)),
    ("RedeliverDeadLetters", access::staff(roles::WEBHOOKS_ADMIN)),
    ("ReplayEvents", access::staff(roles::WEBHOOKS_ADMIN)),
];

/// The tonic service over the webhooks use cases.
pub struct WebhooksGrpc {
    service: WebhooksService,
}

impl WebhooksGrpc {
    pub fn new(service: WebhooksService) -> Self {
        Self { service }
    }
}

#[tonic::async_trait]
impl WebhooksApi for WebhooksGrpc {
    async fn create_endpoint(
        &self,
        request: Request<pb::CreateEndpointRequest>,
    ) -> Result<Response<pb::CreateEndpointResponse>, Status> {
        let caller = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let new = NewEndpoint::try_from(request.into_inner())?;
        self.service
            .create_endpoint(&caller, key, new)
            .await
            .into_response(pb::CreateEndpointResponse::from)
    }

    async fn list_endpoints(
        &self,
        request: Request<pb::ListEndpointsRequest>,
    ) -> Result<Response<pb::ListEndpointsResponse>, Status> {
        let caller = principal(&request)?;
        let message = request.get_ref();
        let page = PageRequest::new(message.limit, message.cursor.clone())?;
        let page = self.service.list_endpoints(caller.customer()?, &page).await?;
        Ok(Response::new(pb::ListEndpointsResponse {
            endpoints: page.items.iter().map(Into::into).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn delete_endpoint(
        &self,
        request: Request<pb::DeleteEndpointRequest>,
    ) -> Result<Response<pb::DeleteEndpointResponse>, Status> {
        let caller = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let id = endpoint_id(&request.get_ref().endpoint_id)?;
        self.service
            .delete_endpoint(&caller, key, id)
            .await
            .into_response(|endpoint| pb::DeleteEndpointResponse {
                endpoint: Some((&endpoint).into()),
            })
    }

    async fn rotate_secret(
        &self,
        request: Request<pb::RotateSecretRequest>,
    ) -> Result<Response<pb::RotateSecretResponse>, Status> {
        let caller = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let id = endpoint_id(&request.get_ref().endpoint_id)?;
        self.service
            .rotate_secret(&caller, key, id)
            .await
            .into_response(pb::RotateSecretResponse::from)
    }

    async fn send_test_delivery(
        &self,
        request: Request<pb::SendTestDeliveryRequest>,
    ) -> Result<Response<pb::SendTestDeliveryResponse>, Status> {
        let caller = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let id = endpoint_id(&request.get_ref().endpoint_id)?;
        self.service
            .send_test_delivery(&caller, key, id)
            .await
            .into_response(|delivery| pb::SendTestDeliveryResponse {
                delivery: Some((&delivery).into()),
            })
    }

    async fn list_deliveries(
        &self,
        request: Request<pb::ListDeliveriesRequest>,
    ) -> Result<Response<pb::ListDeliveriesResponse>, Status> {
        let caller = principal(&request)?;
        // The access table admitted staff only with `webhooks.admin`.
        let viewer = if caller.kind == PrincipalKind::Staff {
            Viewer::Staff
        } else {
            Viewer::Customer(caller.customer()?)
        };
        let message = request.get_ref();
        let endpoint = endpoint_id(&message.endpoint_id)?;
        let status = DeliveryStatus::parse_filter(message.status.as_deref())?;
        let page = PageRequest::new(message.limit, message.cursor.clone())?;
        let page = self
            .service
            .list_deliveries(viewer, endpoint, status, &page)
            .await?;
        Ok(Response::new(pb::ListDeliveriesResponse {
            deliveries: page.items.iter().map(Into::into).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn redeliver_dead_letters(
        &self,
        request: Request<pb::RedeliverDeadLettersRequest>,
    ) -> Result<Response<pb::RedeliverDeadLettersResponse>, Status> {
        let operator = principal(&request)?.subject;
        let endpoint = request
            .get_ref()
            .endpoint_id
            .as_deref()
            .map(endpoint_id)
            .transpose()?;
        let queued = self.service.redeliver_dead_letters(endpoint).await?;
        tracing::info!(%operator, ?endpoint, queued, "dead deliveries queued again");
        Ok(Response::new(pb::RedeliverDeadLettersResponse {
            queued: i32::try_from(queued).unwrap_or(i32::MAX),
        }))
    }

    async fn replay_events(
        &self,
        request: Request<pb::ReplayEventsRequest>,
    ) -> Result<Response<pb::ReplayEventsResponse>, Status> {
        let operator = principal(&request)?.subject;
        let message = request.get_ref();
        let endpoint = endpoint_id(&message.endpoint_id)?;
        let since = message
            .since
            .as_ref()
            .and_then(platform::time::from_timestamp)
            .ok_or_else(|| ApiError::field(ErrorCode::InvalidRequest, "since", "since is required"))?;
        let queued = self.service.replay_events(endpoint, since).await?;
        tracing::info!(%operator, %endpoint, %since, queued, "events replayed");
        Ok(Response::new(pb::ReplayEventsResponse {
            queued: i32::try_from(queued).unwrap_or(i32::MAX),
        }))
    }
}

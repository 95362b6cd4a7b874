//! The webhooks-svc stand-in, hosted by the fake mesh beside the other services. Like the real
//! service it verifies the principal token, requires `idempotency-key` on mutations and marks
//! replays; its answers are scripted: endpoint [`MISSING_ENDPOINT`] → 404 `not_found`,
//! [`CONFLICTING_ENDPOINT`] → 409 `conflict`, a URL containing `10.0.0.1` → 400
//! `invalid_webhook_url`, an idempotency key starting with `replay` → a replay, with `reused` →
//! 409 `idempotency_key_reused`.

use crate::fakes::Fake;
use crate::fixtures::ts;
use platform::error::{ApiError, ErrorCode};
use proto::webhooks as pb;
use proto::webhooks::webhooks_service_server::WebhooksService;
use tonic::{Request, Response, Status};

pub const ENDPOINT_ID: &str = "6a1f0c1e-0000-4000-8000-000000000001";
pub const MISSING_ENDPOINT: &str = "6a1f0c1e-0000-4000-8000-000000000404";
pub const CONFLICTING_ENDPOINT: &str = "6a1f0c1e-0000-4000-8000-000000000409";
pub const CREATED_SECRET: &str = "whsec_created0123456789abcdefghijklmnopqrstuv";
pub const ROTATED_SECRET: &str = "whsec_rotated0123456789abcdefghijklmnopqrstuv";

fn endpoint(id: &str, status: &str) -> pb::Endpoint {
    pb::Endpoint {
        id: id.to_owned(),
        url: "https://hooks.example.com/lab".into(),
        events: vec!["coa.published".into()],
        status: status.to_owned(),
        disabled_reason: None,
        description: Some("ops".into()),
        created_at: ts(1_784_000_000),
        updated_at: ts(1_784_000_100),
        previous_secret_expires_at: None,
    }
}

/// The scripted failure of an endpoint id, or of an idempotency key.
fn scripted(endpoint_id: &str, key: Option<&str>) -> Result<(), Status> {
    let error = match (endpoint_id, key) {
        (MISSING_ENDPOINT, _) => ApiError::new(ErrorCode::NotFound, "no such webhook endpoint"),
        (CONFLICTING_ENDPOINT, _) => ApiError::new(ErrorCode::Conflict, "the endpoint is disabled"),
        (_, Some(key)) if key.starts_with("reused") => ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "the idempotency key was used with another request",
        ),
        _ => return Ok(()),
    };
    Err(error.into())
}

/// Answers with `message`, marked as a replay when the key says so.
fn answer<T>(message: T, key: &str) -> Result<Response<T>, Status> {
    let mut response = Response::new(message);
    if key.starts_with("replay") {
        platform::grpc::mark_replayed(&mut response);
    }
    Ok(response)
}

fn delivery(id: &str, status: &str, attempt: pb::DeliveryAttempt) -> pb::Delivery {
    pb::Delivery {
        id: id.to_owned(),
        endpoint_id: ENDPOINT_ID.into(),
        event_id: format!("evt-{id}"),
        event_type: "webhook.test".into(),
        status: status.to_owned(),
        attempt_count: 1,
        next_attempt_at: if status == "pending" {
            ts(1_784_000_500)
        } else {
            None
        },
        created_at: ts(1_784_000_200),
        attempts: vec![attempt],
    }
}

fn succeeded_attempt() -> pb::DeliveryAttempt {
    pb::DeliveryAttempt {
        attempt_number: 1,
        attempted_at: ts(1_784_000_201),
        status_code: Some(200),
        latency_ms: 12,
        error: None,
        outcome: "succeeded".into(),
    }
}

#[tonic::async_trait]
impl WebhooksService for Fake {
    async fn create_endpoint(
        &self,
        request: Request<pb::CreateEndpointRequest>,
    ) -> Result<Response<pb::CreateEndpointResponse>, Status> {
        self.record("CreateEndpoint", &request)?;
        let key = platform::grpc::idempotency_key(&request)?;
        scripted("", Some(&key))?;
        let body = request.into_inner();
        if body.url.contains("10.0.0.1") {
            let error = ApiError::field(ErrorCode::InvalidWebhookUrl, "url", "the address is private");
            return Err(error.into());
        }
        let mut created = endpoint(ENDPOINT_ID, "active");
        created.url = body.url;
        created.events = body.events;
        created.description = body.description;
        let response = pb::CreateEndpointResponse {
            endpoint: Some(created),
            signing_secret: CREATED_SECRET.into(),
        };
        answer(response, &key)
    }

    async fn list_endpoints(
        &self,
        request: Request<pb::ListEndpointsRequest>,
    ) -> Result<Response<pb::ListEndpointsResponse>, Status> {
        self.record("ListEndpoints", &request)?;
        let mut rotated = endpoint(ENDPOINT_ID, "active");
        rotated.previous_secret_expires_at = ts(1_784_086_400);
        let mut disabled = endpoint(CONFLICTING_ENDPOINT, "disabled");
        disabled.disabled_reason = Some("the receiver answered 410 Gone".into());
        Ok(Response::new(pb::ListEndpointsResponse {
            endpoints: vec![rotated, disabled],
            next_cursor: (request.get_ref().limit == Some(2)).then(|| "endpoints-2".to_owned()),
        }))
    }

    async fn delete_endpoint(
        &self,
        request: Request<pb::DeleteEndpointRequest>,
    ) -> Result<Response<pb::DeleteEndpointResponse>, Status> {
        self.record("DeleteEndpoint", &request)?;
        let key = platform::grpc::idempotency_key(&request)?;
        scripted(&request.get_ref().endpoint_id, Some(&key))?;
        let deleted = endpoint(&request.get_ref().endpoint_id, "deleted");
        answer(
            pb::DeleteEndpointResponse {
                endpoint: Some(deleted),
            },
            &key,
        )
    }

    async fn rotate_secret(
        &self,
        request: Request<pb::RotateSecretRequest>,
    ) -> Result<Response<pb::RotateSecretResponse>, Status> {
        self.record("RotateSecret", &request)?;
        let key = platform::grpc::idempotency_key(&request)?;
        scripted(&request.get_ref().endpoint_id, Some(&key))?;
        let mut rotated = endpoint(&request.get_ref().endpoint_id, "active");
        rotated.previous_secret_expires_at = ts(1_784_086_400);
        let response = pb::RotateSecretResponse {
            endpoint: Some(rotated),
            signing_secret: ROTATED_SECRET.into(),
        };
        answer(response, &key)
    }

    async fn send_test_delivery(
        &self,
        request: Request<pb::SendTestDeliveryRequest>,
    ) -> Result<Response<pb::SendTestDeliveryResponse>, Status> {
        self.record("SendTestDelivery", &request)?;
        let key = platform::grpc::idempotency_key(&request)?;
        scripted(&request.get_ref().endpoint_id, Some(&key))?;
        let sent = delivery("d-test", "succeeded", succeeded_attempt());
        answer(pb::SendTestDeliveryResponse { delivery: Some(sent) }, &key)
    }

    async fn list_deliveries(
        &self,
        request: Request<pb::ListDeliveriesRequest>,
    ) -> Result<Response<pb::ListDeliveriesResponse>, Status> {
        self.record("ListDeliveries", &request)?;
        scripted(&request.get_ref().endpoint_id, None)?;
        let refused = pb::DeliveryAttempt {
            attempt_number: 1,
            attempted_at: ts(1_784_000_301),
            status_code: None,
            latency_ms: 3,
            error: Some("connection refused".into()),
            outcome: "failed".into(),
        };
        Ok(Response::new(pb::ListDeliveriesResponse {
            deliveries: vec![
                delivery("d-2", "pending", refused),
                delivery("d-1", "succeeded", succeeded_attempt()),
            ],
            next_cursor: Some("deliveries-2".into()),
        }))
    }

    async fn redeliver_dead_letters(
        &self,
        _: Request<pb::RedeliverDeadLettersRequest>,
    ) -> Result<Response<pb::RedeliverDeadLettersResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn replay_events(
        &self,
        _: Request<pb::ReplayEventsRequest>,
    ) -> Result<Response<pb::ReplayEventsResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }
}

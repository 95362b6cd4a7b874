//! Conversions between protobuf messages and the domain: the registration request in, endpoints
//! as safe metadata, issued secrets and deliveries with their attempts out.

use crate::domain::{Attempt, Delivery, Endpoint, IssuedSecret, NewEndpoint};
use platform::error::ApiError;
use platform::time::{to_timestamp, to_timestamp_opt};
use proto::webhooks as pb;
use secrecy::ExposeSecret;

impl TryFrom<pb::CreateEndpointRequest> for NewEndpoint {
    type Error = ApiError;

    /// Checks the URL shape, the event names and the description.
    fn try_from(request: pb::CreateEndpointRequest) -> Result<Self, ApiError> {
        NewEndpoint::validate(&request.url, &request.events, request.description.as_deref())
    }
}

impl From<IssuedSecret> for pb::CreateEndpointResponse {
    fn from(issued: IssuedSecret) -> Self {
        pb::CreateEndpointResponse {
            endpoint: Some((&issued.endpoint).into()),
            signing_secret: issued.signing_secret.expose_secret().to_owned(),
        }
    }
}

impl From<IssuedSecret> for pb::RotateSecretResponse {
    fn from(issued: IssuedSecret) -> Self {
        pb::RotateSecretResponse {
            endpoint: Some((&issued.endpoint).into()),
            signing_secret: issued.signing_secret.expose_secret().to_owned(),
        }
    }
}

impl From<&Endpoint> for pb::Endpoint {
    fn from(endpoint: &Endpoint) -> Self {
        pb::Endpoint {
            id: endpoint.id.to_string(),
            url: endpoint.url.clone(),
            events: endpoint.events.clone(),
            status: endpoint.status.as_str().to_owned(),
            disabled_reason: endpoint.disabled_reason.clone(),
            description: endpoint.description.clone(),
            created_at: Some(to_timestamp(endpoint.created_at)),
            updated_at: Some(to_timestamp(endpoint.updated_at)),
            previous_secret_expires_at: to_timestamp_opt(endpoint.previous_secret_expires_at),
        }
    }
}

impl From<&Attempt> for pb::DeliveryAttempt {
    fn from(attempt: &Attempt) -> Self {
        pb::DeliveryAttempt {
            attempt_number: attempt.attempt_number,
            attempted_at: Some(to_timestamp(attempt.attempted_at)),
            status_code: attempt.status_code,
            latency_ms: attempt.latency_ms,
            error: attempt.error.clone(),
            outcome: attempt.outcome.clone(),
        }
    }
}

impl From<&Delivery> for pb::Delivery {
    fn from(delivery: &Delivery) -> Self {
        pb::Delivery {
            id: delivery.id.to_string(),
            endpoint_id: delivery.endpoint_id.to_string(),
            event_id: delivery.event_id.to_string(),
            event_type: delivery.event_type.clone(),
            status: delivery.status.clone(),
            attempt_count: delivery.attempt_count,
            next_attempt_at: to_timestamp_opt(delivery.next_attempt_at),
            created_at: Some(to_timestamp(delivery.created_at)),
            attempts: delivery.attempts.iter().map(Into::into).collect(),
        }
    }
}

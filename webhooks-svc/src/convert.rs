//! Domain to protobuf conversions (endpoints as safe metadata, deliveries with attempts).

use crate::domain::{Attempt, Delivery, Endpoint};
use platform::time::{to_timestamp, to_timestamp_opt};
use proto::webhooks as pb;

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

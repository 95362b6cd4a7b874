//! Webhook shapes: the register body, the list queries, the endpoint as safe metadata (only
//! [`WebhookSecretEnvelope`], the answer of register and rotate-secret, carries a signing
//! secret), and the delivery with its attempts.

use super::common::{list_envelope, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use proto::webhooks as pb;
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
use utoipa::{IntoParams, ToSchema};

/// Longest endpoint description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// Body of `POST /webhooks`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// `https` URL of a public host (no user info); checked by webhooks-svc.
    pub url: String,
    /// Subscribed event types (at least one when present); default `["coa.published"]`. Each
    /// needs its read scope on the key besides `webhooks:write`.
    #[serde(default)]
    #[schema(schema_with = event_types_schema)]
    pub events: Option<Vec<String>>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: Option<String>,
}

impl CreateWebhookRequest {
    /// Validates the shape the gateway owns and builds the service request: 400
    /// `invalid_request` for an empty `events` (absent means the default) or a description over
    /// 500 characters (after trimming, as webhooks-svc counts); the selection itself is
    /// `proto::event_data::select_events` (the default event when absent, 400 `unknown_event`
    /// naming `events[i]`, duplicates dropped).
    pub fn into_proto(self) -> Result<pb::CreateEndpointRequest, ApiError> {
        let requested = match self.events {
            None => Vec::new(),
            Some(events) if events.is_empty() => {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    "events",
                    "events must name at least one event type; omit it for coa.published",
                ));
            }
            Some(events) => events,
        };
        let events = proto::event_data::select_events(&requested)?;
        if let Some(description) = &self.description
            && description.trim().chars().count() > MAX_DESCRIPTION_CHARS
        {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "description",
                "description must be at most 500 characters",
            ));
        }
        Ok(pb::CreateEndpointRequest {
            url: self.url,
            events,
            description: self.description,
        })
    }
}

/// `events`: an array of the documented event types.
fn event_types_schema() -> utoipa::openapi::schema::Array {
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(proto::event_data::event_names()));
    ArrayBuilder::new()
        .items(item)
        .min_items(Some(1))
        .description(Some(
            "event types; default [\"coa.published\"]; each needs its read scope besides webhooks:write",
        ))
        .build()
}

/// Body of delete, rotate-secret and test: absent, empty, or `{}`. No properties are allowed.
#[derive(Deserialize, ToSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}

/// Query of `GET /webhooks`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WebhooksQuery {
    /// Page size, 1 to 200 (checked by webhooks-svc).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

/// Query of `GET /webhooks/{endpointId}/deliveries`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// Only deliveries in this status: `pending`, `succeeded`, `dead` or `abandoned`.
    pub status: Option<String>,
    /// Page size, 1 to 200 (checked by webhooks-svc).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

/// A registered webhook endpoint, as safe metadata (never a secret).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpoint {
    pub id: String,
    pub url: String,
    /// Subscribed event types.
    pub events: Vec<String>,
    /// `active`, `disabled` (after a 410 from the receiver, or by staff) or `deleted`.
    pub status: String,
    /// Why the endpoint was disabled, else `null`.
    pub disabled_reason: Option<String>,
    pub description: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
    /// After a rotation, until when the previous secret also signs; else `null`.
    #[serde(serialize_with = "rfc3339_opt")]
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
}

single_envelope!(WebhookEndpointEnvelope, WebhookEndpointData, endpoint: WebhookEndpoint);
list_envelope!(WebhookEndpointList, WebhookEndpoint);

impl TryFrom<pb::Endpoint> for WebhookEndpoint {
    type Error = ApiError;

    fn try_from(endpoint: pb::Endpoint) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(endpoint.created_at.as_ref(), "endpoint createdAt")?,
            updated_at: required_time(endpoint.updated_at.as_ref(), "endpoint updatedAt")?,
            previous_secret_expires_at: optional_time(endpoint.previous_secret_expires_at.as_ref()),
            id: endpoint.id,
            url: endpoint.url,
            events: endpoint.events,
            status: endpoint.status,
            disabled_reason: endpoint.disabled_reason,
            description: endpoint.description,
        })
    }
}

/// `{ "data": { "endpoint": …, "signingSecret": "whsec_…" } }`: the answer of register and
/// rotate-secret, the only shapes that carry a signing secret.
// No `Debug` derive, so that the secret cannot be logged by accident.
#[derive(Serialize, ToSchema)]
pub struct WebhookSecretEnvelope {
    pub data: WebhookSecretData,
}

/// An endpoint with its plaintext signing secret.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSecretData {
    pub endpoint: WebhookEndpoint,
    /// The plaintext signing secret (`whsec_…`); the HMAC-SHA256 key is this string's UTF-8
    /// bytes. Shown here only; recoverable by replaying the identical idempotent request.
    #[schema(example = "whsec_…")]
    pub signing_secret: String,
}

impl WebhookSecretEnvelope {
    /// Builds the envelope from a service's endpoint and secret.
    pub fn new(endpoint: Option<pb::Endpoint>, signing_secret: String) -> Result<Self, ApiError> {
        let endpoint =
            endpoint.ok_or_else(|| ApiError::internal("webhooks-svc answered without the endpoint"))?;
        if signing_secret.is_empty() {
            return Err(ApiError::internal(
                "webhooks-svc answered without the signing secret",
            ));
        }
        Ok(Self {
            data: WebhookSecretData {
                endpoint: WebhookEndpoint::try_from(endpoint)?,
                signing_secret,
            },
        })
    }
}

/// One event for one endpoint, with every attempt.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    pub id: String,
    pub endpoint_id: String,
    /// Stable across retries; sent as `X-SVC-Event-Id`.
    pub event_id: String,
    /// The event type (`webhook.test` for a test delivery).
    pub event_type: String,
    /// `pending`, `succeeded`, `dead` (retries exhausted) or `abandoned` (endpoint disabled or
    /// deleted).
    pub status: String,
    pub attempt_count: i32,
    /// When the next attempt is due, else `null`.
    #[serde(serialize_with = "rfc3339_opt")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Oldest first.
    pub attempts: Vec<DeliveryAttempt>,
}

single_envelope!(WebhookDeliveryEnvelope, WebhookDeliveryData, delivery: WebhookDelivery);
list_envelope!(WebhookDeliveryList, WebhookDelivery);

impl TryFrom<pb::Delivery> for WebhookDelivery {
    type Error = ApiError;

    fn try_from(delivery: pb::Delivery) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(delivery.created_at.as_ref(), "delivery createdAt")?,
            next_attempt_at: optional_time(delivery.next_attempt_at.as_ref()),
            attempts: delivery
                .attempts
                .into_iter()
                .map(DeliveryAttempt::try_from)
                .collect::<Result<_, _>>()?,
            id: delivery.id,
            endpoint_id: delivery.endpoint_id,
            event_id: delivery.event_id,
            event_type: delivery.event_type,
            status: delivery.status,
            attempt_count: delivery.attempt_count,
        })
    }
}

/// One attempt to deliver.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    pub attempt_number: i32,
    #[serde(serialize_with = "rfc3339")]
    pub attempted_at: DateTime<Utc>,
    /// HTTP status received; `null` when no response arrived.
    pub status_code: Option<i32>,
    /// Time from connect to response (or failure).
    pub latency_ms: i64,
    /// Why the attempt failed (timeout, connection refused, refused address, non-2xx…), else `null`.
    pub error: Option<String>,
    /// `succeeded` or `failed`.
    pub outcome: String,
}

impl TryFrom<pb::DeliveryAttempt> for DeliveryAttempt {
    type Error = ApiError;

    fn try_from(attempt: pb::DeliveryAttempt) -> Result<Self, ApiError> {
        Ok(Self {
            attempted_at: required_time(attempt.attempted_at.as_ref(), "attempt attemptedAt")?,
            attempt_number: attempt.attempt_number,
            status_code: attempt.status_code,
            latency_ms: attempt.latency_ms,
            error: attempt.error,
            outcome: attempt.outcome,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(events: Option<Vec<&str>>, description: Option<String>) -> CreateWebhookRequest {
        CreateWebhookRequest {
            url: "https://hooks.example.com/lab".into(),
            events: events.map(|events| events.into_iter().map(str::to_owned).collect()),
            description,
        }
    }

    #[test]
    fn absent_events_default_to_coa_published_and_duplicates_are_dropped() {
        let request = body(None, None).into_proto().unwrap();
        assert_eq!(request.events, vec!["coa.published"]);
        let request = body(
            Some(vec!["order.created", "order.created", "invoice.created"]),
            None,
        )
        .into_proto()
        .unwrap();
        assert_eq!(request.events, vec!["order.created", "invoice.created"]);
    }

    #[test]
    fn empty_events_unknown_events_and_long_descriptions_are_refused() {
        let empty = body(Some(vec![]), None).into_proto().unwrap_err();
        assert_eq!(empty.code, ErrorCode::InvalidRequest);
        assert_eq!(empty.details.unwrap()["field"], "events");
        let unknown = body(Some(vec!["order.created", "webhook.test"]), None)
            .into_proto()
            .unwrap_err();
        assert_eq!(unknown.code, ErrorCode::UnknownEvent);
        assert_eq!(unknown.details.unwrap()["field"], "events[1]");
        let long = body(None, Some("é".repeat(501))).into_proto().unwrap_err();
        assert_eq!(long.details.unwrap()["field"], "description");
        assert!(body(None, Some("é".repeat(500))).into_proto().is_ok());
    }
}

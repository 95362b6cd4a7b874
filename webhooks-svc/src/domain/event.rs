//! Webhook events: the JSON body every delivery of an event carries (built once, stored as exact
//! bytes) and the derived `results.published` that accompanies every `coa.published`. Which types
//! a subscription may select, and the scopes it needs, is `proto::event_data`'s rule.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

/// API version stamped on every body (the OpenAPI description version).
pub const API_VERSION: &str = "2026-07-17";
/// The source event that also yields [`RESULTS_PUBLISHED`].
pub const COA_PUBLISHED: &str = "coa.published";
/// Sent together with every `coa.published`, with the same data.
pub const RESULTS_PUBLISHED: &str = "results.published";
/// Type of test deliveries (not subscribable).
pub const WEBHOOK_TEST: &str = "webhook.test";

/// The id of the `results.published` event derived from a `coa.published` event: UUIDv5 in the
/// namespace of the original id over the type, so every redelivery derives the same id.
pub fn derived_event_id(original: Uuid, event_type: &str) -> Uuid {
    Uuid::new_v5(&original, event_type.as_bytes())
}

/// One event as stored and delivered.
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookEvent {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub event_type: String,
    pub occurred_at: DateTime<Utc>,
    /// The exact body bytes of every delivery of this event.
    pub body: Vec<u8>,
    /// W3C trace context of the operation that caused the event.
    pub traceparent: String,
    pub tracestate: String,
}

#[derive(Serialize)]
struct Body<'a> {
    id: String,
    #[serde(rename = "type")]
    event_type: &'a str,
    #[serde(rename = "createdAt")]
    created_at: String,
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    data: &'a serde_json::Value,
}

/// The body `{"id","type","createdAt","apiVersion","data"}` as bytes.
pub fn body_bytes(
    id: Uuid,
    event_type: &str,
    created_at: DateTime<Utc>,
    data: &serde_json::Value,
) -> Vec<u8> {
    let body = Body {
        id: id.to_string(),
        event_type,
        created_at: platform::time::rfc3339(created_at),
        api_version: API_VERSION,
        data,
    };
    serde_json::to_vec(&body).expect("a body of strings and JSON values serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_id_is_stable_and_distinct() {
        let original = Uuid::now_v7();
        let derived = derived_event_id(original, RESULTS_PUBLISHED);
        assert_eq!(derived, derived_event_id(original, RESULTS_PUBLISHED));
        assert_ne!(derived, original);
        assert_ne!(derived, derived_event_id(Uuid::now_v7(), RESULTS_PUBLISHED));
    }

    #[test]
    fn the_body_has_the_documented_fields_in_order() {
        let id = Uuid::parse_str("0193a3c4-5d1e-7f00-8a1b-2c3d4e5f6a7b").unwrap();
        let at = DateTime::parse_from_rfc3339("2026-11-22T01:02:03.456789Z")
            .unwrap()
            .to_utc();
        let body = body_bytes(id, "order.created", at, &serde_json::json!({ "order_id": "o-1" }));
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"id":"0193a3c4-5d1e-7f00-8a1b-2c3d4e5f6a7b","type":"order.created","createdAt":"2026-11-22T01:02:03.456789Z","apiVersion":"2026-07-17","data":{"order_id":"o-1"}}"#
        );
    }
}

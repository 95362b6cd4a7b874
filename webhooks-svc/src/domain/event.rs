//! Webhook events: which types a subscription may select (and the read scopes they need), the
//! JSON body every delivery of an event carries (built once, stored as exact bytes), and the
//! derived `results.published` that accompanies every `coa.published`.

use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use serde::Serialize;
use uuid::Uuid;

/// API version stamped on every body (the OpenAPI description version).
pub const API_VERSION: &str = "2026-07-17";
/// Type an endpoint subscribes to when none is selected.
pub const DEFAULT_EVENT: &str = "coa.published";
/// The source event that also yields [`RESULTS_PUBLISHED`].
pub const COA_PUBLISHED: &str = "coa.published";
/// Sent together with every `coa.published`, with the same data.
pub const RESULTS_PUBLISHED: &str = "results.published";
/// Type of test deliveries (not subscribable).
pub const WEBHOOK_TEST: &str = "webhook.test";

/// Validates the requested event types: unknown → 400 `unknown_event` naming `events[i]`; none →
/// the default; duplicates dropped, order kept.
pub fn select_events(requested: &[String]) -> Result<Vec<String>, ApiError> {
    if requested.is_empty() {
        return Ok(vec![DEFAULT_EVENT.to_owned()]);
    }
    let mut selected: Vec<String> = Vec::with_capacity(requested.len());
    for (index, event) in requested.iter().enumerate() {
        if proto::event_data::read_scope(event).is_none() {
            let allowed: Vec<&str> = proto::event_data::EVENT_KINDS
                .iter()
                .map(|(name, _)| *name)
                .collect();
            return Err(ApiError::field(
                ErrorCode::UnknownEvent,
                &format!("events[{index}]"),
                format!("unknown event type {event:?}"),
            )
            .with_details(serde_json::json!({ "allowed": allowed })));
        }
        if !selected.contains(event) {
            selected.push(event.clone());
        }
    }
    Ok(selected)
}

/// The read scopes that `events` need and `held` lacks, deduplicated, in event order.
pub fn missing_read_scopes(events: &[String], held: &[String]) -> Vec<&'static str> {
    let mut missing: Vec<&'static str> = Vec::new();
    for scope in events
        .iter()
        .filter_map(|event| proto::event_data::read_scope(event))
    {
        if !held.iter().any(|held| held == scope) && !missing.contains(&scope) {
            missing.push(scope);
        }
    }
    missing
}

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

    fn names(events: &[&str]) -> Vec<String> {
        events.iter().map(|event| (*event).to_owned()).collect()
    }

    #[test]
    fn no_selection_means_coa_published_and_duplicates_are_dropped() {
        assert_eq!(select_events(&[]).unwrap(), names(&["coa.published"]));
        assert_eq!(
            select_events(&names(&["order.created", "invoice.created", "order.created"])).unwrap(),
            names(&["order.created", "invoice.created"])
        );
    }

    #[test]
    fn an_unknown_event_names_its_position() {
        for unknown in ["payment.succeeded", "webhook.test", "ORDER.CREATED", ""] {
            let error = select_events(&names(&["order.created", unknown])).unwrap_err();
            assert_eq!(error.code, ErrorCode::UnknownEvent);
            assert_eq!(error.details.unwrap()["field"], "events[1]");
        }
    }

    #[test]
    fn missing_read_scopes_are_listed_once() {
        let events = names(&[
            "order.created",
            "payment.confirmed",
            "order.status_changed",
            "coa.published",
        ]);
        let held = names(&["webhooks:write", "orders:read"]);
        assert_eq!(
            missing_read_scopes(&events, &held),
            vec!["payments:read", "results:read"]
        );
        let all = names(&["orders:read", "payments:read", "results:read"]);
        assert!(missing_read_scopes(&events, &all).is_empty());
    }

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

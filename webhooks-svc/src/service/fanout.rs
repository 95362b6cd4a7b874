//! The fan-out of stream events: store each (and the `results.published` derived from a
//! `coa.published`) and queue a delivery for every active endpoint of the event's customer
//! subscribed to its type, atomically with the processed-event record. The record is the one
//! `platform::consumer::first_delivery` writes (`processed_events`, consumer `webhooks-svc`),
//! inlined into the fan-out statement; a whole read of the stream is applied in one statement,
//! so a batch of events costs one round trip and one commit.

use super::WebhooksService;
use crate::domain::WebhookEvent;
use crate::domain::event::{COA_PUBLISHED, RESULTS_PUBLISHED, body_bytes, derived_event_id};
use crate::repo;
use chrono::{DateTime, Utc};
use platform::consumer::HandlerError;
use proto::events::EventEnvelope;
use uuid::Uuid;

impl WebhooksService {
    /// Fans a batch of envelopes (one read of a stream) out in one transaction and hands the
    /// queued deliveries to the dispatcher; returns one outcome per envelope. Types that are
    /// not webhook events are skipped; `results.published` envelopes are skipped because this
    /// service derives that event from `coa.published` itself; an envelope that can never be
    /// stored fails permanently on its own. When the batch's statement fails (it committed
    /// nothing), each envelope is tried again alone, so one event the database refuses is
    /// retried (and in the end dead-lettered) without holding back the others of its read.
    pub async fn fan_out(&self, envelopes: &[&EventEnvelope]) -> Vec<Result<(), HandlerError>> {
        let mut outcomes: Vec<Result<(), HandlerError>> = Vec::with_capacity(envelopes.len());
        // Per envelope to store: its position and its events, each with its source id.
        let mut groups: Vec<(usize, Vec<WebhookEvent>)> = Vec::with_capacity(envelopes.len());
        for (index, envelope) in envelopes.iter().enumerate() {
            outcomes.push(Ok(()));
            if proto::event_data::read_scope(&envelope.r#type).is_none()
                || envelope.r#type == RESULTS_PUBLISHED
            {
                tracing::debug!(event.type = %envelope.r#type, "not a webhook source event; skipped");
                continue;
            }
            match webhook_events(envelope) {
                Ok(events) => groups.push((index, events)),
                Err(error) => outcomes[index] = Err(error),
            }
        }
        let all: Vec<(Uuid, &WebhookEvent)> = groups.iter().flat_map(|(_, events)| sourced(events)).collect();
        let Err(error) = self.store_and_hand_off(&all).await else {
            return outcomes;
        };
        if groups.len() == 1 {
            outcomes[groups[0].0] = Err(HandlerError::Retry(error.into()));
            return outcomes;
        }
        tracing::warn!(%error, events = groups.len(), "fanning out a batch failed; trying each event alone");
        for (index, events) in &groups {
            if let Err(error) = self.store_and_hand_off(&sourced(events)).await {
                tracing::warn!(event.id = %events[0].id, %error, "fanning out an event failed");
                outcomes[*index] = Err(HandlerError::Retry(error.into()));
            }
        }
        outcomes
    }

    /// Stores `events` and queues their deliveries in one statement, then hands the deliveries
    /// to the dispatcher.
    async fn store_and_hand_off(&self, events: &[(Uuid, &WebhookEvent)]) -> Result<(), sqlx::Error> {
        if events.is_empty() {
            return Ok(());
        }
        let claimed = repo::events::fan_out_batch(
            &self.pool,
            platform::streams::GROUP_WEBHOOKS,
            events,
            self.delivery.lease,
        )
        .await?;
        tracing::debug!(events = events.len(), queued = claimed.len(), "events fanned out");
        self.dispatcher.hand_off(claimed).await;
        Ok(())
    }
}

/// The stored events of an envelope: itself, plus `results.published` for `coa.published`.
pub fn webhook_events(envelope: &EventEnvelope) -> Result<Vec<WebhookEvent>, HandlerError> {
    let id = platform::consumer::event_uuid(envelope, "event id", &envelope.id)?;
    let customer_id = platform::consumer::event_customer(envelope)?;
    let occurred_at = DateTime::parse_from_rfc3339(&envelope.occurred_at)
        .map(|time| time.with_timezone(&Utc))
        .unwrap_or_else(|_| platform::time::now());
    let data = envelope
        .data
        .as_ref()
        .map(proto::event_data::to_json)
        .unwrap_or_else(|| serde_json::json!({}));
    let event = |id: Uuid, event_type: &str| WebhookEvent {
        id,
        customer_id,
        event_type: event_type.to_owned(),
        occurred_at,
        body: body_bytes(id, event_type, occurred_at, &data),
        traceparent: trace_header(&envelope.traceparent),
        tracestate: trace_header(&envelope.tracestate),
    };
    let mut events = vec![event(id, &envelope.r#type)];
    if envelope.r#type == COA_PUBLISHED {
        events.push(event(derived_event_id(id, RESULTS_PUBLISHED), RESULTS_PUBLISHED));
    }
    Ok(events)
}

/// A trace context header as stored and sent: kept when it is at most 512 visible ASCII
/// characters (what W3C Trace Context allows), dropped otherwise, so that a malformed header
/// can neither break the fan-out statement (PostgreSQL text refuses NUL) nor reach receivers.
fn trace_header(value: &str) -> String {
    let valid = value.len() <= 512 && value.bytes().all(|byte| (0x20..=0x7e).contains(&byte));
    if valid { value.to_owned() } else { String::new() }
}

/// Pairs each event of a group with its source id: the first event of a group is the source,
/// a derived one names it as its source.
fn sourced(events: &[WebhookEvent]) -> Vec<(Uuid, &WebhookEvent)> {
    events.iter().map(|event| (events[0].id, event)).collect()
}

#[cfg(test)]
mod tests {
    use super::trace_header;

    #[test]
    fn a_trace_header_with_control_characters_or_too_long_is_dropped() {
        let valid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert_eq!(trace_header(valid), valid);
        assert_eq!(trace_header("vendor=a b,other=c"), "vendor=a b,other=c");
        assert_eq!(trace_header("00-\0-01"), "");
        assert_eq!(trace_header("caf\u{e9}"), "");
        assert_eq!(trace_header(&"a".repeat(513)), "");
    }
}

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
use std::sync::Arc;
use uuid::Uuid;

impl WebhooksService {
    /// Fans a batch of envelopes (one read of a stream) out in one transaction and hands the
    /// queued deliveries to the dispatcher; returns one outcome per envelope. Types that are
    /// not webhook events are skipped; `results.published` envelopes are skipped because this
    /// service derives that event from `coa.published` itself; an envelope that can never be
    /// stored fails permanently on its own; a database failure fails the whole batch (retried).
    pub async fn fan_out(&self, envelopes: &[&EventEnvelope]) -> Vec<Result<(), HandlerError>> {
        let mut outcomes: Vec<Result<(), HandlerError>> = Vec::with_capacity(envelopes.len());
        let mut sourced: Vec<(Uuid, WebhookEvent)> = Vec::with_capacity(envelopes.len());
        for envelope in envelopes {
            if proto::event_data::read_scope(&envelope.r#type).is_none()
                || envelope.r#type == RESULTS_PUBLISHED
            {
                tracing::debug!(event.type = %envelope.r#type, "not a webhook source event; skipped");
                outcomes.push(Ok(()));
                continue;
            }
            match webhook_events(envelope) {
                Ok(events) => {
                    let source = events[0].id;
                    sourced.extend(events.into_iter().map(|event| (source, event)));
                    outcomes.push(Ok(()));
                }
                Err(error) => outcomes.push(Err(error)),
            }
        }
        if sourced.is_empty() {
            return outcomes;
        }
        let fanned_out = repo::events::fan_out_batch(
            &self.pool,
            platform::streams::GROUP_WEBHOOKS,
            &sourced,
            self.delivery.lease,
        )
        .await;
        match fanned_out {
            Ok(claimed) => {
                tracing::debug!(
                    events = sourced.len(),
                    queued = claimed.len(),
                    "events fanned out"
                );
                self.dispatcher.hand_off(claimed).await;
                outcomes
            }
            Err(error) => {
                let error = std::sync::Arc::new(error);
                outcomes
                    .into_iter()
                    .map(|outcome| {
                        outcome
                            .and_then(|()| Err(HandlerError::Retry(SharedError(Arc::clone(&error)).into())))
                    })
                    .collect()
            }
        }
    }
}

/// A database error shared by every event of a failed batch.
#[derive(Debug)]
struct SharedError(Arc<sqlx::Error>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {}

/// The stored events of an envelope: itself, plus `results.published` for `coa.published`.
pub fn webhook_events(envelope: &EventEnvelope) -> Result<Vec<WebhookEvent>, HandlerError> {
    let permanent = |what: &str| HandlerError::Permanent(anyhow::anyhow!("{what}"));
    let id = Uuid::parse_str(&envelope.id).map_err(|_| permanent("the event id is not a UUID"))?;
    let customer_id =
        Uuid::parse_str(&envelope.customer_id).map_err(|_| permanent("the event has no customer id"))?;
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
        traceparent: envelope.traceparent.clone(),
        tracestate: envelope.tracestate.clone(),
    };
    let mut events = vec![event(id, &envelope.r#type)];
    if envelope.r#type == COA_PUBLISHED {
        events.push(event(derived_event_id(id, RESULTS_PUBLISHED), RESULTS_PUBLISHED));
    }
    Ok(events)
}

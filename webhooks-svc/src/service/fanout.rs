//! The fan-out of one stream event: store it (and the `results.published` derived from a
//! `coa.published`) and queue a delivery for every active endpoint of the event's customer
//! subscribed to its type, atomically with the processed-event record. The record is the one
//! `platform::consumer::first_delivery` writes (`processed_events`, consumer `webhooks-svc`),
//! inlined into the fan-out statement so that an event costs one round trip instead of four.

use super::WebhooksService;
use crate::domain::WebhookEvent;
use crate::domain::event::{COA_PUBLISHED, RESULTS_PUBLISHED, body_bytes, derived_event_id};
use crate::repo;
use crate::repo::events::FanOut;
use chrono::{DateTime, Utc};
use platform::consumer::HandlerError;
use proto::events::EventEnvelope;
use uuid::Uuid;

impl WebhooksService {
    /// Fans one envelope out; returns the number of deliveries queued. Types that are not
    /// webhook events are skipped; `results.published` envelopes are skipped because this
    /// service derives that event from `coa.published` itself.
    pub async fn fan_out(&self, envelope: &EventEnvelope) -> Result<i64, HandlerError> {
        if proto::event_data::read_scope(&envelope.r#type).is_none() || envelope.r#type == RESULTS_PUBLISHED {
            tracing::debug!(event.type = %envelope.r#type, "not a webhook source event; skipped");
            return Ok(0);
        }
        let events = webhook_events(envelope)?;
        let outcome = repo::events::fan_out_once(
            &self.pool,
            platform::streams::GROUP_WEBHOOKS,
            events[0].id,
            &events,
            self.delivery.lease,
        )
        .await?;
        let FanOut::Queued(claimed) = outcome else {
            return Ok(0);
        };
        let queued = claimed.len() as i64;
        self.dispatcher.hand_off(claimed).await;
        tracing::debug!(event.id = %envelope.id, event.type = %envelope.r#type, queued, "event fanned out");
        Ok(queued)
    }
}

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

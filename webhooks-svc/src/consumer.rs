//! The consumer side: every domain stream is read through the `webhooks-svc` consumer group and
//! each event is fanned out to the subscribed endpoints of its customer.

use crate::service::WebhooksService;
use platform::consumer::{Consumed, EventHandler, HandlerError};
use proto::events::EventEnvelope;

/// Fans stream events out to webhook deliveries.
pub struct FanOutHandler {
    service: WebhooksService,
}

impl FanOutHandler {
    pub fn new(service: WebhooksService) -> Self {
        Self { service }
    }
}

impl EventHandler for FanOutHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        let mut outcomes = self.service.fan_out(&[event]).await;
        outcomes.pop().unwrap_or(Ok(()))
    }

    /// A whole read in one transaction: one commit for the batch instead of one per event.
    ///
    /// Each stored event keeps the trace context of its `process` span, so that the delivery
    /// attempts made for it later are children of this service's processing of the event.
    async fn handle_batch(&self, batch: &[Consumed]) -> Vec<Result<(), HandlerError>> {
        // Without an exporter the envelopes already carry the context to pass on.
        let traced: Vec<EventEnvelope> = if platform::telemetry::exporting() {
            batch.iter().map(with_process_context).collect()
        } else {
            Vec::new()
        };
        let envelopes: Vec<&EventEnvelope> = if traced.is_empty() {
            batch.iter().map(|consumed| &consumed.envelope).collect()
        } else {
            traced.iter().collect()
        };
        let span = tracing::info_span!("webhooks.fan_out", otel.name = "fan out", events = batch.len());
        for consumed in batch {
            span.follows_from(&consumed.span);
        }
        tracing::Instrument::instrument(self.service.fan_out(&envelopes), span).await
    }
}

/// The envelope of `consumed` carrying the trace context of its `process` span instead of the
/// event's creation context.
fn with_process_context(consumed: &Consumed) -> EventEnvelope {
    let (traceparent, tracestate) = {
        let _entered = consumed.span.enter();
        platform::telemetry::current_trace_context()
    };
    let mut envelope = consumed.envelope.clone();
    if !traceparent.is_empty() {
        envelope.traceparent = traceparent;
        envelope.tracestate = tracestate;
    }
    envelope
}

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
    async fn handle_batch(&self, batch: &[Consumed]) -> Vec<Result<(), HandlerError>> {
        let envelopes: Vec<&EventEnvelope> = batch.iter().map(|consumed| &consumed.envelope).collect();
        let span = tracing::info_span!("webhooks.fan_out", events = batch.len());
        for consumed in batch {
            span.follows_from(&consumed.span);
        }
        tracing::Instrument::instrument(self.service.fan_out(&envelopes), span).await
    }
}

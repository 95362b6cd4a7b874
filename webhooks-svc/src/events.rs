//! The consumer side: every domain stream is read through the `webhooks-svc` consumer group and
//! each event is fanned out to the subscribed endpoints of its customer.

use crate::service::WebhooksService;
use platform::consumer::{EventHandler, HandlerError};
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
        self.service.fan_out(event).await.map(|_| ())
    }
}

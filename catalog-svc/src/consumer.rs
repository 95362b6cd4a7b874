//! The consumer of the orders stream (group `catalog-svc`): on `order.created` the quote is
//! recorded as consumed by that order, once (`CatalogService::record_quote_consumed`). This is
//! informational; orders-svc enforces one order per quote. Other event types are acknowledged
//! and ignored.

use crate::service::CatalogService;
use platform::consumer::{EventHandler, HandlerError, event_customer, event_uuid};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use std::sync::Arc;

/// Event type this consumer acts on.
pub const ORDER_CREATED: &str = "order.created";

/// Applies orders-domain events to the catalog.
pub struct OrderEvents {
    service: Arc<CatalogService>,
}

impl OrderEvents {
    pub fn new(service: Arc<CatalogService>) -> Self {
        Self { service }
    }
}

impl EventHandler for OrderEvents {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        if event.r#type != ORDER_CREATED {
            return Ok(());
        }
        let Some(Data::OrderCreated(created)) = &event.data else {
            return Err(HandlerError::permanent("order.created without its payload"));
        };
        let customer_id = event_customer(event)?;
        let quote_id = event_uuid(event, "quote id", &created.quote_id)?;
        let order_id = event_uuid(event, "order id", &created.order_id)?;
        let consumed_at = chrono::DateTime::parse_from_rfc3339(&created.created_at)
            .map(|time| time.to_utc())
            .unwrap_or_else(|_| platform::time::now());
        Ok(self
            .service
            .record_quote_consumed(&event.id, customer_id, quote_id, order_id, consumed_at)
            .await?)
    }
}

//! The consumer of the orders stream (group `catalog-svc`): on `order.created` the quote is
//! recorded as consumed by that order, once (`CatalogService::record_quote_consumed`). This is
//! informational; orders-svc enforces one order per quote. Other event types are acknowledged
//! and ignored.

use crate::service::CatalogService;
use platform::consumer::{EventHandler, HandlerError};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use std::sync::Arc;
use uuid::Uuid;

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

fn uuid(what: &str, value: &str) -> Result<Uuid, HandlerError> {
    Uuid::parse_str(value)
        .map_err(|_| HandlerError::Permanent(anyhow::anyhow!("{what} {value:?} is not a uuid")))
}

impl EventHandler for OrderEvents {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        if event.r#type != ORDER_CREATED {
            return Ok(());
        }
        let Some(Data::OrderCreated(created)) = &event.data else {
            return Err(HandlerError::Permanent(anyhow::anyhow!(
                "order.created without its payload"
            )));
        };
        let customer_id = uuid("customer id", &event.customer_id)?;
        let quote_id = uuid("quote id", &created.quote_id)?;
        let order_id = uuid("order id", &created.order_id)?;
        let consumed_at = chrono::DateTime::parse_from_rfc3339(&created.created_at)
            .map(|time| time.to_utc())
            .unwrap_or_else(|_| platform::time::now());
        self.service
            .record_quote_consumed(&event.id, customer_id, quote_id, order_id, consumed_at)
            .await
            .map_err(|error| HandlerError::Retry(error.into()))
    }
}

//! The consumer of the payments stream (group `orders-svc`): `payment.confirmed`,
//! `invoice.created` and `invoice.updated` become the `InvoiceNews` of the order they name and
//! are applied by the use case; other events of the stream are acknowledged without effect.

use crate::convert;
use crate::service::{EventTarget, OrdersService};
use platform::consumer::{EventHandler, HandlerError};
use proto::events::EventEnvelope;
use std::sync::Arc;
use uuid::Uuid;

/// Applies payments events to orders.
#[derive(Clone)]
pub struct PaymentEventsHandler {
    orders: Arc<OrdersService>,
}

impl PaymentEventsHandler {
    pub fn new(orders: Arc<OrdersService>) -> Self {
        Self { orders }
    }
}

impl EventHandler for PaymentEventsHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        let Some((order_id, news)) = event.data.as_ref().and_then(convert::invoice_news) else {
            return Ok(());
        };
        let (Ok(customer_id), Ok(order_id)) =
            (Uuid::parse_str(&event.customer_id), Uuid::parse_str(order_id))
        else {
            return Err(HandlerError::Permanent(anyhow::anyhow!(
                "event {} names no valid customer and order",
                event.id
            )));
        };
        let target = EventTarget {
            event_id: &event.id,
            customer_id,
            order_id,
        };
        self.orders
            .apply_invoice_news(target, &news)
            .await
            .map_err(|error| HandlerError::Retry(error.into()))
    }
}

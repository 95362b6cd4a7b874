//! Events: the payloads orders-svc emits (`order.created`, `order.status_changed`) and the
//! handler of the payments stream that its consumer group (`orders-svc`) runs.

use crate::domain::order::{Order, StatusChange};
use crate::service::Orders;
use platform::consumer::{EventHandler, HandlerError};
use platform::outbox::NewEvent;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::{OrderCreated, OrderEventLine, OrderStatusChanged};
use std::sync::Arc;
use uuid::Uuid;

/// Event type of a placed order.
pub const ORDER_CREATED: &str = "order.created";
/// Event type of a status transition.
pub const ORDER_STATUS_CHANGED: &str = "order.status_changed";

/// Builds `order.created` for a freshly placed order.
pub fn order_created(order: &Order) -> NewEvent {
    let data = OrderCreated {
        order_id: order.id.to_string(),
        order_number: order.order_number.clone(),
        status: order.status.as_str().to_owned(),
        payment_method: order.payment_method.as_str().to_owned(),
        quote_id: order.quote_id.to_string(),
        catalog_revision: order.catalog_revision.clone(),
        category_id: order.category_id.clone(),
        turnaround: order.turnaround.clone(),
        currency: order.currency.clone(),
        total_cents: order.total.0,
        client_reference: order.client_reference.clone(),
        lines: order
            .lines
            .iter()
            .map(|line| OrderEventLine {
                line_number: line.line_number,
                compound_name: line.compound_name.clone(),
                lot_number: line.lot_number.clone(),
                item_ids: line.items.iter().map(|item| item.item_id.clone()).collect(),
                amount_cents: line.subtotal.0,
            })
            .collect(),
        created_at: platform::time::rfc3339(order.created_at),
    };
    NewEvent {
        event_type: ORDER_CREATED,
        customer_id: order.customer_id,
        subject_id: order.id.to_string(),
        data: Data::OrderCreated(data),
    }
}

/// Builds `order.status_changed` for one transition of an order.
pub fn order_status_changed(
    customer_id: Uuid,
    order_id: Uuid,
    order_number: &str,
    change: &StatusChange,
) -> NewEvent {
    let data = OrderStatusChanged {
        order_id: order_id.to_string(),
        order_number: order_number.to_owned(),
        from_status: change
            .from
            .map(|status| status.as_str().to_owned())
            .unwrap_or_default(),
        to_status: change.to.as_str().to_owned(),
        changed_at: platform::time::rfc3339(change.changed_at),
        reason: change.reason.clone(),
    };
    NewEvent {
        event_type: ORDER_STATUS_CHANGED,
        customer_id,
        subject_id: order_id.to_string(),
        data: Data::OrderStatusChanged(data),
    }
}

/// Applies payments events to orders: `payment.confirmed`, `invoice.created`, `invoice.updated`.
/// Other events of the stream are acknowledged without effect.
#[derive(Clone)]
pub struct PaymentEventsHandler {
    orders: Arc<Orders>,
}

impl PaymentEventsHandler {
    pub fn new(orders: Arc<Orders>) -> Self {
        Self { orders }
    }
}

impl EventHandler for PaymentEventsHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        let Some(data) = &event.data else {
            return Ok(());
        };
        let relevant = matches!(
            data,
            Data::PaymentConfirmed(_) | Data::InvoiceCreated(_) | Data::InvoiceUpdated(_)
        );
        if !relevant {
            return Ok(());
        }
        let order_id = match data {
            Data::PaymentConfirmed(d) => &d.order_id,
            Data::InvoiceCreated(d) => &d.order_id,
            Data::InvoiceUpdated(d) => &d.order_id,
            _ => return Ok(()),
        };
        let (Ok(customer_id), Ok(order_id)) =
            (Uuid::parse_str(&event.customer_id), Uuid::parse_str(order_id))
        else {
            return Err(HandlerError::Permanent(anyhow::anyhow!(
                "event {} names no valid customer and order",
                event.id
            )));
        };
        let target = crate::service::EventTarget {
            event_id: &event.id,
            customer_id,
            order_id,
        };
        let applied = match data {
            Data::PaymentConfirmed(d) => self.orders.apply_payment_confirmed(target, d).await,
            Data::InvoiceCreated(d) => self.orders.apply_invoice_created(target, d).await,
            Data::InvoiceUpdated(d) => self.orders.apply_invoice_updated(target, d).await,
            _ => Ok(()),
        };
        applied.map_err(|error| HandlerError::Retry(error.into()))
    }
}

//! The events orders-svc emits through its outbox: `order.created` and `order.status_changed`.
//! (What it consumes is `crate::consumer`.)

use crate::domain::order::{Order, StatusChange};
use platform::outbox::NewEvent;
use proto::events::event_envelope::Data;
use proto::orders::{OrderCreated, OrderEventLine, OrderStatusChanged};
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

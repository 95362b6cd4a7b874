//! The events orders-svc emits through its outbox: `order.created`, `order.status_changed`,
//! `sample.received`, `testing.started`, `order.cancellation_requested`,
//! `order.cancellation_declined`, `order.cancelled`, `order.addon_requested` and
//! `order.addon_updated`.
//! (What it consumes is `crate::consumer`.)

use crate::domain::addon::Addon;
use crate::domain::cancellation::{CancelRequest, RequestStatus};
use crate::domain::order::{Order, StatusChange};
use crate::domain::sample::Sample;
use crate::domain::status::OrderStatus;
use chrono::{DateTime, Utc};
use platform::money::Cents;
use platform::outbox::NewEvent;
use proto::events::event_envelope::Data;
use proto::orders::{
    OrderCancellationRequest, OrderCancelled, OrderCreated, OrderEventLine, OrderStatusChanged,
    ReceivedSample, SampleReceived, TestingStarted,
};
use uuid::Uuid;

/// Event type of a placed order.
pub const ORDER_CREATED: &str = "order.created";
/// Event type of a status transition.
pub const ORDER_STATUS_CHANGED: &str = "order.status_changed";
/// Event type of samples received at the lab.
pub const SAMPLE_RECEIVED: &str = "sample.received";
/// Event type of an order entering the lab.
pub const TESTING_STARTED: &str = "testing.started";

/// Builds `order.created` for a freshly placed order.
pub fn order_created(order: &Order) -> NewEvent {
    let data = OrderCreated {
        order_id: order.id.to_string(),
        order_number: order.order_number.clone(),
        status: order.status as i32,
        legacy_status: order.status.as_str().to_owned(),
        payment_method: order.payment_method as i32,
        legacy_payment_method: order.payment_method.as_str().to_owned(),
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
        shipping_address_id: order.shipping_address_id.map(|id| id.to_string()),
        sandbox: order.sandbox,
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
        from_status: change.from.unwrap_or_default() as i32,
        legacy_from_status: change.from.unwrap_or_default().as_str().to_owned(),
        to_status: change.to as i32,
        legacy_to_status: change.to.as_str().to_owned(),
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

/// Builds `sample.received` for the samples of one shipment.
pub fn sample_received(
    customer_id: Uuid,
    order: (Uuid, &str),
    tracking_number: &str,
    received_by: &str,
    samples: &[Sample],
) -> NewEvent {
    let (order_id, order_number) = order;
    let received_at = samples
        .first()
        .map(|sample| platform::time::rfc3339(sample.received_at))
        .unwrap_or_default();
    let data = SampleReceived {
        order_id: order_id.to_string(),
        order_number: order_number.to_owned(),
        tracking_number: tracking_number.to_owned(),
        received_at,
        samples: samples
            .iter()
            .map(|sample| ReceivedSample {
                accession_number: sample.accession_number.clone(),
                line_number: sample.line_number,
                compound_name: sample.compound_name.clone(),
                lot_number: sample.lot_number.clone(),
                test_ids: sample.test_ids.clone(),
                test_names: sample.test_names.clone(),
                condition: sample.condition.clone(),
            })
            .collect(),
        received_by: received_by.to_owned(),
    };
    NewEvent {
        event_type: SAMPLE_RECEIVED,
        customer_id,
        subject_id: order_id.to_string(),
        data: Data::SampleReceived(data),
    }
}

/// Builds `testing.started` for an order entering the lab.
pub fn testing_started(customer_id: Uuid, order_id: Uuid, order_number: &str, at: DateTime<Utc>) -> NewEvent {
    NewEvent {
        event_type: TESTING_STARTED,
        customer_id,
        subject_id: order_id.to_string(),
        data: Data::TestingStarted(TestingStarted {
            order_id: order_id.to_string(),
            order_number: order_number.to_owned(),
            started_at: platform::time::rfc3339(at),
        }),
    }
}

/// Event type of a filed cancellation request.
pub const ORDER_CANCELLATION_REQUESTED: &str = "order.cancellation_requested";
/// Event type of a declined cancellation request.
pub const ORDER_CANCELLATION_DECLINED: &str = "order.cancellation_declined";
/// Event type of a cancelled order.
pub const ORDER_CANCELLED: &str = "order.cancelled";

/// Builds `order.cancellation_requested` (pending) or `order.cancellation_declined` for a
/// customer's request.
pub fn cancellation_request(customer_id: Uuid, request: &CancelRequest) -> NewEvent {
    let data = OrderCancellationRequest {
        order_id: request.order_id.to_string(),
        order_number: request.order_number.clone(),
        cancel_request_id: request.id.to_string(),
        status: request.status.as_str().to_owned(),
        reason: request.reason.clone(),
        requested_at: platform::time::rfc3339(request.requested_at),
        note: request.note.clone().unwrap_or_default(),
        decided_at: request
            .decided_at
            .map(platform::time::rfc3339)
            .unwrap_or_default(),
    };
    let (event_type, data) = match request.status {
        RequestStatus::Declined => (ORDER_CANCELLATION_DECLINED, Data::OrderCancellationDeclined(data)),
        _ => (
            ORDER_CANCELLATION_REQUESTED,
            Data::OrderCancellationRequested(data),
        ),
    };
    NewEvent {
        event_type,
        customer_id,
        subject_id: request.order_id.to_string(),
        data,
    }
}

/// Builds `order.cancelled` for an order cancelled from `from` by an approved request, with
/// the charge payments-svc keeps.
pub fn order_cancelled(
    customer_id: Uuid,
    from: OrderStatus,
    request: &CancelRequest,
    total: Cents,
    currency: &str,
) -> NewEvent {
    let data = OrderCancelled {
        order_id: request.order_id.to_string(),
        order_number: request.order_number.clone(),
        from_status: from as i32,
        legacy_from_status: from.as_str().to_owned(),
        cancelled_at: request
            .decided_at
            .map(platform::time::rfc3339)
            .unwrap_or_default(),
        reason: request.reason.clone(),
        cancel_request_id: request.id.to_string(),
        charge_cents: request.charge_cents.unwrap_or_default(),
        currency: currency.to_owned(),
        total_cents: total.0,
        note: request.note.clone().unwrap_or_default(),
    };
    NewEvent {
        event_type: ORDER_CANCELLED,
        customer_id,
        subject_id: request.order_id.to_string(),
        data: Data::OrderCancelled(data),
    }
}

/// Event type of an ordered add-on.
pub const ORDER_ADDON_REQUESTED: &str = "order.addon_requested";
/// Event type of an add-on that moved on (paid, in_testing, reported).
pub const ORDER_ADDON_UPDATED: &str = "order.addon_updated";

/// Builds `order.addon_requested` (a new add-on) or `order.addon_updated` (`updated`) for
/// `addon` as it stands, at `at`.
pub fn order_addon(customer_id: Uuid, addon: &Addon, updated: bool, at: DateTime<Utc>) -> NewEvent {
    let data = proto::orders::OrderAddon {
        addon_id: addon.id.to_string(),
        order_id: addon.order_id.to_string(),
        order_number: addon.order_number.clone(),
        line_number: addon.line_number,
        accession_number: addon.accession_number.clone(),
        test_ids: addon.test_ids(),
        test_names: addon.test_names(),
        status: addon.status.as_str().to_owned(),
        total_cents: addon.total.0,
        currency: addon.currency.clone(),
        invoice_id: addon
            .invoice
            .as_ref()
            .map(|invoice| invoice.invoice_id.clone())
            .unwrap_or_default(),
        invoice_number: addon
            .invoice
            .as_ref()
            .map(|invoice| invoice.invoice_number.clone())
            .unwrap_or_default(),
        occurred_at: platform::time::rfc3339(at),
    };
    let (event_type, data) = if updated {
        (ORDER_ADDON_UPDATED, Data::OrderAddonUpdated(data))
    } else {
        (ORDER_ADDON_REQUESTED, Data::OrderAddonRequested(data))
    };
    NewEvent {
        event_type,
        customer_id,
        subject_id: addon.id.to_string(),
        data,
    }
}

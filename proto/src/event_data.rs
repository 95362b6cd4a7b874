//! Renders the payload of an [`EventEnvelope`](crate::events::EventEnvelope) as the JSON `data`
//! object that webhook receivers get, with the spec's snake_case field names.

use crate::events::event_envelope::Data;
use crate::scopes;

/// Returns the `data` object of an event payload as JSON.
pub fn to_json(data: &Data) -> serde_json::Value {
    let rendered = match data {
        Data::OrderCreated(d) => serde_json::to_value(d),
        Data::OrderStatusChanged(d) => serde_json::to_value(d),
        Data::OrderCancelled(d) => serde_json::to_value(d),
        Data::SampleReceived(d) => serde_json::to_value(d),
        Data::TestingStarted(d) => serde_json::to_value(d),
        Data::InvoiceCreated(d) => serde_json::to_value(d),
        Data::InvoiceUpdated(d) => serde_json::to_value(d),
        Data::PaymentRequested(d) => serde_json::to_value(d),
        Data::PaymentObserved(d) => serde_json::to_value(d),
        Data::PaymentConfirming(d) => serde_json::to_value(d),
        Data::PaymentConfirmed(d) => serde_json::to_value(d),
        Data::PaymentReorged(d) => serde_json::to_value(d),
        Data::PaymentExpired(d) => serde_json::to_value(d),
        Data::ShipmentLabelCreated(d) => serde_json::to_value(d),
        Data::ShipmentUpdated(d) => serde_json::to_value(d),
        Data::CoaPublished(d) => serde_json::to_value(d),
        Data::CoaRetracted(d) => serde_json::to_value(d),
    };
    // Serializing plain structs of strings and integers into a Value cannot fail.
    rendered.unwrap_or(serde_json::Value::Null)
}

/// Every event type of the spec with the read scope a webhook subscription to it needs.
pub const EVENT_KINDS: [(&str, &str); 18] = [
    ("order.created", scopes::ORDERS_READ),
    ("order.status_changed", scopes::ORDERS_READ),
    ("order.cancelled", scopes::ORDERS_READ),
    ("invoice.created", scopes::INVOICES_READ),
    ("invoice.updated", scopes::INVOICES_READ),
    ("payment.requested", scopes::PAYMENTS_READ),
    ("payment.observed", scopes::PAYMENTS_READ),
    ("payment.confirming", scopes::PAYMENTS_READ),
    ("payment.confirmed", scopes::PAYMENTS_READ),
    ("payment.reorged", scopes::PAYMENTS_READ),
    ("payment.expired", scopes::PAYMENTS_READ),
    ("shipment.label_created", scopes::SHIPMENTS_READ),
    ("shipment.updated", scopes::SHIPMENTS_READ),
    ("sample.received", scopes::ORDERS_READ),
    ("testing.started", scopes::ORDERS_READ),
    ("results.published", scopes::RESULTS_READ),
    ("coa.published", scopes::RESULTS_READ),
    ("coa.retracted", scopes::RESULTS_READ),
];

/// Returns the read scope of an event type, or `None` for an unknown type.
pub fn read_scope(event_type: &str) -> Option<&'static str> {
    EVENT_KINDS
        .iter()
        .find(|(name, _)| *name == event_type)
        .map(|(_, scope)| *scope)
}

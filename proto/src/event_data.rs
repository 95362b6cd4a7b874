//! The event kinds of the contract and the webhook subscription rule, in one place: every event
//! type with the read scope a subscription to it needs ([`EVENT_KINDS`]), the default selection,
//! which scopes a subscription needs ([`subscription_scopes`]), and the JSON `data` object that
//! webhook receivers get for an event payload (the spec's snake_case field names).
//!
//! The gateway (before it calls webhooks-svc) and webhooks-svc (for any caller) apply the same
//! rule through these functions; `platform` turns [`UnknownEvent`] into the 400 envelope and the
//! missing scopes into the 403 envelope.

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
        Data::OrderCancellationRequested(d) | Data::OrderCancellationDeclined(d) => serde_json::to_value(d),
        Data::InvoiceCreated(d) => serde_json::to_value(d),
        Data::InvoiceUpdated(d) => serde_json::to_value(d),
        Data::PaymentRequested(d) => serde_json::to_value(d),
        Data::PaymentObserved(d) => serde_json::to_value(d),
        Data::PaymentConfirming(d) => serde_json::to_value(d),
        Data::PaymentConfirmed(d) => serde_json::to_value(d),
        Data::PaymentReorged(d) => serde_json::to_value(d),
        Data::PaymentExpired(d) => serde_json::to_value(d),
        Data::PickupPaymentUpdated(d) => serde_json::to_value(d),
        Data::PaymentRefunded(d) => serde_json::to_value(d),
        Data::ShipmentLabelCreated(d) => serde_json::to_value(d),
        Data::ShipmentUpdated(d) => serde_json::to_value(d),
        Data::ShipmentLabelVoided(d) => serde_json::to_value(d),
        Data::CoaPublished(d) => serde_json::to_value(d),
        Data::CoaRetracted(d) => serde_json::to_value(d),
        Data::TicketAnswered(d) => serde_json::to_value(d),
        Data::TicketClosed(d) => serde_json::to_value(d),
        Data::OrderAddonRequested(d) | Data::OrderAddonUpdated(d) => serde_json::to_value(d),
    };
    // Serializing plain structs of strings and integers into a Value cannot fail.
    rendered.unwrap_or(serde_json::Value::Null)
}

/// Every event type of the spec with the read scope a webhook subscription to it needs.
pub const EVENT_KINDS: [(&str, &str); 26] = [
    ("order.created", scopes::ORDERS_READ),
    ("order.status_changed", scopes::ORDERS_READ),
    ("order.cancelled", scopes::ORDERS_READ),
    ("order.cancellation_requested", scopes::ORDERS_READ),
    ("order.cancellation_declined", scopes::ORDERS_READ),
    ("order.addon_requested", scopes::ORDERS_READ),
    ("order.addon_updated", scopes::ORDERS_READ),
    ("invoice.created", scopes::INVOICES_READ),
    ("invoice.updated", scopes::INVOICES_READ),
    ("payment.requested", scopes::PAYMENTS_READ),
    ("payment.observed", scopes::PAYMENTS_READ),
    ("payment.confirming", scopes::PAYMENTS_READ),
    ("payment.confirmed", scopes::PAYMENTS_READ),
    ("payment.reorged", scopes::PAYMENTS_READ),
    ("payment.expired", scopes::PAYMENTS_READ),
    ("payment.refunded", scopes::PAYMENTS_READ),
    ("shipment.label_created", scopes::SHIPMENTS_READ),
    ("shipment.updated", scopes::SHIPMENTS_READ),
    ("shipment.label_voided", scopes::SHIPMENTS_READ),
    ("sample.received", scopes::ORDERS_READ),
    ("testing.started", scopes::ORDERS_READ),
    ("results.published", scopes::RESULTS_READ),
    ("coa.published", scopes::RESULTS_READ),
    ("coa.retracted", scopes::RESULTS_READ),
    ("support.ticket_answered", scopes::ORDERS_READ),
    ("support.ticket_closed", scopes::ORDERS_READ),
];

/// The event type a subscription selects when it names none (the spec's default).
pub const DEFAULT_SUBSCRIPTION: &str = "coa.published";

/// Returns the read scope of an event type, or `None` for an unknown type.
pub fn read_scope(event_type: &str) -> Option<&'static str> {
    EVENT_KINDS
        .iter()
        .find(|(name, _)| *name == event_type)
        .map(|(_, scope)| *scope)
}

/// The names of every event kind, in table order.
pub fn event_names() -> Vec<&'static str> {
    EVENT_KINDS.iter().map(|(name, _)| *name).collect()
}

/// A subscription names an event type outside [`EVENT_KINDS`], at `index` of its list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownEvent {
    pub index: usize,
    pub event: String,
}

/// The events a subscription selects: [`DEFAULT_SUBSCRIPTION`] when `requested` is empty,
/// otherwise `requested` without duplicates, in order. The first unknown type is refused.
pub fn select_events(requested: &[String]) -> Result<Vec<String>, UnknownEvent> {
    if requested.is_empty() {
        return Ok(vec![DEFAULT_SUBSCRIPTION.to_owned()]);
    }
    let mut selected: Vec<String> = Vec::with_capacity(requested.len());
    for (index, event) in requested.iter().enumerate() {
        if read_scope(event).is_none() {
            return Err(UnknownEvent {
                index,
                event: event.clone(),
            });
        }
        if !selected.contains(event) {
            selected.push(event.clone());
        }
    }
    Ok(selected)
}

/// The scopes a subscription to `events` needs: `webhooks:write` plus the read scope of every
/// event, deduplicated, in event order. The first unknown type is refused.
pub fn subscription_scopes(events: &[String]) -> Result<Vec<&'static str>, UnknownEvent> {
    let mut required = vec![scopes::WEBHOOKS_WRITE];
    for (index, event) in events.iter().enumerate() {
        let scope = read_scope(event).ok_or_else(|| UnknownEvent {
            index,
            event: event.clone(),
        })?;
        if !required.contains(&scope) {
            required.push(scope);
        }
    }
    Ok(required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(events: &[&str]) -> Vec<String> {
        events.iter().map(|event| (*event).to_owned()).collect()
    }

    #[test]
    fn no_selection_means_coa_published_and_duplicates_are_dropped() {
        assert_eq!(select_events(&[]).unwrap(), names(&["coa.published"]));
        assert_eq!(
            select_events(&names(&["order.created", "invoice.created", "order.created"])).unwrap(),
            names(&["order.created", "invoice.created"])
        );
    }

    #[test]
    fn an_unknown_event_is_refused_at_its_position() {
        for unknown in ["payment.succeeded", "webhook.test", "ORDER.CREATED", ""] {
            let refused = select_events(&names(&["order.created", unknown])).unwrap_err();
            assert_eq!(refused.index, 1);
            assert_eq!(refused.event, unknown);
            assert_eq!(
                subscription_scopes(&names(&["order.created", unknown])).unwrap_err(),
                refused
            );
        }
    }

    #[test]
    fn a_subscription_needs_webhooks_write_and_the_read_scope_of_every_event() {
        let events = names(&["order.created", "payment.confirmed", "order.status_changed"]);
        assert_eq!(
            subscription_scopes(&events).unwrap(),
            vec!["webhooks:write", "orders:read", "payments:read"]
        );
        assert_eq!(
            subscription_scopes(&names(&[DEFAULT_SUBSCRIPTION])).unwrap(),
            vec!["webhooks:write", "results:read"]
        );
        for (_, scope) in EVENT_KINDS {
            assert!(scopes::is_known(scope));
        }
    }
}

//! The events shipping-svc emits through its outbox: `shipment.label_created`,
//! `shipment.updated` and `shipment.label_voided`. (What it consumes is `crate::consumer`.)

use crate::domain::pickup::Pickup;
use crate::domain::void::VoidedLabel;
use crate::domain::{CarrierEvent, Shipment};
use platform::outbox::NewEvent;
use platform::time::rfc3339;
use proto::common::ShipmentStatus;
use proto::events::event_envelope::Data;
use proto::shipping::{ShipmentLabelCreated, ShipmentLabelVoided, ShipmentUpdated};

/// Event type of a bought label.
pub const LABEL_CREATED: &str = "shipment.label_created";
/// Event type of a carrier tracking event or a booked pickup.
pub const UPDATED: &str = "shipment.updated";
/// Event type of a label voided because its order was cancelled (our addition).
pub const LABEL_VOIDED: &str = "shipment.label_voided";

/// `shipment.label_created` for a freshly bought label, with the label itself (no signed URL)
/// and the shipment's status for orders-svc's read model (neither is in the webhook `data`).
pub fn label_created(shipment: &Shipment) -> NewEvent {
    NewEvent {
        event_type: LABEL_CREATED,
        customer_id: shipment.customer_id,
        subject_id: shipment.id.to_string(),
        data: Data::ShipmentLabelCreated(ShipmentLabelCreated {
            shipment_id: shipment.id.to_string(),
            order_id: shipment.order_id.to_string(),
            order_number: shipment.order_number.clone(),
            tracking_number: shipment.tracking_number.clone(),
            carrier_code: shipment.carrier_code.clone(),
            service_code: shipment.service_code.clone(),
            created_at: rfc3339(shipment.updated_at),
            label: Some(Box::new(crate::convert::unsigned_label(shipment))),
            status: shipment.status as i32,
            legacy_status: shipment.status.as_str().to_owned(),
        }),
    }
}

/// `shipment.updated` for a recorded carrier scan.
pub fn scanned(shipment: &Shipment, event: &CarrierEvent) -> NewEvent {
    NewEvent {
        event_type: UPDATED,
        customer_id: shipment.customer_id,
        subject_id: shipment.id.to_string(),
        data: Data::ShipmentUpdated(ShipmentUpdated {
            shipment_id: shipment.id.to_string(),
            order_id: shipment.order_id.to_string(),
            order_number: shipment.order_number.clone(),
            tracking_number: shipment.tracking_number.clone(),
            status_code: event.status_code.clone(),
            description: event.description.clone(),
            occurred_at: rfc3339(event.occurred_at),
            location: event.location.clone(),
            status: event.status as i32,
            legacy_status: event.status.as_str().to_owned(),
            pickup_confirmation_number: None,
        }),
    }
}

/// `shipment.updated` for a booked door pickup.
pub fn pickup_booked(shipment: &Shipment, pickup: &Pickup, confirmation_number: &str) -> NewEvent {
    NewEvent {
        event_type: UPDATED,
        customer_id: shipment.customer_id,
        subject_id: shipment.id.to_string(),
        data: Data::ShipmentUpdated(ShipmentUpdated {
            shipment_id: shipment.id.to_string(),
            order_id: shipment.order_id.to_string(),
            order_number: shipment.order_number.clone(),
            tracking_number: shipment.tracking_number.clone(),
            status_code: "PU".to_owned(),
            description: format!(
                "Door pickup booked for {} between {}",
                pickup.date.format("%Y-%m-%d"),
                pickup.window
            ),
            occurred_at: rfc3339(platform::time::now()),
            location: shipment.ship_from.lines().join(", "),
            status: ShipmentStatus::PickupBooked as i32,
            legacy_status: ShipmentStatus::PickupBooked.as_str().to_owned(),
            pickup_confirmation_number: Some(confirmation_number.to_owned()),
        }),
    }
}

/// `shipment.label_voided` for a label voided because its order was cancelled.
pub fn label_voided(shipment: &Shipment, voided: &VoidedLabel) -> NewEvent {
    NewEvent {
        event_type: LABEL_VOIDED,
        customer_id: shipment.customer_id,
        subject_id: shipment.id.to_string(),
        data: Data::ShipmentLabelVoided(ShipmentLabelVoided {
            shipment_id: shipment.id.to_string(),
            order_id: shipment.order_id.to_string(),
            order_number: shipment.order_number.clone(),
            tracking_number: shipment.tracking_number.clone(),
            voided_at: rfc3339(voided.voided_at),
            refund_status: voided.refund_status.as_str().to_owned(),
        }),
    }
}

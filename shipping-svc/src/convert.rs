//! Domain types to proto and back, at the gRPC edge.

use crate::domain::packing::PackingStep;
use crate::domain::pickup::Pickup;
use crate::domain::{Address, CarrierEvent, Normalize, Scan, Shipment, ShipmentStatus, TrackedShipment};
use crate::service::read::LabelView;
use platform::error::{ApiError, ErrorCode};
use platform::time::{to_timestamp, to_timestamp_opt};
use proto::enums::or_legacy;
use proto::shipping as pb;

pub fn address(address: &Address) -> pb::Address {
    pb::Address {
        name: address.name.clone(),
        company: address.company.clone(),
        street1: address.street1.clone(),
        street2: address.street2.clone(),
        city: address.city.clone(),
        state: address.state.clone(),
        postal_code: address.postal_code.clone(),
        country: address.country.clone(),
        phone: address.phone.clone(),
        email: address.email.clone(),
    }
}

fn carrier_event(event: &CarrierEvent) -> pb::CarrierEvent {
    pb::CarrierEvent {
        status: event.status as i32,
        legacy_status: event.status.as_str().to_owned(),
        status_code: event.status_code.clone(),
        description: event.description.clone(),
        occurred_at: Some(to_timestamp(event.occurred_at)),
        location: event.location.clone(),
    }
}

pub fn pickup(pickup: &Pickup) -> pb::Pickup {
    pb::Pickup {
        id: pickup.id.to_string(),
        status: pickup.status.as_str().to_owned(),
        date: pickup.date.format("%Y-%m-%d").to_string(),
        window: pickup.window.clone(),
        price_cents: pickup.price_cents,
        pay_url: pickup.pay_url.clone(),
        confirmation_number: pickup.confirmation_number.clone(),
        created_at: Some(to_timestamp(pickup.created_at)),
        booked_at: to_timestamp_opt(pickup.booked_at),
        pay_expires_at: to_timestamp_opt(pickup.pay_expires_at),
    }
}

pub fn shipment(tracked: &TrackedShipment) -> pb::Shipment {
    let shipment = &tracked.shipment;
    pb::Shipment {
        id: shipment.id.to_string(),
        customer_id: shipment.customer_id.to_string(),
        order_id: shipment.order_id.to_string(),
        order_number: shipment.order_number.clone(),
        carrier_code: shipment.carrier_code.clone(),
        service_code: shipment.service_code.clone(),
        tracking_number: shipment.tracking_number.clone(),
        tracking_url: shipment.tracking_url.clone(),
        status: shipment.status as i32,
        legacy_status: shipment.status.as_str().to_owned(),
        ship_from: Some(address(&shipment.ship_from)),
        ship_to: Some(address(&shipment.ship_to)),
        events: tracked.events.iter().map(carrier_event).collect(),
        pickup: tracked.pickup.as_ref().map(pickup),
        created_at: Some(to_timestamp(shipment.created_at)),
        updated_at: Some(to_timestamp(shipment.updated_at)),
        voided: shipment.voided.map(|voided| pb::LabelVoid {
            voided_at: Some(to_timestamp(voided.voided_at)),
            refund_status: voided.refund_status.as_str().to_owned(),
        }),
    }
}

fn packing_step(step: &PackingStep) -> pb::PackingStep {
    pb::PackingStep {
        step: step.step,
        line_number: step.line_number,
        sample_reference: step.sample_reference.clone(),
        compound_name: step.compound_name.clone(),
        container: step.container.clone(),
        quantity: step.quantity.clone(),
        temperature: step.temperature.clone(),
        instruction: step.instruction.clone(),
        test_ids: step.test_ids.clone(),
    }
}

pub fn label(view: &LabelView) -> pb::Label {
    pb::Label {
        label_url: view.url.clone(),
        label_url_expires_at: Some(to_timestamp(view.expires_at)),
        ..unsigned_label(&view.shipment)
    }
}

/// The label without its signed URL (what `shipment.label_created` carries for orders-svc).
pub fn unsigned_label(shipment: &Shipment) -> pb::Label {
    pb::Label {
        shipment_id: shipment.id.to_string(),
        tracking_number: shipment.tracking_number.clone(),
        tracking_url: shipment.tracking_url.clone(),
        carrier_code: shipment.carrier_code.clone(),
        service_code: shipment.service_code.clone(),
        label_url: String::new(),
        label_url_expires_at: None,
        ship_to: Some(address(&shipment.ship_to)),
        ship_from: Some(address(&shipment.ship_from)),
        packing_steps: shipment.packing_steps.iter().map(packing_step).collect(),
    }
}

/// A staff scan from its request.
pub fn scan(request: pb::RecordScanRequest) -> Result<Scan, ApiError> {
    let sent: ShipmentStatus = or_legacy(request.status, request.legacy_status.trim());
    let status = ShipmentStatus::parse_field(sent.as_str(), "status")?;
    let occurred_at = match request.occurred_at.as_deref() {
        Some(text) => chrono::DateTime::parse_from_rfc3339(text.trim())
            .map_err(|_| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "occurredAt",
                    "occurredAt must be RFC 3339",
                )
            })?
            .to_utc(),
        None => platform::time::now(),
    };
    let tracking_number = request.tracking_number.trim().to_owned();
    if tracking_number.is_empty() {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "trackingNumber",
            "a tracking number is required",
        ));
    }
    Ok(Scan {
        tracking_number,
        status,
        status_code: request.status_code.unwrap_or_else(|| status.as_str().to_owned()),
        description: request.description.unwrap_or_default(),
        location: request.location.unwrap_or_default(),
        occurred_at,
        carrier_event_id: request.carrier_event_id.unwrap_or_default(),
    })
}

/// The order of a PrepareLabel call (orders-svc, acting for `customer_id`). Only ship-first
/// rails are accepted: a stablecoin order gets its label once paid.
pub fn label_order(
    customer_id: uuid::Uuid,
    request: pb::PrepareLabelRequest,
) -> Result<crate::domain::LabelOrder, ApiError> {
    let uuid = |field: &str, text: &str| {
        uuid::Uuid::parse_str(text).map_err(|_| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                field,
                format!("{field} must be a UUID"),
            )
        })
    };
    let payment_method = proto::common::PaymentMethod::try_from(request.payment_method)
        .unwrap_or(proto::common::PaymentMethod::Unspecified);
    if !crate::domain::SHIP_FIRST_RAILS.contains(&payment_method) {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "paymentMethod",
            "only card and bank orders get their label when placed",
        ));
    }
    Ok(crate::domain::LabelOrder {
        customer_id,
        order_id: uuid("orderId", &request.order_id)?,
        order_number: request.order_number,
        payment_method,
        quote_id: uuid("quoteId", &request.quote_id)?,
        shipping_address_id: request.shipping_address_id,
        sandbox: request.sandbox,
    })
}

//! `labctl shipments`: carrier scans (staff and the sandbox carrier's scripts) and the booking of
//! paid door pickups, over shipping-svc's internal API.

use crate::client::{request, staff_token, status_error, timestamp};
use crate::{Connection, ShipmentsCommand};
use anyhow::Context;
use platform::mesh;
use platform::principal::roles;
use proto::common::ShipmentStatus;
use proto::enums::shown;
use proto::shipping::shipping_service_client::ShippingServiceClient;
use serde_json::{Value, json};

/// Runs one shipments command with a token carrying the role it needs.
pub async fn execute(connection: &Connection, command: ShipmentsCommand) -> anyhow::Result<Value> {
    let role = match command {
        ShipmentsCommand::PickupPaid { .. } => roles::PAYMENTS_ADMIN,
        _ => roles::SHIPPING_ADMIN,
    };
    let token = staff_token(connection, mesh::SHIPPING_SVC, role).await?;
    let mut client = connection
        .channel(&connection.shipping_addr)
        .await
        .map(ShippingServiceClient::new)
        .with_context(|| format!("cannot reach shipping-svc at {}", connection.shipping_addr))?;
    match command {
        ShipmentsCommand::Scan {
            tracking_number,
            status,
            status_code,
            description,
            location,
            occurred_at,
            event_id,
        } => {
            // An unknown name goes as text only: shipping-svc answers it with the allowed values.
            let known = proto::common::ShipmentStatus::parse(status.trim());
            let message = proto::shipping::RecordScanRequest {
                tracking_number,
                status: known.map_or(0, |known| known as i32),
                legacy_status: status,
                status_code,
                description,
                location,
                occurred_at,
                carrier_event_id: event_id,
            };
            let response = client
                .record_scan(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(
                json!({ "recorded": response.recorded, "shipment": shipment(response.shipment.unwrap_or_default()) }),
            )
        }
        ShipmentsCommand::Simulate {
            tracking_number,
            script,
        } => {
            let message = proto::shipping::SimulateScansRequest {
                tracking_number,
                script,
            };
            let response = client
                .simulate_scans(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(
                json!({ "recorded": response.recorded, "shipment": shipment(response.shipment.unwrap_or_default()) }),
            )
        }
        ShipmentsCommand::PickupPaid {
            pickup_id,
            payment_reference,
        } => {
            let message = proto::shipping::ConfirmPickupPaymentRequest {
                pickup_id,
                payment_reference,
            };
            let pickup = client
                .confirm_pickup_payment(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner()
                .pickup
                .unwrap_or_default();
            Ok(json!({
                "id": pickup.id, "status": pickup.status, "date": pickup.date, "window": pickup.window,
                "priceCents": pickup.price_cents, "confirmationNumber": pickup.confirmation_number,
                "bookedAt": timestamp(pickup.booked_at.as_ref()),
            }))
        }
    }
}

fn shipment(shipment: proto::shipping::Shipment) -> Value {
    json!({
        "id": shipment.id, "orderId": shipment.order_id, "orderNumber": shipment.order_number,
        "trackingNumber": shipment.tracking_number, "status": shown::<ShipmentStatus>(shipment.status, shipment.legacy_status),
        "events": shipment.events.iter().map(|event| json!({
            "status": shown::<ShipmentStatus>(event.status, event.legacy_status.clone()), "statusCode": event.status_code, "description": event.description,
            "occurredAt": timestamp(event.occurred_at.as_ref()), "location": event.location,
        })).collect::<Vec<_>>(),
    })
}

//! Shipping shapes: shipments with their carrier events, the label (signed PDF URL, tracking,
//! ship-to, packing steps; also the order's `shipping` block), door-pickup options and requests.

use super::common::{list_envelope, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::common::ShipmentStatus;
use proto::enums::shown;
use proto::shipping as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A postal address.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Address {
    pub name: String,
    pub company: String,
    pub street1: String,
    pub street2: String,
    pub city: String,
    pub state: String,
    pub postal_code: String,
    pub country: String,
    pub phone: String,
    pub email: String,
}

impl From<pb::Address> for Address {
    fn from(address: pb::Address) -> Self {
        Self {
            name: address.name,
            company: address.company,
            street1: address.street1,
            street2: address.street2,
            city: address.city,
            state: address.state,
            postal_code: address.postal_code,
            country: address.country,
            phone: address.phone,
            email: address.email,
        }
    }
}

fn address(address: Option<pb::Address>) -> Address {
    Address::from(address.unwrap_or_default())
}

/// One carrier tracking event, oldest first.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CarrierEvent {
    /// Normalized status: `pre_transit`, `in_transit`, `out_for_delivery`, `delivered`,
    /// `exception`, `returned` or `lost`.
    pub status: String,
    /// The carrier's own status code.
    pub status_code: String,
    pub description: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub occurred_at: Option<DateTime<Utc>>,
    pub location: String,
}

/// One packing step: what goes into which container for one sample line (`lineNumber` 0: the
/// whole parcel).
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PackingStep {
    pub step: i32,
    pub line_number: i32,
    /// Reference to write on the container (`<orderNumber>-L<line>`).
    pub sample_reference: String,
    pub compound_name: String,
    pub container: String,
    pub quantity: String,
    /// `ambient`, `cool` or `frozen`.
    pub temperature: String,
    pub instruction: String,
    pub test_ids: Vec<String>,
}

/// A door pickup.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Pickup {
    pub id: String,
    /// `awaiting_payment` (pay at `payUrl`), `booked`, `payment_expired` (the link expired
    /// unpaid; a new pickup may be requested), or `cancelled` (the order was cancelled and its
    /// label voided).
    pub status: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Window id, e.g. `09:00-12:00` (UTC).
    pub window: String,
    pub price_cents: i64,
    /// Single-use, amount-locked hosted payment of the pickup (the site's checkout page).
    pub pay_url: String,
    /// When `payUrl` stops taking payments (the checkout lifetime, at the latest the window's end).
    #[serde(serialize_with = "rfc3339_opt")]
    pub pay_expires_at: Option<DateTime<Utc>>,
    /// The carrier's confirmation number once booked.
    pub confirmation_number: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub booked_at: Option<DateTime<Utc>>,
}

impl From<pb::Pickup> for Pickup {
    fn from(pickup: pb::Pickup) -> Self {
        Self {
            created_at: optional_time(pickup.created_at.as_ref()),
            booked_at: optional_time(pickup.booked_at.as_ref()),
            pay_expires_at: optional_time(pickup.pay_expires_at.as_ref()),
            id: pickup.id,
            status: pickup.status,
            date: pickup.date,
            window: pickup.window,
            price_cents: pickup.price_cents,
            pay_url: pickup.pay_url,
            confirmation_number: pickup.confirmation_number,
        }
    }
}

/// A shipment: the prepaid inbound label of one order and its tracking.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Shipment {
    pub id: String,
    pub order_id: String,
    pub order_number: String,
    /// Carrier code, e.g. `ups`.
    pub carrier_code: String,
    /// Service code, e.g. `ups_ground`.
    pub service_code: String,
    pub tracking_number: String,
    pub tracking_url: String,
    /// Normalized status of the latest scan (see `CarrierEvent.status`).
    pub status: String,
    pub ship_from: Address,
    pub ship_to: Address,
    /// Carrier event history, oldest first.
    pub events: Vec<CarrierEvent>,
    pub pickup: Option<Pickup>,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
    /// Set once the order was cancelled before the carrier had the parcel: the label was
    /// voided and can no longer be downloaded or used (our addition; docs/shipping.md).
    pub voided: Option<LabelVoid>,
}

/// A label voided with its cancelled order.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct LabelVoid {
    #[serde(serialize_with = "rfc3339_opt")]
    pub voided_at: Option<DateTime<Utc>>,
    /// What the carrier answered about the postage: `submitted` (pending with the carrier),
    /// `refunded` or `rejected` (the label is withdrawn all the same).
    #[schema(example = "refunded")]
    pub refund_status: String,
}

single_envelope!(ShipmentEnvelope, ShipmentData, shipment: Shipment);
list_envelope!(ShipmentList, Shipment);

impl TryFrom<pb::Shipment> for Shipment {
    type Error = ApiError;

    fn try_from(shipment: pb::Shipment) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(shipment.created_at.as_ref(), "shipment createdAt")?,
            updated_at: required_time(shipment.updated_at.as_ref(), "shipment updatedAt")?,
            id: shipment.id,
            order_id: shipment.order_id,
            order_number: shipment.order_number,
            carrier_code: shipment.carrier_code,
            service_code: shipment.service_code,
            tracking_number: shipment.tracking_number,
            tracking_url: shipment.tracking_url,
            status: shown::<ShipmentStatus>(shipment.status, shipment.legacy_status),
            ship_from: address(shipment.ship_from),
            ship_to: address(shipment.ship_to),
            events: shipment
                .events
                .into_iter()
                .map(|event| CarrierEvent {
                    occurred_at: optional_time(event.occurred_at.as_ref()),
                    status: shown::<ShipmentStatus>(event.status, event.legacy_status),
                    status_code: event.status_code,
                    description: event.description,
                    location: event.location,
                })
                .collect(),
            pickup: shipment.pickup.map(Pickup::from),
            voided: shipment.voided.map(|voided| LabelVoid {
                voided_at: optional_time(voided.voided_at.as_ref()),
                refund_status: voided.refund_status,
            }),
        })
    }
}

/// The prepaid inbound label: signed PDF URL, tracking, ship-to (the lab) and packing steps.
/// Also the order's `shipping` block.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Label {
    pub shipment_id: String,
    /// Normalized shipment status (see `CarrierEvent.status`); in the order's `shipping` block,
    /// `label_voided` once the order was cancelled and its label voided with the carrier.
    pub status: String,
    pub tracking_number: String,
    pub tracking_url: String,
    pub carrier_code: String,
    pub service_code: String,
    /// Signed URL of the 4×6 in label PDF; do not store it, read the label again for a fresh one.
    pub label_url: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub label_url_expires_at: Option<DateTime<Utc>>,
    /// The lab's receiving address (also printed on the label).
    pub ship_to: Address,
    pub ship_from: Address,
    pub packing_steps: Vec<PackingStep>,
}

single_envelope!(LabelEnvelope, LabelData, label: Label);

impl Label {
    pub fn from_proto(label: pb::Label, status: String) -> Self {
        Self {
            label_url_expires_at: optional_time(label.label_url_expires_at.as_ref()),
            shipment_id: label.shipment_id,
            status,
            tracking_number: label.tracking_number,
            tracking_url: label.tracking_url,
            carrier_code: label.carrier_code,
            service_code: label.service_code,
            label_url: label.label_url,
            ship_to: address(label.ship_to),
            ship_from: address(label.ship_from),
            packing_steps: label
                .packing_steps
                .into_iter()
                .map(|step| PackingStep {
                    step: step.step,
                    line_number: step.line_number,
                    sample_reference: step.sample_reference,
                    compound_name: step.compound_name,
                    container: step.container,
                    quantity: step.quantity,
                    temperature: step.temperature,
                    instruction: step.instruction,
                    test_ids: step.test_ids,
                })
                .collect(),
        }
    }
}

/// Query of `GET /shipments`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct ShipmentsQuery {
    /// Only shipments in this normalized status.
    pub status: Option<String>,
    /// Only the shipment of this order (UUID).
    pub order_id: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

/// A pickup window.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PickupWindow {
    /// Pass this as `window`.
    pub id: String,
    pub start: String,
    pub end: String,
}

/// Door-pickup options of a paid order.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PickupOptions {
    pub order_id: String,
    pub shipment_id: String,
    /// Pickup dates (`YYYY-MM-DD`): business days, no configured holidays, today only before
    /// the cut-off time.
    pub dates: Vec<String>,
    pub windows: Vec<PickupWindow>,
    pub price_cents: i64,
    pub currency: String,
    /// Signed token binding the order, these dates and windows and the price; pass it back.
    pub quote_token: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub expires_at: Option<DateTime<Utc>>,
}

single_envelope!(PickupOptionsEnvelope, PickupOptionsData, pickup_options: PickupOptions);

impl From<pb::GetPickupOptionsResponse> for PickupOptions {
    fn from(options: pb::GetPickupOptionsResponse) -> Self {
        Self {
            expires_at: optional_time(options.expires_at.as_ref()),
            order_id: options.order_id,
            shipment_id: options.shipment_id,
            dates: options.dates,
            windows: options
                .windows
                .into_iter()
                .map(|window| PickupWindow {
                    id: window.id,
                    start: window.start,
                    end: window.end,
                })
                .collect(),
            price_cents: options.price_cents,
            currency: options.currency,
            quote_token: options.quote_token,
        }
    }
}

/// Body of `POST /orders/{reference}/pickup`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PickupRequest {
    /// One of the offered dates (`YYYY-MM-DD`).
    pub date: String,
    /// One of the offered window ids.
    pub window: String,
    /// The `quoteToken` of the options.
    pub quote_token: String,
    /// Must be `true`.
    pub confirm: bool,
}

/// A requested pickup with the order and shipment it belongs to.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RequestedPickup {
    pub order_id: String,
    pub shipment_id: String,
    #[serde(flatten)]
    pub pickup: Pickup,
}

single_envelope!(PickupEnvelope, PickupData, pickup: RequestedPickup);

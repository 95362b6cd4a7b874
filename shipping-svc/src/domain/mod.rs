//! Domain types of shipping-svc: shipments and their carrier events, addresses, the normalized
//! status, tracking numbers, packing steps, door pickups and voided labels. No SQL and no gRPC here.

pub mod packing;
pub mod pickup;
pub mod status;
pub mod tracking;
pub mod void;

use chrono::{DateTime, Utc};
use packing::PackingStep;
use proto::common::PaymentMethod;
use serde::{Deserialize, Serialize};
pub use status::{Normalize, ShipmentStatus};
use uuid::Uuid;

/// A postal address (ship-from or ship-to).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
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

impl Address {
    /// The printable lines of the address, empty parts left out.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for part in [&self.name, &self.company, &self.street1, &self.street2] {
            if !part.trim().is_empty() {
                lines.push(part.trim().to_owned());
            }
        }
        let city = [self.city.trim(), self.state.trim(), self.postal_code.trim()]
            .iter()
            .filter(|part| !part.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        if !city.is_empty() {
            lines.push(city);
        }
        if !self.country.trim().is_empty() {
            lines.push(self.country.trim().to_owned());
        }
        lines
    }
}

/// Rails whose orders are ship-first: the label is bought when the order is placed (SPEC,
/// "Shipping rules"); stablecoin orders get theirs once the payment settles.
pub const SHIP_FIRST_RAILS: [PaymentMethod; 2] = [PaymentMethod::BankInvoice, PaymentMethod::CardCheckout];

/// An order the label is bought for (what the order events tell shipping-svc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelOrder {
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub payment_method: PaymentMethod,
    pub quote_id: Uuid,
    pub shipping_address_id: Option<String>,
    /// A sandbox customer's order (docs/sandbox.md): the sandbox carrier serves it.
    pub sandbox: bool,
}

/// A shipment: one prepaid inbound label of one order and its tracking.
#[derive(Clone, Debug, PartialEq)]
pub struct Shipment {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub payment_method: PaymentMethod,
    pub carrier_code: String,
    pub service_code: String,
    pub tracking_number: String,
    pub tracking_url: String,
    pub status: ShipmentStatus,
    pub ship_from: Address,
    pub ship_to: Address,
    pub packing_steps: Vec<PackingStep>,
    /// The carrier's own id of the shipment (EasyPost `shp_…`); empty for the sandbox.
    pub carrier_shipment_id: String,
    /// When the latest applied scan occurred.
    pub last_event_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Set once the order was cancelled before the carrier accepted the parcel: the label can
    /// no longer be downloaded, emailed or picked up.
    pub voided: Option<void::VoidedLabel>,
    /// A sandbox customer's order (docs/sandbox.md): its label, void and pickup go to the
    /// built-in sandbox carrier whatever carrier the deployment runs.
    pub sandbox: bool,
}

/// One carrier scan of a shipment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarrierEvent {
    pub id: Uuid,
    pub shipment_id: Uuid,
    pub status: ShipmentStatus,
    pub status_code: String,
    pub description: String,
    pub occurred_at: DateTime<Utc>,
    pub location: String,
    /// The carrier's id of the scan (deduplication key).
    pub carrier_event_id: String,
}

/// A scan as reported by staff, the sandbox script or a carrier webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scan {
    pub tracking_number: String,
    pub status: ShipmentStatus,
    pub status_code: String,
    pub description: String,
    pub location: String,
    pub occurred_at: DateTime<Utc>,
    /// Deduplication key; when the reporter has none, status and time make one.
    pub carrier_event_id: String,
}

impl Scan {
    /// The deduplication key of a scan without a carrier id: its status and time.
    pub fn derived_event_id(status: ShipmentStatus, occurred_at: DateTime<Utc>) -> String {
        format!("{}@{}", status.as_str(), occurred_at.timestamp_micros())
    }
}

/// A shipment with its carrier events, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackedShipment {
    pub shipment: Shipment,
    pub events: Vec<CarrierEvent>,
    pub pickup: Option<pickup::Pickup>,
}

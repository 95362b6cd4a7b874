//! The built-in sandbox carrier: UPS-style `1Z…` tracking numbers with a valid check digit,
//! labels bought instantly, pickups confirmed instantly, labels voided (and refunded) and pickups
//! cancelled instantly, and scripted scan sequences that staff
//! play with `labctl shipments simulate` (normal delivery and the exceptions: delayed, returned
//! to sender, lost).

use super::{Carrier, CarrierError, LabelPurchase, PickupBooking, PurchasedLabel};
use crate::domain::ShipmentStatus;
use crate::domain::tracking::{self, GROUND_SERVICE_CODE, SANDBOX_SHIPPER};
use crate::domain::void::RefundStatus;

/// Carrier code of the sandbox (it mimics UPS).
pub const CARRIER_CODE: &str = "ups";
/// Service code of UPS Ground.
pub const SERVICE_CODE: &str = "ups_ground";

/// The sandbox carrier.
#[derive(Clone, Debug, Default)]
pub struct SandboxCarrier;

impl Carrier for SandboxCarrier {
    /// The sandbox bills nothing and has no shipment to record.
    async fn create_shipment(&self, _purchase: &LabelPurchase) -> Result<String, CarrierError> {
        Ok(String::new())
    }

    async fn buy_label(
        &self,
        purchase: &LabelPurchase,
        _carrier_shipment_id: &str,
    ) -> Result<PurchasedLabel, CarrierError> {
        let package = u32::try_from(purchase.sequence.rem_euclid(10_000_000)).unwrap_or(0);
        let number = tracking::tracking_number(SANDBOX_SHIPPER, GROUND_SERVICE_CODE, package);
        Ok(PurchasedLabel {
            carrier_code: CARRIER_CODE.to_owned(),
            carrier_name: "UPS".to_owned(),
            service_code: SERVICE_CODE.to_owned(),
            service_name: "Ground".to_owned(),
            tracking_url: tracking::ups_tracking_url(&number),
            tracking_number: number,
            carrier_shipment_id: String::new(),
        })
    }

    async fn create_pickup(&self, _booking: &PickupBooking) -> Result<String, CarrierError> {
        Ok(String::new())
    }

    async fn buy_pickup(
        &self,
        booking: &PickupBooking,
        _carrier_pickup_id: &str,
    ) -> Result<String, CarrierError> {
        // A UPS-style pickup request number: 2 letters and 8 digits from the pickup id (the
        // same on every attempt, so a retried booking answers the same confirmation).
        let digits: String = booking
            .pickup_id
            .as_u128()
            .to_string()
            .chars()
            .rev()
            .take(8)
            .collect();
        Ok(format!("PU{digits}"))
    }

    /// The sandbox refunds every void at once (the same answer on every attempt).
    async fn void_label(
        &self,
        _carrier_shipment_id: &str,
        _tracking_number: &str,
    ) -> Result<RefundStatus, CarrierError> {
        Ok(RefundStatus::Refunded)
    }

    async fn cancel_pickup(&self, _carrier_pickup_id: &str) -> Result<(), CarrierError> {
        Ok(())
    }
}

/// One scripted scan: status, UPS activity code, description, location.
pub type ScriptedScan = (ShipmentStatus, &'static str, &'static str, &'static str);

const ORIGIN: ScriptedScan = (ShipmentStatus::InTransit, "OR", "Origin Scan", "Chicago, IL, US");
const DEPARTED: ScriptedScan = (
    ShipmentStatus::InTransit,
    "DP",
    "Departed from Facility",
    "Chicago, IL, US",
);
const ARRIVED: ScriptedScan = (
    ShipmentStatus::InTransit,
    "AR",
    "Arrived at Facility",
    "Madison, WI, US",
);
const OUT_FOR_DELIVERY: ScriptedScan = (
    ShipmentStatus::OutForDelivery,
    "OT",
    "Out For Delivery Today",
    "Madison, WI, US",
);
const DELIVERED: ScriptedScan = (ShipmentStatus::Delivered, "KB", "Delivered", "Madison, WI, US");

/// The scan sequence of a script: `delivered`, `delayed`, `returned` or `lost`.
pub fn script(name: &str) -> Option<Vec<ScriptedScan>> {
    Some(match name {
        "delivered" => vec![ORIGIN, DEPARTED, ARRIVED, OUT_FOR_DELIVERY, DELIVERED],
        "delayed" => vec![
            ORIGIN,
            (
                ShipmentStatus::Exception,
                "X",
                "Severe weather conditions have delayed delivery",
                "Chicago, IL, US",
            ),
            DEPARTED,
            ARRIVED,
            OUT_FOR_DELIVERY,
            DELIVERED,
        ],
        "returned" => vec![
            ORIGIN,
            (
                ShipmentStatus::Exception,
                "X",
                "The address is incomplete; the package is held",
                "Madison, WI, US",
            ),
            (
                ShipmentStatus::Returned,
                "RS",
                "Returned to Sender",
                "Chicago, IL, US",
            ),
        ],
        "lost" => vec![
            ORIGIN,
            DEPARTED,
            (
                ShipmentStatus::Lost,
                "LP",
                "The package was declared lost",
                "Rockford, IL, US",
            ),
        ],
        _ => return None,
    })
}

/// The names of the scripts.
pub const SCRIPTS: [&str; 4] = ["delivered", "delayed", "returned", "lost"];

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sandbox_labels_carry_valid_ups_tracking_numbers() {
        let purchase = LabelPurchase {
            shipment_id: uuid::Uuid::now_v7(),
            order_number: "ORD-1".to_owned(),
            sequence: 42,
            ship_from: Default::default(),
            ship_to: Default::default(),
        };
        let label = SandboxCarrier.buy_label(&purchase, "").await.unwrap();
        assert!(
            tracking::is_valid(&label.tracking_number),
            "{}",
            label.tracking_number
        );
        assert!(label.tracking_number.starts_with("1ZLAB00103"));
    }

    #[test]
    fn every_script_starts_with_the_acceptance_scan_and_ends_terminal() {
        for name in SCRIPTS {
            let scans = script(name).unwrap();
            assert_eq!(scans[0].0, ShipmentStatus::InTransit);
            assert!(scans.last().unwrap().0.is_terminal(), "{name}");
        }
        assert!(script("teleported").is_none());
    }
}

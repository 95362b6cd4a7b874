//! The normalized shipment status every carrier's scans map to, and the rule that keeps a
//! shipment (and its order) from moving backwards.
//!
//! | status | meaning | rank |
//! |---|---|---|
//! | pre_transit | label bought, not yet scanned by the carrier | 0 |
//! | in_transit | accepted by the carrier (first acceptance scan) or moving | 1 |
//! | exception | delayed or held (weather, address, customs); still on its way | 1 |
//! | out_for_delivery | on the vehicle for delivery to the lab | 2 |
//! | delivered | delivered at the lab (terminal) | 3 |
//! | returned | returned to the sender (terminal) | 3 |
//! | lost | declared lost by the carrier (terminal) | 3 |
//!
//! A scan is applied to the shipment's current status only when it occurred after the latest
//! applied scan and the shipment is not terminal; older scans join the history only.

use platform::error::{ApiError, ErrorCode};

/// A normalized shipment status: the mesh's one type (`lab.common.v1.ShipmentStatus`, with its
/// rank, `is_terminal` and `carrier_has_parcel` in `proto::enums`).
pub use proto::common::ShipmentStatus;

/// What shipping-svc reads into a status.
pub trait Normalize: Sized {
    /// Parses a status field; `invalid_request` naming `field` and the allowed values (the
    /// shipment statuses, `pickup_booked` not among them).
    fn parse_field(name: &str, field: &str) -> Result<Self, ApiError>;
    /// Maps an EasyPost tracker status (`pre_transit`, `in_transit`, `out_for_delivery`,
    /// `delivered`, `available_for_pickup`, `return_to_sender`, `failure`, `cancelled`, `error`,
    /// `unknown`) to ours; `None` for statuses that say nothing about the parcel.
    fn from_easypost(status: &str) -> Option<Self>;
}

impl Normalize for ShipmentStatus {
    fn parse_field(name: &str, field: &str) -> Result<Self, ApiError> {
        Self::parse(name)
            .filter(|status| status.is_shipment_status())
            .ok_or_else(|| {
                let allowed: Vec<&str> = Self::ALL
                    .iter()
                    .filter(|status| status.is_shipment_status())
                    .map(|status| status.as_str())
                    .collect();
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    field,
                    format!("{field} is not a shipment status"),
                )
                .with_details(serde_json::json!({ "field": field, "allowed": allowed }))
            })
    }

    fn from_easypost(status: &str) -> Option<Self> {
        Some(match status {
            "pre_transit" => ShipmentStatus::PreTransit,
            "in_transit" | "available_for_pickup" => ShipmentStatus::InTransit,
            "out_for_delivery" => ShipmentStatus::OutForDelivery,
            "delivered" => ShipmentStatus::Delivered,
            "return_to_sender" => ShipmentStatus::Returned,
            "failure" | "error" => ShipmentStatus::Exception,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ShipmentStatus::*;
    use super::*;

    #[test]
    fn every_status_round_trips_and_terminal_ones_rank_highest() {
        for &status in ShipmentStatus::ALL {
            assert_eq!(ShipmentStatus::parse(status.as_str()), Some(status));
        }
        assert!(Delivered.is_terminal() && Returned.is_terminal() && Lost.is_terminal());
        assert!(!Exception.is_terminal() && Exception.carrier_has_parcel());
        assert!(!PreTransit.carrier_has_parcel());
        assert!(ShipmentStatus::parse_field("shipped", "status").is_err());
        assert!(ShipmentStatus::parse_field("pickup_booked", "status").is_err());
        assert_eq!(ShipmentStatus::parse_field("lost", "status").unwrap(), Lost);
    }

    #[test]
    fn easypost_statuses_map_to_ours() {
        assert_eq!(ShipmentStatus::from_easypost("return_to_sender"), Some(Returned));
        assert_eq!(ShipmentStatus::from_easypost("unknown"), None);
    }
}

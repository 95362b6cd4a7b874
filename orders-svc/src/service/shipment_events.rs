//! Applying shipping events to orders, each in one transaction that first records the event id
//! (`first_delivery`), so a redelivered event changes nothing:
//!
//! * `shipment.label_created`: the order moves to `label_generated` (from `invoice_sent`,
//!   `overdue` or `paid`: ship-first card and bank orders, settled stablecoin orders);
//! * `shipment.updated` whose status says the carrier has the parcel (`in_transit`,
//!   `out_for_delivery`, `delivered`, `exception`, `returned`, `lost`): `label_generated` moves
//!   to `in_transit` (the first acceptance scan). Any other status, or an order already further
//!   along, changes nothing: the transition table (`docs/order-states.md`) never moves an order
//!   back, so duplicate and out-of-order scans are harmless.

use super::OrdersService;
use super::payment_events::EventTarget;
use super::transition::transition;
use crate::SCHEMA;
use crate::domain::status::OrderStatus;
use crate::repo;
use platform::consumer::first_delivery;
use platform::streams::GROUP_ORDERS;

/// Reason recorded when a bought label moves an order to `label_generated`.
pub const REASON_LABEL_CREATED: &str = "shipment.label_created";
/// Reason recorded when the carrier's first acceptance scan moves an order to `in_transit`.
pub const REASON_SHIPMENT_UPDATED: &str = "shipment.updated";

/// Shipment statuses that mean the carrier has the parcel.
const CARRIER_HAS_PARCEL: [&str; 6] = [
    "in_transit",
    "out_for_delivery",
    "delivered",
    "exception",
    "returned",
    "lost",
];

/// What a shipping event asks of an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShipmentNews {
    LabelCreated,
    /// A carrier scan with this normalized status.
    Scanned(&'static str),
}

impl ShipmentNews {
    /// The news of a `shipment.updated` status; `None` when it moves nothing.
    pub fn of_scan(status: &str) -> Option<Self> {
        CARRIER_HAS_PARCEL
            .iter()
            .find(|known| **known == status)
            .map(|known| ShipmentNews::Scanned(known))
    }
}

impl OrdersService {
    /// Applies what shipping-svc announced about the target order, once per event.
    pub async fn apply_shipment_news(
        &self,
        target: EventTarget<'_>,
        news: ShipmentNews,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, target.event_id).await? {
            return tx.commit().await;
        }
        let Some((status, order_number)) =
            repo::lock_order(&mut tx, target.customer_id, target.order_id).await?
        else {
            tracing::warn!(order.id = %target.order_id, "a shipping event for an unknown order, ignored");
            return tx.commit().await;
        };
        let (to, reason) = match news {
            ShipmentNews::LabelCreated => (OrderStatus::LabelGenerated, REASON_LABEL_CREATED),
            ShipmentNews::Scanned(_) => (OrderStatus::InTransit, REASON_SHIPMENT_UPDATED),
        };
        if status.can_transition_to(to) {
            transition(
                &mut tx,
                (target.customer_id, target.order_id),
                &order_number,
                status,
                to,
                reason,
            )
            .await?;
        }
        tx.commit().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scans_of_a_parcel_the_carrier_has_move_an_order() {
        assert_eq!(
            ShipmentNews::of_scan("in_transit"),
            Some(ShipmentNews::Scanned("in_transit"))
        );
        assert_eq!(
            ShipmentNews::of_scan("delivered"),
            Some(ShipmentNews::Scanned("delivered"))
        );
        assert_eq!(ShipmentNews::of_scan("pre_transit"), None);
        assert_eq!(ShipmentNews::of_scan("pickup_booked"), None);
    }
}

//! Applying shipping events to orders, each in one transaction that first records the event id
//! (`first_delivery`), so a redelivered event changes nothing:
//!
//! * `shipment.label_created`: the order moves to `label_generated` (from `invoice_sent`,
//!   `overdue` or `paid`: ship-first card and bank orders, settled stablecoin orders);
//! * `shipment.updated` whose status says the carrier has the parcel (`in_transit`,
//!   `out_for_delivery`, `delivered`, `exception`, `returned`, `lost`): `label_generated` moves
//!   to `in_transit` (the first acceptance scan). Any other status, or an order already further
//!   along, changes nothing: the transition table (`docs/order-states.md`) never moves an order
//!   back, so duplicate and out-of-order scans are harmless;
//! * `shipment.label_voided` (the order was cancelled and shipping-svc voided its label with the
//!   carrier): the block's status becomes `label_voided`; the order itself is already
//!   `cancelled` and does not move.
//!
//! Both also keep the order's `shipping` block for the read model: the label (without its signed
//! URL) from `shipment.label_created`, and the shipment status of every later `shipment.updated`
//! scan (`pre_transit` included; newer scans only), so `GET /orders/{reference}` needs no call to
//! shipping-svc. The order's view is refreshed in the same transaction.

use super::OrdersService;
use super::payment_events::EventTarget;
use super::transition::transition;
use crate::SCHEMA;
use crate::domain::status::{Lifecycle, OrderStatus};
use crate::repo;
use chrono::{DateTime, Utc};
use platform::consumer::first_delivery;
use platform::streams::GROUP_ORDERS;
use proto::common::ShipmentStatus;
use sqlx::PgConnection;
use uuid::Uuid;

/// Reason recorded when a bought label moves an order to `label_generated`.
pub const REASON_LABEL_CREATED: &str = "shipment.label_created";
/// Reason recorded when the carrier's first acceptance scan moves an order to `in_transit`.
pub const REASON_SHIPMENT_UPDATED: &str = "shipment.updated";

/// The shipping block's status once the label was voided (the order was cancelled).
pub const LABEL_VOIDED_STATUS: &str = "label_voided";

/// What a shipping event asks of an order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShipmentNews<'a> {
    /// The label exists: the label (when the event carries it) and the shipment's status.
    LabelCreated {
        label: Option<&'a proto::shipping::Label>,
        status: ShipmentStatus,
    },
    /// A carrier scan with this normalized status, when it occurred.
    Scanned {
        status: ShipmentStatus,
        occurred_at: Option<DateTime<Utc>>,
    },
    /// The label was voided with the carrier, at this time.
    LabelVoided { voided_at: Option<DateTime<Utc>> },
}

impl ShipmentNews<'_> {
    /// The news of a `shipment.updated` status; `None` for one that is no shipment status
    /// (`pickup_booked`, or none at all).
    pub fn of_scan(status: ShipmentStatus, occurred_at: Option<DateTime<Utc>>) -> Option<Self> {
        status
            .is_shipment_status()
            .then_some(ShipmentNews::Scanned { status, occurred_at })
    }

    /// Whether this news moves the order (a scan of a parcel the carrier has, or the label).
    fn moves_order(&self) -> bool {
        match self {
            ShipmentNews::LabelCreated { .. } => true,
            ShipmentNews::Scanned { status, .. } => status.carrier_has_parcel(),
            ShipmentNews::LabelVoided { .. } => false,
        }
    }
}

impl OrdersService {
    /// Applies what shipping-svc announced about the target order, once per event.
    pub async fn apply_shipment_news(
        &self,
        target: EventTarget<'_>,
        news: ShipmentNews<'_>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, target.event_id).await? {
            return tx.commit().await;
        }
        apply_news(&mut tx, target.customer_id, target.order_id, news).await?;
        tx.commit().await
    }
}

/// Applies shipping news to the customer's order inside `tx`: the shipping block, the move it
/// allows (never backwards) and the refreshed view. An unknown order is logged and ignored.
pub(super) async fn apply_news(
    tx: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    news: ShipmentNews<'_>,
) -> Result<(), sqlx::Error> {
    {
        let target = (customer_id, order_id);
        let Some((status, order_number)) = repo::lock_order(&mut *tx, customer_id, order_id).await? else {
            tracing::warn!(order.id = %order_id, "shipping news of an unknown order, ignored");
            return Ok(());
        };
        let block_changed = match news {
            ShipmentNews::LabelCreated {
                label: Some(label),
                status,
            } => repo::view::store_label(&mut *tx, customer_id, order_id, status.as_str(), label).await?,
            // An event of a shipping-svc that does not send the label yet.
            ShipmentNews::LabelCreated { label: None, .. } => false,
            ShipmentNews::Scanned { status, occurred_at } => {
                let at = occurred_at.unwrap_or_else(platform::time::now);
                repo::view::set_shipping_status(&mut *tx, customer_id, order_id, status.as_str(), at).await?
            }
            ShipmentNews::LabelVoided { voided_at } => {
                let at = voided_at.unwrap_or_else(platform::time::now);
                repo::view::set_shipping_status(&mut *tx, customer_id, order_id, LABEL_VOIDED_STATUS, at)
                    .await?
            }
        };
        let to = match news {
            ShipmentNews::LabelCreated { .. } => Some((OrderStatus::LabelGenerated, REASON_LABEL_CREATED)),
            ShipmentNews::Scanned { .. } if news.moves_order() => {
                Some((OrderStatus::InTransit, REASON_SHIPMENT_UPDATED))
            }
            ShipmentNews::Scanned { .. } | ShipmentNews::LabelVoided { .. } => None,
        };
        let moved = match to {
            Some((to, reason)) if status.can_transition_to(to) => {
                transition(&mut *tx, target, &order_number, status, to, reason).await?;
                true
            }
            _ => false,
        };
        if block_changed || moved {
            repo::view::refresh(&mut *tx, customer_id, order_id).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scans_of_a_parcel_the_carrier_has_move_an_order() {
        use ShipmentStatus::*;
        let news = |status| ShipmentNews::of_scan(status, None);
        assert_eq!(
            news(InTransit),
            Some(ShipmentNews::Scanned {
                status: InTransit,
                occurred_at: None
            })
        );
        for status in [InTransit, Exception, OutForDelivery, Delivered, Returned, Lost] {
            assert!(news(status).is_some_and(|news| news.moves_order()), "{status}");
        }
        assert!(news(PreTransit).is_some_and(|news| !news.moves_order()));
        assert_eq!(news(PickupBooked), None);
        assert_eq!(news(Unspecified), None);
    }
}

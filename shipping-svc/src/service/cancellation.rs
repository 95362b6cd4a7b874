//! A cancelled order's label (`order.cancelled`), exactly once however often the event is
//! delivered, concurrently or not:
//!
//! 1. after receipt (`sample_received` or later) the label was used: nothing to do;
//! 2. in one transaction: record the order as cancelled (no label is bought for it from now on)
//!    and lock its shipment row; no bought label, or a cancellation applied before, ends here;
//! 3. the carrier has the parcel (any status past `pre_transit`): record the label as used;
//! 4. otherwise, holding the lock (a concurrent delivery waits, then finds step 5's record):
//!    cancel the standing door pickup (with the carrier when booked there), void the label with
//!    the carrier, record it voided with the carrier's refund status, enqueue
//!    `shipment.label_voided`, commit.
//!
//! A carrier that cannot be reached rolls everything back and the event is retried; the
//! adapters' void is idempotent (EasyPost: a shipment whose refund was asked answers its refund
//! status), so a crash between the carrier's void and our commit voids nothing twice. A carrier
//! that refuses the void is recorded as `rejected` and never retried: the label is withdrawn
//! from the customer all the same.

use super::ShippingService;
use crate::carrier::{Carrier, CarrierError};
use crate::domain::ShipmentStatus;
use crate::domain::void::{CancelledLabel, RefundStatus, VoidedLabel};
use crate::{OUTBOX, events, repo};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::common::OrderStatus;
use uuid::Uuid;

/// What shipping-svc reads from `order.cancelled`.
#[derive(Clone, Copy, Debug)]
pub struct OrderCancellation {
    pub customer_id: Uuid,
    pub order_id: Uuid,
    /// The status the order was cancelled from.
    pub from_status: OrderStatus,
    pub cancelled_at: DateTime<Utc>,
}

/// Order statuses past which the sample is at the lab (its label was used).
const RECEIVED: [OrderStatus; 4] = [
    OrderStatus::SampleReceived,
    OrderStatus::InLab,
    OrderStatus::Reporting,
    OrderStatus::Completed,
];

impl ShippingService {
    /// Applies an order's cancellation to its label (see the module comment).
    pub async fn cancel_order_label(
        &self,
        cancellation: &OrderCancellation,
    ) -> Result<CancelledLabel, ApiError> {
        if RECEIVED.contains(&cancellation.from_status) {
            return Ok(CancelledLabel::Used);
        }
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        repo::cancellations::record_cancelled_order(
            &mut tx,
            cancellation.customer_id,
            cancellation.order_id,
            cancellation.from_status.as_str(),
            cancellation.cancelled_at,
            now,
        )
        .await?;
        let Some(locked) =
            repo::cancellations::lock_for_void(&mut tx, cancellation.customer_id, cancellation.order_id)
                .await?
        else {
            tx.commit().await?;
            return Ok(CancelledLabel::NoLabel);
        };
        if !locked.bought {
            // A purchase in progress finds the cancellation when it claims the row again.
            tx.commit().await?;
            return Ok(CancelledLabel::NoLabel);
        }
        let shipment = repo::shipments::by_id(&mut tx, locked.shipment_id)
            .await?
            .ok_or_else(|| ApiError::internal("a locked shipment disappeared"))?;
        if locked.label_void.is_some() {
            tx.commit().await?;
            return Ok(shipment
                .voided
                .map_or(CancelledLabel::Used, CancelledLabel::Voided));
        }
        if shipment.status != ShipmentStatus::PreTransit {
            repo::cancellations::record_used(&mut tx, shipment.id, cancellation.cancelled_at, now).await?;
            tx.commit().await?;
            tracing::info!(
                shipment.id = %shipment.id,
                status = shipment.status.as_str(),
                "order cancelled with the parcel already with the carrier; the label is left as used"
            );
            return Ok(CancelledLabel::Used);
        }
        for pickup in repo::cancellations::lock_standing_pickups(&mut tx, shipment.id).await? {
            let carrier_pickup_id = pickup.carrier_pickup_id.unwrap_or_default();
            if !carrier_pickup_id.is_empty() {
                match self
                    .carrier_for(shipment.sandbox)
                    .cancel_pickup(&carrier_pickup_id)
                    .await
                {
                    Ok(()) => {}
                    Err(CarrierError::Unavailable(cause)) => {
                        return Err(ApiError::unavailable("the carrier", cause));
                    }
                    Err(CarrierError::Rejected(cause)) => tracing::warn!(
                        pickup = %pickup.id,
                        %cause,
                        "the carrier refused to cancel the pickup; it is recorded cancelled"
                    ),
                }
            }
            repo::cancellations::cancel_pickup(&mut tx, pickup.id, now).await?;
            tracing::info!(pickup = %pickup.id, was = pickup.status.as_str(), "door pickup cancelled with the order");
        }
        let refund_status = match self
            .carrier_for(shipment.sandbox)
            .void_label(&shipment.carrier_shipment_id, &shipment.tracking_number)
            .await
        {
            Ok(status) => status,
            Err(CarrierError::Unavailable(cause)) => return Err(ApiError::unavailable("the carrier", cause)),
            Err(CarrierError::Rejected(cause)) => {
                tracing::warn!(shipment.id = %shipment.id, %cause, "the carrier refused to void the label");
                RefundStatus::Rejected
            }
        };
        let voided = VoidedLabel {
            refund_status,
            voided_at: now,
        };
        repo::cancellations::record_voided(&mut tx, shipment.id, &voided, cancellation.cancelled_at).await?;
        OUTBOX
            .enqueue(&mut tx, events::label_voided(&shipment, &voided))
            .await?;
        tx.commit().await?;
        tracing::info!(
            shipment.id = %shipment.id,
            order.id = %shipment.order_id,
            refund_status = refund_status.as_str(),
            "label voided with the carrier"
        );
        Ok(CancelledLabel::Voided(voided))
    }

    /// Whether the order was cancelled (its label is not to be bought).
    pub async fn order_cancelled(&self, order_id: Uuid) -> Result<bool, ApiError> {
        let mut conn = self.pool.acquire().await?;
        Ok(repo::cancellations::is_cancelled(&mut conn, order_id).await?)
    }
}

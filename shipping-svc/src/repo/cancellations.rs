//! Cancelled orders and what their cancellation did to the label and the door pickup.

use super::bad_value;
use crate::domain::pickup::PickupStatus;
use crate::domain::void::VoidedLabel;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// Records that the customer's order was cancelled (once; a repeat changes nothing). A
/// concurrent recording of the same order waits here for the first one's transaction.
pub async fn record_cancelled_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    from_status: &str,
    cancelled_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO shipping.cancelled_orders (order_id, customer_id, from_status, cancelled_at, recorded_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (order_id) DO NOTHING",
    )
    .bind(order_id)
    .bind(customer_id)
    .bind(from_status)
    .bind(cancelled_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether the order was cancelled (no label is bought for it any more).
pub async fn is_cancelled(conn: &mut PgConnection, order_id: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM shipping.cancelled_orders WHERE order_id = $1)")
        .bind(order_id)
        .fetch_one(conn)
        .await
}

/// The order's shipment row, locked, as a cancellation needs it.
#[derive(Clone, Debug)]
pub struct LockedForVoid {
    pub shipment_id: Uuid,
    /// The label is bought (not pending).
    pub bought: bool,
    /// `voided` or `used` once a cancellation was applied.
    pub label_void: Option<String>,
}

/// Locks the order's shipment row (bought or pending); `None` when the order has none.
pub async fn lock_for_void(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<LockedForVoid>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT id, label_state, label_void FROM shipping.shipments \
         WHERE order_id = $1 AND customer_id = $2 FOR UPDATE",
    )
    .bind(order_id)
    .bind(customer_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        let state: String = row.try_get("label_state")?;
        Ok(LockedForVoid {
            shipment_id: row.try_get("id")?,
            bought: state == "bought",
            label_void: row.try_get("label_void")?,
        })
    })
    .transpose()
}

/// Records the shipment's label as voided with the carrier's refund status.
pub async fn record_voided(
    conn: &mut PgConnection,
    shipment_id: Uuid,
    voided: &VoidedLabel,
    order_cancelled_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.shipments SET label_void = 'voided', refund_status = $2, voided_at = $3, \
           order_cancelled_at = $4, updated_at = $3 \
         WHERE id = $1 AND label_void IS NULL",
    )
    .bind(shipment_id)
    .bind(voided.refund_status.as_str())
    .bind(voided.voided_at)
    .bind(order_cancelled_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that the shipment's label was used (the carrier had the parcel when the order was
/// cancelled): it is left as it is.
pub async fn record_used(
    conn: &mut PgConnection,
    shipment_id: Uuid,
    order_cancelled_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.shipments SET label_void = 'used', order_cancelled_at = $2, updated_at = $3 \
         WHERE id = $1 AND label_void IS NULL",
    )
    .bind(shipment_id)
    .bind(order_cancelled_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// A pickup still standing (awaiting payment or booked) of a shipment.
#[derive(Clone, Debug)]
pub struct StandingPickup {
    pub id: Uuid,
    pub status: PickupStatus,
    /// The carrier's pickup (`None` or empty: nothing was created with the carrier).
    pub carrier_pickup_id: Option<String>,
}

/// The shipment's standing pickups (awaiting payment or booked), locked.
pub async fn lock_standing_pickups(
    conn: &mut PgConnection,
    shipment_id: Uuid,
) -> Result<Vec<StandingPickup>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, status, carrier_pickup_id FROM shipping.pickups \
         WHERE shipment_id = $1 AND status IN ('awaiting_payment', 'booked') ORDER BY created_at FOR UPDATE",
    )
    .bind(shipment_id)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            let status: String = row.try_get("status")?;
            Ok(StandingPickup {
                id: row.try_get("id")?,
                status: PickupStatus::parse(&status).ok_or_else(|| bad_value("pickup status", &status))?,
                carrier_pickup_id: row.try_get("carrier_pickup_id")?,
            })
        })
        .collect()
}

/// Cancels a standing pickup.
pub async fn cancel_pickup(
    conn: &mut PgConnection,
    pickup_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.pickups SET status = 'cancelled', cancelled_at = $2 \
         WHERE id = $1 AND status IN ('awaiting_payment', 'booked')",
    )
    .bind(pickup_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

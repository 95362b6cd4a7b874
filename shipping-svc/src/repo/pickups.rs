//! Door pickups of shipments.

use super::bad_value;
use crate::domain::pickup::{Pickup, PickupStatus};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

const SELECT_PICKUPS: &str = "SELECT id, customer_id, shipment_id, order_id, status, pickup_date, pickup_window, \
    price_cents, pay_url, checkout_session_id, pay_expires_at, payment_reference, confirmation_number, carrier_pickup_id, \
    created_at, booked_at FROM shipping.pickups ";

fn pickup_from_row(row: &PgRow) -> Result<Pickup, sqlx::Error> {
    Ok(Pickup {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        shipment_id: row.try_get("shipment_id")?,
        order_id: row.try_get("order_id")?,
        status: {
            let status: String = row.try_get("status")?;
            PickupStatus::parse(&status).ok_or_else(|| bad_value("pickup status", &status))?
        },
        date: row.try_get("pickup_date")?,
        window: row.try_get("pickup_window")?,
        price_cents: row.try_get("price_cents")?,
        pay_url: row.try_get("pay_url")?,
        checkout_session_id: row.try_get("checkout_session_id")?,
        pay_expires_at: row.try_get("pay_expires_at")?,
        payment_reference: row.try_get("payment_reference")?,
        confirmation_number: row.try_get("confirmation_number")?,
        carrier_pickup_id: row.try_get("carrier_pickup_id")?,
        created_at: row.try_get("created_at")?,
        booked_at: row.try_get("booked_at")?,
    })
}

/// Inserts a pickup; false when the shipment has one already (awaiting payment or booked).
pub async fn insert(conn: &mut PgConnection, pickup: &Pickup) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO shipping.pickups (id, customer_id, shipment_id, order_id, status, pickup_date, pickup_window, \
           price_cents, pay_url, checkout_session_id, pay_expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (shipment_id) WHERE status <> 'payment_expired' DO NOTHING",
    )
    .bind(pickup.id)
    .bind(pickup.customer_id)
    .bind(pickup.shipment_id)
    .bind(pickup.order_id)
    .bind(pickup.status.as_str())
    .bind(pickup.date)
    .bind(&pickup.window)
    .bind(pickup.price_cents)
    .bind(&pickup.pay_url)
    .bind(&pickup.checkout_session_id)
    .bind(pickup.pay_expires_at)
    .bind(pickup.created_at)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The newest pickup of a shipment (whatever its status).
pub async fn by_shipment(conn: &mut PgConnection, shipment_id: Uuid) -> Result<Option<Pickup>, sqlx::Error> {
    let query = format!("{SELECT_PICKUPS} WHERE shipment_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1");
    let row = sqlx::query(sqlx::AssertSqlSafe(query))
        .bind(shipment_id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| pickup_from_row(&row)).transpose()
}

/// Ends a pickup whose payment expired unpaid; false when it is not awaiting payment (booked,
/// or ended before).
pub async fn expire_payment(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE shipping.pickups SET status = $3 WHERE id = $1 AND customer_id = $2 AND status = $4",
    )
    .bind(id)
    .bind(customer_id)
    .bind(PickupStatus::PaymentExpired.as_str())
    .bind(PickupStatus::AwaitingPayment.as_str())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The pickup with this id, locked.
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> Result<Option<Pickup>, sqlx::Error> {
    let query = format!("{SELECT_PICKUPS} WHERE id = $1 FOR UPDATE");
    let row = sqlx::query(sqlx::AssertSqlSafe(query))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| pickup_from_row(&row)).transpose()
}

/// Records the carrier's pickup created for a pickup, before it is bought.
pub async fn record_carrier_pickup(
    conn: &mut PgConnection,
    id: Uuid,
    carrier_pickup_id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE shipping.pickups SET carrier_pickup_id = $2 WHERE id = $1")
        .bind(id)
        .bind(carrier_pickup_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Marks a pickup booked.
pub async fn book(
    conn: &mut PgConnection,
    id: Uuid,
    payment_reference: &str,
    confirmation_number: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.pickups SET status = $5, payment_reference = $2, confirmation_number = $3, \
           booked_at = $4 WHERE id = $1",
    )
    .bind(id)
    .bind(payment_reference)
    .bind(confirmation_number)
    .bind(now)
    .bind(PickupStatus::Booked.as_str())
    .execute(conn)
    .await?;
    Ok(())
}

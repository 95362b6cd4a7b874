//! Spend envelopes and commitments. Every statement filters by key and customer (envelopes) or
//! customer (commitments).

use crate::domain::spend::{Caps, Committed, SpendKind, Windows};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// The key's caps, locked for update so that commitments of one key apply one after the other;
/// `None` when staff never set an envelope.
pub async fn lock_envelope(
    conn: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
) -> Result<Option<Caps>, sqlx::Error> {
    envelope(conn, key_id, customer_id, true).await
}

/// The key's caps; `None` when staff never set an envelope.
pub async fn read_envelope(
    conn: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
) -> Result<Option<Caps>, sqlx::Error> {
    envelope(conn, key_id, customer_id, false).await
}

async fn envelope(
    conn: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
    lock: bool,
) -> Result<Option<Caps>, sqlx::Error> {
    let query = if lock {
        "SELECT per_order_cap_cents, daily_cap_cents, monthly_cap_cents FROM payments.spend_envelopes \
         WHERE key_id = $1 AND customer_id = $2 FOR UPDATE"
    } else {
        "SELECT per_order_cap_cents, daily_cap_cents, monthly_cap_cents FROM payments.spend_envelopes \
         WHERE key_id = $1 AND customer_id = $2"
    };
    let row = sqlx::query(query)
        .bind(key_id)
        .bind(customer_id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| {
        Ok(Caps {
            per_order: row.try_get::<Option<i64>, _>("per_order_cap_cents")?.map(Cents),
            daily: row.try_get::<Option<i64>, _>("daily_cap_cents")?.map(Cents),
            monthly: row.try_get::<Option<i64>, _>("monthly_cap_cents")?.map(Cents),
        })
    })
    .transpose()
}

/// Sets (creates or replaces) the key's caps.
pub async fn upsert_envelope(
    conn: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
    caps: &Caps,
    by: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO payments.spend_envelopes (key_id, customer_id, per_order_cap_cents, daily_cap_cents, \
           monthly_cap_cents, updated_by, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (key_id, customer_id) DO UPDATE SET per_order_cap_cents = $3, daily_cap_cents = $4, \
           monthly_cap_cents = $5, updated_by = $6, updated_at = $7",
    )
    .bind(key_id)
    .bind(customer_id)
    .bind(caps.per_order.map(|cap| cap.0))
    .bind(caps.daily.map(|cap| cap.0))
    .bind(caps.monthly.map(|cap| cap.0))
    .bind(by)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// What the key committed and did not release in the current UTC day and month.
pub async fn committed(
    conn: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
    windows: &Windows,
) -> Result<Committed, sqlx::Error> {
    let row = sqlx::query(
        "SELECT COALESCE(SUM(amount_cents) FILTER (WHERE committed_at >= $3), 0)::bigint AS today, \
                COALESCE(SUM(amount_cents), 0)::bigint AS month \
         FROM payments.spend_commitments \
         WHERE key_id = $1 AND customer_id = $2 AND released_at IS NULL AND committed_at >= $4",
    )
    .bind(key_id)
    .bind(customer_id)
    .bind(windows.day_start)
    .bind(windows.month_start)
    .fetch_one(conn)
    .await?;
    Ok(Committed {
        today: Cents(row.try_get("today")?),
        this_month: Cents(row.try_get("month")?),
    })
}

/// Whether the subject holds an active commitment, locked for update.
pub async fn lock_commitment(
    conn: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
) -> Result<Option<bool>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT released_at IS NULL AS active FROM payments.spend_commitments \
         WHERE customer_id = $1 AND kind = $2 AND subject_id = $3 FOR UPDATE",
    )
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| row.try_get("active")).transpose()
}

/// Commits `amount` for the subject (re-activating a released commitment of it).
pub async fn upsert_commitment(
    conn: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    key_id: &str,
    amount: Cents,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO payments.spend_commitments (customer_id, kind, subject_id, key_id, amount_cents, committed_at) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (customer_id, kind, subject_id) DO UPDATE SET key_id = $4, amount_cents = $5, \
           committed_at = $6, released_at = NULL",
    )
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .bind(key_id)
    .bind(amount.0)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases the subject's active commitment; true when one was released.
pub async fn release(
    conn: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE payments.spend_commitments SET released_at = $4 \
         WHERE customer_id = $1 AND kind = $2 AND subject_id = $3 AND released_at IS NULL",
    )
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Re-activates a released commitment (money arrived after all), without a cap check.
pub async fn reactivate(
    conn: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.spend_commitments SET released_at = NULL \
         WHERE customer_id = $1 AND kind = $2 AND subject_id = $3",
    )
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the order's commitment confirmed: the order exists (its invoice was issued).
pub async fn confirm_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.spend_commitments SET confirmed = true \
         WHERE customer_id = $1 AND kind = 'order' AND subject_id = $2 AND NOT confirmed",
    )
    .bind(customer_id)
    .bind(order_id.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases order commitments never confirmed by an invoice and older than `before` (orders
/// that were never placed: their request failed or its process died between the commitment
/// and the order). Returns how many.
pub async fn reap_unconfirmed(conn: &mut PgConnection, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE payments.spend_commitments SET released_at = now() \
         WHERE kind = 'order' AND NOT confirmed AND released_at IS NULL AND committed_at < $1",
    )
    .bind(before)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

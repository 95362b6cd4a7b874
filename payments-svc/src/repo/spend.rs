//! Spend envelopes and commitments. Every statement filters by key and customer (envelopes) or
//! customer (commitments).

use crate::domain::spend::{Caps, Committed, SpendKind, Totals, Windows};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// The advisory lock of a key's envelope, as SQL text over the SQL expressions of the key id and
/// the customer id. Every transaction that changes a commitment of the key holds it shared;
/// creating the envelope holds it exclusive, so that the totals it starts from see every
/// commitment written before it and every commitment written after it sees the envelope.
macro_rules! envelope_lock {
    ($function:literal, $key:literal, $customer:literal) => {
        concat!(
            $function,
            "(hashtextextended('spend-envelope:' || ",
            $key,
            " || ':' || ",
            $customer,
            "::text, 0))"
        )
    };
}

/// The columns of an envelope row that [`envelope_of`] reads.
macro_rules! envelope_columns {
    () => {
        "per_order_cap_cents, daily_cap_cents, monthly_cap_cents, day_start, day_committed_cents, \
         month_start, month_committed_cents"
    };
}

/// A key's envelope: its caps and running totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub caps: Caps,
    pub totals: Totals,
}

fn envelope_of(row: &PgRow) -> Result<Envelope, sqlx::Error> {
    Ok(Envelope {
        caps: Caps {
            per_order: row.try_get::<Option<i64>, _>("per_order_cap_cents")?.map(Cents),
            daily: row.try_get::<Option<i64>, _>("daily_cap_cents")?.map(Cents),
            monthly: row.try_get::<Option<i64>, _>("monthly_cap_cents")?.map(Cents),
        },
        totals: Totals {
            day: row.try_get("day_start")?,
            today: Cents(row.try_get("day_committed_cents")?),
            month: row.try_get("month_start")?,
            this_month: Cents(row.try_get("month_committed_cents")?),
        },
    })
}

/// The key's caps and running totals; `None` when staff never set an envelope.
pub async fn read_envelope(
    conn: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
) -> Result<Option<Envelope>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "SELECT ",
        envelope_columns!(),
        " FROM payments.spend_envelopes WHERE key_id = $1 AND customer_id = $2"
    ))
    .bind(key_id)
    .bind(customer_id)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(envelope_of).transpose()
}

/// Sets (creates or replaces) the key's caps, within a transaction. A new envelope's totals
/// start from the key's active commitments of `now`'s UTC day and month (under the envelope's
/// advisory lock, held exclusive until the transaction ends); replacing the caps keeps the
/// totals.
pub async fn upsert_envelope(
    tx: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
    caps: &Caps,
    by: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(concat!(
        "SELECT ",
        envelope_lock!("pg_advisory_xact_lock", "$1", "$2")
    ))
    .bind(key_id)
    .bind(customer_id)
    .execute(&mut *tx)
    .await?;
    let windows = Windows::at(now);
    sqlx::query(
        "INSERT INTO payments.spend_envelopes (key_id, customer_id, per_order_cap_cents, daily_cap_cents, \
           monthly_cap_cents, updated_by, updated_at, day_start, day_committed_cents, month_start, \
           month_committed_cents) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, \
           COALESCE(SUM(amount_cents) FILTER (WHERE committed_at >= $10), 0)::bigint, $9, \
           COALESCE(SUM(amount_cents), 0)::bigint \
         FROM payments.spend_commitments \
         WHERE key_id = $1 AND customer_id = $2 AND released_at IS NULL AND committed_at >= $11 \
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
    .bind(windows.day())
    .bind(windows.month())
    .bind(windows.day_start)
    .bind(windows.month_start)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Adds `delta` (negative: a release) made at `at` to the key's running totals as of `now`,
/// within the transaction that writes the commitment, and returns the envelope as it now is
/// (locked until the transaction ends); `None` when the key has no envelope. The totals move to
/// `now`'s day and month first (an earlier period's totals become zero), and `delta` counts only
/// in the period that `at` falls in. Totals never go below zero.
pub async fn adjust_totals(
    tx: &mut PgConnection,
    key_id: &str,
    customer_id: Uuid,
    delta: Cents,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Option<Envelope>, sqlx::Error> {
    let current = Windows::at(now);
    let event = Windows::at(at);
    let row = sqlx::query(concat!(
        "UPDATE payments.spend_envelopes SET \
           day_committed_cents = GREATEST(0, CASE WHEN day_start >= $3 THEN day_committed_cents ELSE 0 END \
             + CASE WHEN $5 = GREATEST(day_start, $3) THEN $4 ELSE 0 END), \
           day_start = GREATEST(day_start, $3), \
           month_committed_cents = GREATEST(0, CASE WHEN month_start >= $6 THEN month_committed_cents ELSE 0 END \
             + CASE WHEN $7 = GREATEST(month_start, $6) THEN $4 ELSE 0 END), \
           month_start = GREATEST(month_start, $6) \
         WHERE key_id = $1 AND customer_id = $2 \
         RETURNING ",
        envelope_columns!()
    ))
        .bind(key_id)
        .bind(customer_id)
        .bind(current.day())
        .bind(delta.0)
        .bind(event.day())
        .bind(current.month())
        .bind(event.month())
        .fetch_optional(tx)
        .await?;
    row.as_ref().map(envelope_of).transpose()
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

/// Commits `amount` for the subject (re-activating a released commitment of it) within a
/// transaction, holding the key's envelope lock shared; false when the subject's commitment
/// was already active (nothing changed).
pub async fn commit(
    tx: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    key_id: &str,
    amount: Cents,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let row = sqlx::query(concat!(
        "WITH envelope_lock AS (SELECT ",
        envelope_lock!("pg_advisory_xact_lock_shared", "$4::text", "$1::uuid"),
        ") \
         INSERT INTO payments.spend_commitments (customer_id, kind, subject_id, key_id, amount_cents, committed_at) \
         SELECT $1::uuid, $2::text, $3::text, $4::text, $5::bigint, $6::timestamptz FROM envelope_lock \
         ON CONFLICT (customer_id, kind, subject_id) DO UPDATE SET key_id = $4, amount_cents = $5, \
           committed_at = $6, released_at = NULL \
         WHERE payments.spend_commitments.released_at IS NOT NULL \
         RETURNING 1 AS committed"
    ))
        .bind(customer_id)
        .bind(kind.as_str())
        .bind(subject_id)
        .bind(key_id)
        .bind(amount.0)
        .bind(now)
        .fetch_optional(tx)
        .await?;
    Ok(row.is_some())
}

/// A commitment whose state changed: its key, amount and when it was made.
struct Changed {
    key_id: String,
    amount: Cents,
    committed_at: DateTime<Utc>,
}

/// Takes the shared envelope lock of the key that holds the subject's commitment (the first step
/// of every change to a commitment, in [`commit`]'s lock order); the key, or `None` without a
/// commitment.
async fn lock_envelope_of(
    tx: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(concat!(
        "SELECT key_id FROM payments.spend_commitments, LATERAL (SELECT ",
        envelope_lock!("pg_advisory_xact_lock_shared", "key_id", "customer_id"),
        ") AS envelope_lock WHERE customer_id = $1 AND kind = $2 AND subject_id = $3"
    ))
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .fetch_optional(&mut *tx)
    .await
}

/// Sets `released_at` of the subject's commitment (NULL: re-activates it) when it is not set
/// yet (or, re-activating, when it is), and moves the key's totals by its amount, within a
/// transaction: exactly once per change. Lock order as in [`commit`]: the key's envelope lock
/// (shared), the commitment, the envelope row.
async fn change(
    tx: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    released_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let locked = lock_envelope_of(tx, customer_id, kind, subject_id).await?;
    if locked.is_none() {
        return Ok(false);
    }
    let statement = if released_at.is_some() {
        "UPDATE payments.spend_commitments SET released_at = $4 \
         WHERE customer_id = $1 AND kind = $2 AND subject_id = $3 AND released_at IS NULL \
         RETURNING key_id, amount_cents, committed_at"
    } else {
        "UPDATE payments.spend_commitments SET released_at = $4 \
         WHERE customer_id = $1 AND kind = $2 AND subject_id = $3 AND released_at IS NOT NULL \
         RETURNING key_id, amount_cents, committed_at"
    };
    let row = sqlx::query(statement)
        .bind(customer_id)
        .bind(kind.as_str())
        .bind(subject_id)
        .bind(released_at)
        .fetch_optional(&mut *tx)
        .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let changed = Changed {
        key_id: row.try_get("key_id")?,
        amount: Cents(row.try_get("amount_cents")?),
        committed_at: row.try_get("committed_at")?,
    };
    if locked.as_deref() != Some(changed.key_id.as_str()) {
        // Re-committed under another key in between: hold that key's lock too.
        sqlx::query(concat!(
            "SELECT ",
            envelope_lock!("pg_advisory_xact_lock_shared", "$1", "$2")
        ))
        .bind(&changed.key_id)
        .bind(customer_id)
        .execute(&mut *tx)
        .await?;
    }
    let delta = if released_at.is_some() {
        Cents(-changed.amount.0)
    } else {
        changed.amount
    };
    adjust_totals(tx, &changed.key_id, customer_id, delta, changed.committed_at, now).await?;
    Ok(true)
}

/// Releases the subject's active commitment within a transaction (the key's totals drop by its
/// amount in the day and month it was made in); true when one was released.
pub async fn release(
    tx: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    change(tx, customer_id, kind, subject_id, Some(now), now).await
}

/// Lowers the subject's active commitment to `amount` when it is above it (a cancelled order
/// keeps only the charge staff kept), within a transaction; the key's totals drop by the
/// difference in the day and month it was made in. True when it changed; a second call with
/// the same amount changes nothing.
pub async fn reduce_to(
    tx: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    amount: Cents,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let Some(key_id) = lock_envelope_of(tx, customer_id, kind, subject_id).await? else {
        return Ok(false);
    };
    let row = sqlx::query(
        "WITH old AS (SELECT amount_cents FROM payments.spend_commitments \
           WHERE customer_id = $1 AND kind = $2 AND subject_id = $3 AND key_id = $5 \
             AND released_at IS NULL AND amount_cents > $4 FOR UPDATE) \
         UPDATE payments.spend_commitments c SET amount_cents = $4 FROM old \
         WHERE c.customer_id = $1 AND c.kind = $2 AND c.subject_id = $3 \
         RETURNING old.amount_cents AS before, c.committed_at",
    )
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .bind(amount.0)
    .bind(&key_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let before: i64 = row.try_get("before")?;
    let committed_at: DateTime<Utc> = row.try_get("committed_at")?;
    adjust_totals(
        tx,
        &key_id,
        customer_id,
        Cents(amount.0 - before),
        committed_at,
        now,
    )
    .await?;
    Ok(true)
}

/// Re-activates a released commitment (money arrived after all), without a cap check, within a
/// transaction (the key's totals grow again by its amount in the day and month it was made in).
pub async fn reactivate(
    tx: &mut PgConnection,
    customer_id: Uuid,
    kind: SpendKind,
    subject_id: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    change(tx, customer_id, kind, subject_id, None, now).await?;
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

/// Marks the commitment of `kind` and `subject_id` confirmed (its subject exists).
pub async fn confirm(
    conn: &mut PgConnection,
    customer_id: Uuid,
    kind: crate::domain::spend::SpendKind,
    subject_id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.spend_commitments SET confirmed = true \
         WHERE customer_id = $1 AND kind = $2 AND subject_id = $3 AND NOT confirmed",
    )
    .bind(customer_id)
    .bind(kind.as_str())
    .bind(subject_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases order and add-on commitments never confirmed by an invoice and older than `before`
/// (orders or add-ons that were never stored: their request failed or its process died between
/// the commitment and the record), at most `limit` of them, within a transaction. Returns how
/// many.
pub async fn reap_unconfirmed(
    tx: &mut PgConnection,
    before: DateTime<Utc>,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    // Orders and add-ons are confirmed when their invoice is issued; pickups commit confirmed.
    let candidates: Vec<(Uuid, String, String)> = sqlx::query_as(
        "SELECT customer_id, kind, subject_id FROM payments.spend_commitments \
         WHERE kind IN ('order', 'addon') AND NOT confirmed AND released_at IS NULL AND committed_at < $1 \
         ORDER BY key_id, customer_id, kind, subject_id LIMIT $2",
    )
    .bind(before)
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    let mut released = 0;
    for (customer_id, kind, subject_id) in candidates {
        let kind = if kind == SpendKind::Addon.as_str() {
            SpendKind::Addon
        } else {
            SpendKind::Order
        };
        if release(tx, customer_id, kind, &subject_id, now).await? {
            released += 1;
        }
    }
    Ok(released)
}

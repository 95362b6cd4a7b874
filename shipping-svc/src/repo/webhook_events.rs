//! The external carrier's webhook events already applied (`shipping.carrier_webhook_events`).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

/// One webhook event to claim.
#[derive(Clone, Debug)]
pub struct WebhookEventClaim<'a> {
    /// The carrier (`easypost`).
    pub carrier: &'a str,
    /// The carrier's event id (`evt_…`).
    pub event_id: &'a str,
    /// The event's description (`tracker.updated`).
    pub description: &'a str,
    /// The delivery's signed timestamp.
    pub signed_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
}

/// Records the event in the caller's transaction; false when it was applied before (a replay
/// or a redelivery). A concurrent transaction holding the same id makes this wait for its
/// outcome: false once it commits, true (ours to apply) when it rolled back.
pub async fn claim(conn: &mut PgConnection, claim: &WebhookEventClaim<'_>) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO shipping.carrier_webhook_events (carrier, event_id, description, signed_at, received_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (carrier, event_id) DO NOTHING",
    )
    .bind(claim.carrier)
    .bind(claim.event_id)
    .bind(claim.description)
    .bind(claim.signed_at)
    .bind(claim.received_at)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Deletes the events received before `cutoff`; returns how many.
pub async fn prune(pool: &PgPool, cutoff: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let deleted = sqlx::query("DELETE FROM shipping.carrier_webhook_events WHERE received_at < $1")
        .bind(cutoff)
        .execute(pool)
        .await?;
    Ok(deleted.rows_affected())
}

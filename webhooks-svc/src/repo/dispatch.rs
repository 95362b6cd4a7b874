//! SQL of the dispatcher: claiming due deliveries under a lease (safe across replicas with
//! `FOR UPDATE SKIP LOCKED`), and recording a batch of attempts in one statement.

use crate::domain::{AttemptOutcome, DeliveryStatus};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgPool, Row};
use std::time::Duration;
use uuid::Uuid;

/// A delivery claimed for one attempt, with what the attempt needs.
#[derive(Clone)]
pub struct Claimed {
    pub delivery_id: Uuid,
    pub lease_token: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    /// Attempts made before this one.
    pub attempt_count: i32,
    /// `attempt_count` when the delivery was last queued.
    pub round_start: i32,
    pub url: String,
    pub secret_sealed: String,
    /// The previous secret while its overlap lasts.
    pub previous_secret_sealed: Option<String>,
    pub body: Vec<u8>,
    pub traceparent: String,
    pub tracestate: String,
    /// When this process got the claim (its lease runs from about then).
    pub claimed_at: std::time::Instant,
}

impl std::fmt::Debug for Claimed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claimed")
            .field("delivery_id", &self.delivery_id)
            .field("endpoint_id", &self.endpoint_id)
            .field("event_id", &self.event_id)
            .finish_non_exhaustive()
    }
}

macro_rules! claimed_columns {
    () => {
        "claimed.id, claimed.lease_token, claimed.endpoint_id, claimed.event_id, claimed.event_type, \
         claimed.attempt_count, claimed.round_start, endpoint.url, endpoint.secret_sealed, \
         CASE WHEN endpoint.previous_secret_expires_at > now() THEN endpoint.previous_secret_sealed END \
           AS previous_secret_sealed, \
         event.body, event.traceparent, event.tracestate"
    };
}
pub(crate) use claimed_columns;

/// Reads a claimed delivery from a row with the columns of `claimed_columns!`.
pub(crate) fn claimed(row: &PgRow) -> Result<Claimed, sqlx::Error> {
    Ok(Claimed {
        delivery_id: row.try_get("id")?,
        lease_token: row.try_get("lease_token")?,
        endpoint_id: row.try_get("endpoint_id")?,
        event_id: row.try_get("event_id")?,
        event_type: row.try_get("event_type")?,
        attempt_count: row.try_get("attempt_count")?,
        round_start: row.try_get("round_start")?,
        url: row.try_get("url")?,
        secret_sealed: row.try_get("secret_sealed")?,
        previous_secret_sealed: row.try_get("previous_secret_sealed")?,
        body: row.try_get("body")?,
        traceparent: row.try_get("traceparent")?,
        tracestate: row.try_get("tracestate")?,
        claimed_at: std::time::Instant::now(),
    })
}

/// Claims up to `limit` due deliveries, oldest due first, reserving them for `lease`.
pub async fn claim(pool: &PgPool, limit: i64, lease: Duration) -> Result<Vec<Claimed>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        "WITH claimed AS ( \
           UPDATE webhooks.deliveries SET next_attempt_at = now() + make_interval(secs => $2), \
             lease_token = $3, updated_at = now() \
           WHERE id IN (SELECT id FROM webhooks.deliveries WHERE status = 'pending' AND next_attempt_at <= now() \
                        ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
           RETURNING * \
         ) SELECT ",
        claimed_columns!(),
        " FROM claimed \
         JOIN webhooks.endpoints endpoint ON endpoint.id = claimed.endpoint_id \
           AND endpoint.customer_id = claimed.customer_id \
         JOIN webhooks.events event ON event.id = claimed.event_id"
    ))
    .bind(limit)
    .bind(lease.as_secs_f64())
    .bind(Uuid::new_v4())
    .fetch_all(pool)
    .await?;
    rows.iter().map(claimed).collect()
}

/// Loads a delivery that the caller claimed itself (a test delivery) under `lease_token`.
pub async fn load_claimed(
    conn: &mut PgConnection,
    delivery_id: Uuid,
    lease_token: Uuid,
) -> Result<Option<Claimed>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "SELECT ",
        claimed_columns!(),
        " FROM webhooks.deliveries claimed \
         JOIN webhooks.endpoints endpoint ON endpoint.id = claimed.endpoint_id \
           AND endpoint.customer_id = claimed.customer_id \
         JOIN webhooks.events event ON event.id = claimed.event_id \
         WHERE claimed.id = $1 AND claimed.lease_token = $2 AND claimed.status = 'pending'"
    ))
    .bind(delivery_id)
    .bind(lease_token)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(claimed).transpose()
}

/// Seconds until the earliest pending delivery is due (negative when overdue), if any.
pub async fn seconds_until_next_due(pool: &PgPool) -> Result<Option<f64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXTRACT(EPOCH FROM (min(next_attempt_at) - now()))::float8 \
         FROM webhooks.deliveries WHERE status = 'pending'",
    )
    .fetch_one(pool)
    .await
}

/// One attempt to record, and the state its delivery moves to.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedAttempt {
    pub delivery_id: Uuid,
    pub lease_token: Uuid,
    pub endpoint_id: Uuid,
    pub attempt_number: i32,
    pub attempted_at: DateTime<Utc>,
    pub status_code: Option<i32>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub outcome: AttemptOutcome,
    pub new_status: DeliveryStatus,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The endpoint answered 410 Gone: disable it and abandon its pending deliveries.
    pub gone: bool,
}

/// Records a batch of attempts and their deliveries' new states in one transaction. A delivery
/// whose lease was lost keeps its state; one abandoned meanwhile stays abandoned.
pub async fn record(pool: &PgPool, batch: &[RecordedAttempt]) -> Result<(), sqlx::Error> {
    let column = |f: fn(&RecordedAttempt) -> Uuid| batch.iter().map(f).collect::<Vec<Uuid>>();
    let delivery_ids = column(|attempt| attempt.delivery_id);
    let leases = column(|attempt| attempt.lease_token);
    let numbers: Vec<i32> = batch.iter().map(|attempt| attempt.attempt_number).collect();
    let times: Vec<DateTime<Utc>> = batch.iter().map(|attempt| attempt.attempted_at).collect();
    let codes: Vec<Option<i32>> = batch.iter().map(|attempt| attempt.status_code).collect();
    let latencies: Vec<i64> = batch.iter().map(|attempt| attempt.latency_ms).collect();
    let errors: Vec<Option<&str>> = batch.iter().map(|attempt| attempt.error.as_deref()).collect();
    let outcomes: Vec<&str> = batch.iter().map(|attempt| attempt.outcome.as_str()).collect();
    let statuses: Vec<&str> = batch.iter().map(|attempt| attempt.new_status.as_str()).collect();
    let next: Vec<Option<DateTime<Utc>>> = batch.iter().map(|attempt| attempt.next_attempt_at).collect();
    let statement = || {
        sqlx::query(
        "WITH recorded AS ( \
           SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::int[], $4::timestamptz[], $5::int[], $6::bigint[], \
                                $7::text[], $8::text[], $9::text[], $10::timestamptz[]) \
             AS r(delivery_id, lease_token, attempt_number, attempted_at, status_code, latency_ms, error, outcome, \
                  new_status, next_attempt_at) \
         ), attempts AS ( \
           INSERT INTO webhooks.delivery_attempts (delivery_id, attempt_number, attempted_at, status_code, \
                                                   latency_ms, error, outcome) \
           SELECT delivery_id, attempt_number, attempted_at, status_code, latency_ms, error, outcome FROM recorded \
           ON CONFLICT (delivery_id, attempt_number) DO NOTHING \
         ) \
         UPDATE webhooks.deliveries delivery SET \
           attempt_count = GREATEST(delivery.attempt_count, recorded.attempt_number), \
           status = CASE WHEN delivery.status = 'pending' THEN recorded.new_status ELSE delivery.status END, \
           next_attempt_at = CASE WHEN delivery.status = 'pending' THEN recorded.next_attempt_at END, \
           lease_token = NULL, updated_at = now() \
         FROM recorded \
         WHERE delivery.id = recorded.delivery_id AND delivery.lease_token = recorded.lease_token",
    )
    .bind(&delivery_ids)
    .bind(&leases)
    .bind(&numbers)
    .bind(&times)
    .bind(&codes)
    .bind(&latencies)
    .bind(&errors)
    .bind(&outcomes)
    .bind(&statuses)
    .bind(&next)
    };
    let gone: Vec<Uuid> = batch
        .iter()
        .filter(|attempt| attempt.gone)
        .map(|attempt| attempt.endpoint_id)
        .collect();
    if gone.is_empty() {
        // One statement is atomic on its own.
        statement().execute(pool).await?;
        return Ok(());
    }
    let mut tx = pool.begin().await?;
    statement().execute(&mut *tx).await?;
    {
        sqlx::query(
            "UPDATE webhooks.endpoints SET status = 'disabled', updated_at = now(), \
               disabled_reason = 'the endpoint answered 410 Gone' \
             WHERE id = ANY($1) AND status = 'active'",
        )
        .bind(&gone)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE webhooks.deliveries SET status = 'abandoned', next_attempt_at = NULL, updated_at = now() \
             WHERE endpoint_id = ANY($1) AND status = 'pending'",
        )
        .bind(&gone)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}

/// Hands claimed but unstarted deliveries back (due now), if their lease is still ours.
pub async fn release(pool: &PgPool, claims: &[(Uuid, Uuid)]) -> Result<(), sqlx::Error> {
    let ids: Vec<Uuid> = claims.iter().map(|(id, _)| *id).collect();
    let leases: Vec<Uuid> = claims.iter().map(|(_, lease)| *lease).collect();
    sqlx::query(
        "UPDATE webhooks.deliveries delivery SET next_attempt_at = now(), lease_token = NULL, updated_at = now() \
         FROM UNNEST($1::uuid[], $2::uuid[]) AS released(id, lease_token) \
         WHERE delivery.id = released.id AND delivery.lease_token = released.lease_token \
           AND delivery.status = 'pending'",
    )
    .bind(&ids)
    .bind(&leases)
    .execute(pool)
    .await?;
    Ok(())
}

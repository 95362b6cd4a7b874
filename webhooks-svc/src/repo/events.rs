//! SQL of stored events: the fan-out (store events, queue one delivery per subscribed active
//! endpoint of the event's customer, wake the dispatcher) and retention.

use crate::domain::WebhookEvent;
use crate::repo::dispatch::Claimed;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Row};
use std::time::Duration;
use uuid::Uuid;

/// Notification channel that wakes the dispatchers.
pub const DISPATCH_CHANNEL: &str = "webhooks_dispatch";

/// What the fan-out of one stream event did.
#[derive(Debug)]
pub enum FanOut {
    /// The event had been processed before; nothing changed.
    AlreadyProcessed,
    /// The deliveries queued, already claimed under the lease for the caller's dispatcher.
    Queued(Vec<Claimed>),
}

/// Applies one stream event exactly once: records `(consumer, source_event_id)` in
/// `processed_events` (as `platform::consumer::first_delivery` does) and, only when that record
/// is new, stores `events` and queues a `fanout` delivery for every active endpoint of the same
/// customer subscribed to the type. The deliveries are created claimed for `lease` under a fresh
/// lease token and returned with what their attempts need, so the caller hands them straight to
/// its dispatcher (no claim round trip); should it not, they fall due when the lease ends. One
/// statement, hence one atomic transaction and one round trip.
pub async fn fan_out_once(
    pool: &PgPool,
    consumer: &str,
    source_event_id: Uuid,
    events: &[WebhookEvent],
    lease: Duration,
) -> Result<FanOut, sqlx::Error> {
    let ids: Vec<Uuid> = events.iter().map(|event| event.id).collect();
    let customers: Vec<Uuid> = events.iter().map(|event| event.customer_id).collect();
    let types: Vec<&str> = events.iter().map(|event| event.event_type.as_str()).collect();
    let times: Vec<DateTime<Utc>> = events.iter().map(|event| event.occurred_at).collect();
    let bodies: Vec<&[u8]> = events.iter().map(|event| event.body.as_slice()).collect();
    let parents: Vec<&str> = events.iter().map(|event| event.traceparent.as_str()).collect();
    let states: Vec<&str> = events.iter().map(|event| event.tracestate.as_str()).collect();
    let rows = sqlx::query(concat!(
        "WITH first AS ( \
           INSERT INTO webhooks.processed_events (consumer, event_id) VALUES ($8, $9) \
           ON CONFLICT DO NOTHING RETURNING event_id \
         ), stored AS ( \
           INSERT INTO webhooks.events (id, customer_id, type, occurred_at, body, traceparent, tracestate) \
           SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::bytea[], \
                                $6::text[], $7::text[]) \
           WHERE EXISTS (SELECT 1 FROM first) \
           ON CONFLICT (id) DO NOTHING \
           RETURNING id, customer_id, type, body, traceparent, tracestate \
         ), claimed AS ( \
           INSERT INTO webhooks.deliveries (id, endpoint_id, customer_id, event_id, event_type, origin, status, \
                                            next_attempt_at, lease_token) \
           SELECT gen_random_uuid(), endpoint.id, endpoint.customer_id, stored.id, stored.type, 'fanout', \
                  'pending', now() + make_interval(secs => $10), $11 \
           FROM stored JOIN webhooks.endpoints endpoint \
             ON endpoint.customer_id = stored.customer_id AND endpoint.status = 'active' \
            AND stored.type = ANY(endpoint.events) \
           ON CONFLICT (endpoint_id, event_id) WHERE origin = 'fanout' DO NOTHING \
           RETURNING id, lease_token, endpoint_id, customer_id, event_id, event_type, attempt_count, round_start \
         ), event AS (SELECT * FROM stored) \
         SELECT (SELECT count(*) FROM first) AS first, attempt.* FROM (SELECT 1) AS one \
         LEFT JOIN (SELECT ",
        crate::repo::dispatch::claimed_columns!(),
        " FROM claimed \
           JOIN webhooks.endpoints endpoint ON endpoint.id = claimed.endpoint_id \
           JOIN event ON event.id = claimed.event_id) AS attempt ON true"
    ))
    .bind(&ids)
    .bind(&customers)
    .bind(&types)
    .bind(&times)
    .bind(&bodies)
    .bind(&parents)
    .bind(&states)
    .bind(consumer)
    .bind(source_event_id)
    .bind(lease.as_secs_f64())
    .bind(Uuid::new_v4())
    .fetch_all(pool)
    .await?;
    let first: i64 = match rows.first() {
        Some(row) => row.try_get("first")?,
        None => 0,
    };
    if first == 0 {
        return Ok(FanOut::AlreadyProcessed);
    }
    let mut claimed = Vec::with_capacity(rows.len());
    for row in &rows {
        let id: Option<Uuid> = row.try_get("id")?;
        if id.is_some() {
            claimed.push(crate::repo::dispatch::claimed(row)?);
        }
    }
    Ok(FanOut::Queued(claimed))
}

/// Stores one event without fanning it out (test deliveries).
pub async fn insert(conn: &mut PgConnection, event: &WebhookEvent) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO webhooks.events (id, customer_id, type, occurred_at, body, traceparent, tracestate) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(event.id)
    .bind(event.customer_id)
    .bind(&event.event_type)
    .bind(event.occurred_at)
    .bind(&event.body)
    .bind(&event.traceparent)
    .bind(&event.tracestate)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes events stored more than `days` ago with their deliveries and attempts.
pub async fn prune(pool: &PgPool, days: i32) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "DELETE FROM webhooks.delivery_attempts WHERE delivery_id IN ( \
           SELECT delivery.id FROM webhooks.deliveries delivery JOIN webhooks.events event \
             ON event.id = delivery.event_id \
           WHERE event.stored_at < now() - make_interval(days => $1))",
    )
    .bind(days)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "DELETE FROM webhooks.deliveries WHERE event_id IN ( \
           SELECT id FROM webhooks.events WHERE stored_at < now() - make_interval(days => $1))",
    )
    .bind(days)
    .execute(&mut *tx)
    .await?;
    let deleted =
        sqlx::query("DELETE FROM webhooks.events WHERE stored_at < now() - make_interval(days => $1)")
            .bind(days)
            .execute(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(deleted.rows_affected())
}

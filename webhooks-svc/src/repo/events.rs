//! SQL of stored events: the fan-out (store events, queue one delivery per subscribed active
//! endpoint of the event's customer, wake the dispatcher) and retention.

use crate::domain::WebhookEvent;
use crate::repo::dispatch::Claimed;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::time::Duration;
use uuid::Uuid;

/// Notification channel that wakes the dispatchers.
pub const DISPATCH_CHANNEL: &str = "webhooks_dispatch";

/// Applies a batch of stream events exactly once each, in one statement (one atomic
/// transaction, one round trip, one commit): records every `(consumer, source event id)` in
/// `processed_events` (as `platform::consumer::first_delivery` does) and, for the sources whose
/// record is new, stores their events (`events` pairs each with the id of its source event)
/// and queues a `fanout` delivery for every active endpoint of the same customer subscribed to
/// the type. Sources processed before change nothing; a source repeated inside the batch is
/// applied once. The deliveries are created claimed for `lease` under a fresh lease token and
/// returned with what their attempts need, in the order of `events`, so the caller hands them
/// straight to its dispatcher (no claim round trip); should it not, they fall due when the
/// lease ends.
pub async fn fan_out_batch(
    pool: &PgPool,
    consumer: &str,
    sourced: &[(Uuid, &WebhookEvent)],
    lease: Duration,
) -> Result<Vec<Claimed>, sqlx::Error> {
    if sourced.is_empty() {
        return Ok(Vec::new());
    }
    let sources: Vec<Uuid> = sourced.iter().map(|(source, _)| *source).collect();
    let events: Vec<&WebhookEvent> = sourced.iter().map(|(_, event)| *event).collect();
    let ids: Vec<Uuid> = events.iter().map(|event| event.id).collect();
    let customers: Vec<Uuid> = events.iter().map(|event| event.customer_id).collect();
    let types: Vec<&str> = events.iter().map(|event| event.event_type.as_str()).collect();
    let times: Vec<DateTime<Utc>> = events.iter().map(|event| event.occurred_at).collect();
    let bodies: Vec<&[u8]> = events.iter().map(|event| event.body.as_slice()).collect();
    let parents: Vec<&str> = events.iter().map(|event| event.traceparent.as_str()).collect();
    let states: Vec<&str> = events.iter().map(|event| event.tracestate.as_str()).collect();
    let rows = sqlx::query(concat!(
        "WITH first AS ( \
           INSERT INTO webhooks.processed_events (consumer, event_id) \
           SELECT $9, source FROM UNNEST($8::uuid[]) AS source \
           ON CONFLICT DO NOTHING RETURNING event_id \
         ), stored AS ( \
           INSERT INTO webhooks.events (id, customer_id, type, occurred_at, body, traceparent, tracestate) \
           SELECT id, customer_id, type, occurred_at, body, traceparent, tracestate \
           FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::bytea[], $6::text[], \
                       $7::text[], $8::uuid[]) \
             AS input(id, customer_id, type, occurred_at, body, traceparent, tracestate, source_id) \
           WHERE input.source_id IN (SELECT event_id FROM first) \
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
         SELECT ",
        crate::repo::dispatch::claimed_columns!(),
        " FROM claimed \
         JOIN webhooks.endpoints endpoint ON endpoint.id = claimed.endpoint_id \
         JOIN event ON event.id = claimed.event_id"
    ))
    .bind(&ids)
    .bind(&customers)
    .bind(&types)
    .bind(&times)
    .bind(&bodies)
    .bind(&parents)
    .bind(&states)
    .bind(&sources)
    .bind(consumer)
    .bind(lease.as_secs_f64())
    .bind(Uuid::new_v4())
    .fetch_all(pool)
    .await?;
    let mut claimed = rows
        .iter()
        .map(crate::repo::dispatch::claimed)
        .collect::<Result<Vec<_>, _>>()?;
    // Attempts start in stream order (per endpoint, the order in which events were emitted).
    let position: HashMap<Uuid, usize> = ids.iter().enumerate().map(|(index, id)| (*id, index)).collect();
    claimed.sort_by_key(|delivery| position.get(&delivery.event_id).copied().unwrap_or(usize::MAX));
    Ok(claimed)
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

//! SQL of stored events: the fan-out (store events, queue one delivery per subscribed active
//! endpoint of the event's customer, wake the dispatcher) and retention.

use crate::domain::WebhookEvent;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Notification channel that wakes the dispatchers.
pub const DISPATCH_CHANNEL: &str = "webhooks_dispatch";

/// Stores `events` (skipping ids already stored) and queues a `fanout` delivery for every active
/// endpoint of the same customer subscribed to the type; notifies the dispatchers on commit when
/// anything was queued. Returns the number of deliveries queued. One statement, so it runs in
/// the caller's transaction with nothing else to roll back.
pub async fn store_and_fan_out(conn: &mut PgConnection, events: &[WebhookEvent]) -> Result<i64, sqlx::Error> {
    let ids: Vec<Uuid> = events.iter().map(|event| event.id).collect();
    let customers: Vec<Uuid> = events.iter().map(|event| event.customer_id).collect();
    let types: Vec<&str> = events.iter().map(|event| event.event_type.as_str()).collect();
    let times: Vec<DateTime<Utc>> = events.iter().map(|event| event.occurred_at).collect();
    let bodies: Vec<&[u8]> = events.iter().map(|event| event.body.as_slice()).collect();
    let parents: Vec<&str> = events.iter().map(|event| event.traceparent.as_str()).collect();
    let states: Vec<&str> = events.iter().map(|event| event.tracestate.as_str()).collect();
    let queued: i64 = sqlx::query_scalar(
        "WITH stored AS ( \
           INSERT INTO webhooks.events (id, customer_id, type, occurred_at, body, traceparent, tracestate) \
           SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::bytea[], \
                                $6::text[], $7::text[]) \
           ON CONFLICT (id) DO NOTHING \
           RETURNING id, customer_id, type \
         ), queued AS ( \
           INSERT INTO webhooks.deliveries (id, endpoint_id, customer_id, event_id, event_type, origin, status, \
                                            next_attempt_at) \
           SELECT gen_random_uuid(), endpoint.id, endpoint.customer_id, stored.id, stored.type, 'fanout', \
                  'pending', now() \
           FROM stored JOIN webhooks.endpoints endpoint \
             ON endpoint.customer_id = stored.customer_id AND endpoint.status = 'active' \
            AND stored.type = ANY(endpoint.events) \
           ON CONFLICT (endpoint_id, event_id) WHERE origin = 'fanout' DO NOTHING \
           RETURNING 1 \
         ), counted AS (SELECT count(*) AS queued FROM queued) \
         SELECT counted.queued FROM counted \
         LEFT JOIN LATERAL (SELECT pg_notify($8, '') WHERE counted.queued > 0) AS woken ON true",
    )
    .bind(&ids)
    .bind(&customers)
    .bind(&types)
    .bind(&times)
    .bind(&bodies)
    .bind(&parents)
    .bind(&states)
    .bind(DISPATCH_CHANNEL)
    .fetch_one(conn)
    .await?;
    Ok(queued)
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

/// Deletes events stored more than `days` ago; their deliveries and attempts go with them.
pub async fn prune(pool: &PgPool, days: i32) -> Result<u64, sqlx::Error> {
    let deleted =
        sqlx::query("DELETE FROM webhooks.events WHERE stored_at < now() - make_interval(days => $1)")
            .bind(days)
            .execute(pool)
            .await?;
    Ok(deleted.rows_affected())
}

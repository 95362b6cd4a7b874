//! SQL of deliveries as customers and staff see them: listing with attempts (no N+1), queuing a
//! test delivery, abandoning an endpoint's pending deliveries, redelivering dead ones, and
//! replaying stored events.

use crate::domain::{Attempt, Delivery, DeliveryStatus};
use chrono::{DateTime, Utc};
use platform::pagination::After;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use std::collections::HashMap;
use std::time::Duration;
use uuid::Uuid;

macro_rules! columns {
    () => {
        "id, endpoint_id, event_id, event_type, status, attempt_count, next_attempt_at, created_at"
    };
}

fn delivery(row: &PgRow) -> Result<Delivery, sqlx::Error> {
    let status: String = row.try_get("status")?;
    let next_attempt_at: Option<DateTime<Utc>> = row.try_get("next_attempt_at")?;
    Ok(Delivery {
        id: row.try_get("id")?,
        endpoint_id: row.try_get("endpoint_id")?,
        event_id: row.try_get("event_id")?,
        event_type: row.try_get("event_type")?,
        next_attempt_at: next_attempt_at.filter(|_| status == DeliveryStatus::Pending.as_str()),
        status,
        attempt_count: row.try_get("attempt_count")?,
        created_at: row.try_get("created_at")?,
        attempts: Vec::new(),
    })
}

/// One newest-first page (`limit` rows) of an endpoint's deliveries, with their attempts.
pub async fn list(
    conn: &mut PgConnection,
    customer_id: Uuid,
    endpoint_id: Uuid,
    status: Option<DeliveryStatus>,
    after: Option<After>,
    limit: i64,
) -> Result<Vec<Delivery>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks.deliveries WHERE customer_id = $1 AND endpoint_id = $2 \
           AND ($3::text IS NULL OR status = $3) \
           AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5)) \
         ORDER BY created_at DESC, id DESC LIMIT $6"
    ))
    .bind(customer_id)
    .bind(endpoint_id)
    .bind(status.map(DeliveryStatus::as_str))
    .bind(after.map(|after| after.created_at))
    .bind(after.map(|after| after.id).unwrap_or_default())
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    let mut deliveries = rows.iter().map(delivery).collect::<Result<Vec<_>, _>>()?;
    attach_attempts(conn, &mut deliveries).await?;
    Ok(deliveries)
}

/// One delivery of the customer with its attempts.
pub async fn get(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
) -> Result<Option<Delivery>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks.deliveries WHERE customer_id = $1 AND id = $2"
    ))
    .bind(customer_id)
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let mut deliveries = vec![delivery(&row)?];
    attach_attempts(conn, &mut deliveries).await?;
    Ok(deliveries.pop())
}

/// Loads the attempts of every delivery in one query, oldest attempt first.
async fn attach_attempts(conn: &mut PgConnection, deliveries: &mut [Delivery]) -> Result<(), sqlx::Error> {
    if deliveries.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = deliveries.iter().map(|delivery| delivery.id).collect();
    let rows = sqlx::query(
        "SELECT delivery_id, attempt_number, attempted_at, status_code, latency_ms, error, outcome \
         FROM webhooks.delivery_attempts WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt_number",
    )
    .bind(&ids)
    .fetch_all(conn)
    .await?;
    let mut by_delivery: HashMap<Uuid, Vec<Attempt>> = HashMap::new();
    for row in &rows {
        by_delivery
            .entry(row.try_get("delivery_id")?)
            .or_default()
            .push(Attempt {
                attempt_number: row.try_get("attempt_number")?,
                attempted_at: row.try_get("attempted_at")?,
                status_code: row.try_get("status_code")?,
                latency_ms: row.try_get("latency_ms")?,
                error: row.try_get("error")?,
                outcome: row.try_get("outcome")?,
            });
    }
    for delivery in deliveries {
        delivery.attempts = by_delivery.remove(&delivery.id).unwrap_or_default();
    }
    Ok(())
}

/// A test delivery queued already claimed by its creator.
#[derive(Clone, Debug)]
pub struct ClaimedTestDelivery {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub lease_token: Uuid,
}

/// Queues a `test` delivery already claimed by the caller for `lease`.
pub async fn insert_claimed_test(
    conn: &mut PgConnection,
    test: &ClaimedTestDelivery,
    lease: Duration,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO webhooks.deliveries (id, endpoint_id, customer_id, event_id, event_type, origin, status, \
           next_attempt_at, lease_token) \
         VALUES ($1, $2, $3, $4, $5, 'test', 'pending', now() + make_interval(secs => $6), $7)",
    )
    .bind(test.id)
    .bind(test.endpoint_id)
    .bind(test.customer_id)
    .bind(test.event_id)
    .bind(&test.event_type)
    .bind(lease.as_secs_f64())
    .bind(test.lease_token)
    .execute(conn)
    .await?;
    Ok(())
}

/// Abandons the pending deliveries of the customer's endpoint.
pub async fn abandon_pending(
    conn: &mut PgConnection,
    customer_id: Uuid,
    endpoint_id: Uuid,
) -> Result<u64, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE webhooks.deliveries SET status = 'abandoned', next_attempt_at = NULL, updated_at = now() \
         WHERE customer_id = $1 AND endpoint_id = $2 AND status = 'pending'",
    )
    .bind(customer_id)
    .bind(endpoint_id)
    .execute(conn)
    .await?;
    Ok(result.rows_affected())
}

/// Queues dead deliveries of active endpoints again (of one endpoint, or of all), each with a
/// fresh schedule; wakes the dispatchers. Returns how many were queued.
pub async fn redeliver_dead(conn: &mut PgConnection, endpoint_id: Option<Uuid>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "WITH queued AS ( \
           UPDATE webhooks.deliveries delivery SET status = 'pending', next_attempt_at = now(), \
             round_start = delivery.attempt_count, lease_token = NULL, updated_at = now() \
           FROM webhooks.endpoints endpoint \
           WHERE endpoint.id = delivery.endpoint_id AND endpoint.status = 'active' AND delivery.status = 'dead' \
             AND ($1::uuid IS NULL OR delivery.endpoint_id = $1) \
           RETURNING 1 \
         ), counted AS (SELECT count(*) AS queued FROM queued) \
         SELECT counted.queued FROM counted \
         LEFT JOIN LATERAL (SELECT pg_notify($2, '') WHERE counted.queued > 0) AS woken ON true",
    )
    .bind(endpoint_id)
    .bind(super::events::DISPATCH_CHANNEL)
    .fetch_one(conn)
    .await
}

/// Queues a `replay` delivery to the customer's endpoint for every stored event of that customer
/// since `since` whose type the endpoint subscribes to (keeping the original event ids).
pub async fn replay(
    conn: &mut PgConnection,
    customer_id: Uuid,
    endpoint_id: Uuid,
    since: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "WITH queued AS ( \
           INSERT INTO webhooks.deliveries (id, endpoint_id, customer_id, event_id, event_type, origin, status, \
                                            next_attempt_at) \
           SELECT gen_random_uuid(), endpoint.id, endpoint.customer_id, event.id, event.type, 'replay', \
                  'pending', now() \
           FROM webhooks.endpoints endpoint JOIN webhooks.events event \
             ON event.customer_id = endpoint.customer_id AND event.type = ANY(endpoint.events) \
           WHERE endpoint.customer_id = $1 AND endpoint.id = $2 AND endpoint.status = 'active' \
             AND event.occurred_at >= $3 \
           RETURNING 1 \
         ), counted AS (SELECT count(*) AS queued FROM queued) \
         SELECT counted.queued FROM counted \
         LEFT JOIN LATERAL (SELECT pg_notify($4, '') WHERE counted.queued > 0) AS woken ON true",
    )
    .bind(customer_id)
    .bind(endpoint_id)
    .bind(since)
    .bind(super::events::DISPATCH_CHANNEL)
    .fetch_one(conn)
    .await
}

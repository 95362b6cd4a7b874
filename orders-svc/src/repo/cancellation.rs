//! SQL of cancellation requests (`orders.cancel_requests`). Customer statements filter by
//! `customer_id`; the staff listing reads lab-wide (operators are not tenants).

use super::corrupt;
use crate::domain::cancellation::{CancelRequest, RequestStatus};
use crate::domain::status::OrderStatus;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// `SELECT` of a request with its order's number, then `$tail`.
macro_rules! select_requests {
    ($tail:literal) => {
        concat!(
            "SELECT r.id, r.order_id, o.order_number, r.status, r.reason, r.order_status, \
               r.requested_at, r.decided_at, r.decided_by, r.note, r.charge_cents \
             FROM orders.cancel_requests r JOIN orders.orders o ON o.id = r.order_id ",
            $tail
        )
    };
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    order_id: Uuid,
    order_number: String,
    status: String,
    reason: String,
    order_status: String,
    requested_at: DateTime<Utc>,
    decided_at: Option<DateTime<Utc>>,
    decided_by: Option<String>,
    note: Option<String>,
    charge_cents: Option<i64>,
}

impl Row {
    fn into_request(self) -> Result<CancelRequest, sqlx::Error> {
        Ok(CancelRequest {
            id: self.id,
            order_id: self.order_id,
            order_number: self.order_number,
            status: RequestStatus::parse(&self.status)
                .ok_or_else(|| corrupt("request status", &self.status))?,
            reason: self.reason,
            order_status: OrderStatus::parse(&self.order_status)
                .ok_or_else(|| corrupt("status", &self.order_status))?,
            requested_at: self.requested_at,
            decided_at: self.decided_at,
            decided_by: self.decided_by,
            note: self.note,
            charge_cents: self.charge_cents,
        })
    }
}

/// The order's latest request (pending or decided), locked for the caller's transaction.
pub async fn latest_for_update(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<CancelRequest>, sqlx::Error> {
    let row: Option<Row> = sqlx::query_as(select_requests!(
        "WHERE r.customer_id = $1 AND r.order_id = $2 ORDER BY r.requested_at DESC, r.id DESC LIMIT 1 \
         FOR UPDATE OF r"
    ))
    .bind(customer_id)
    .bind(order_id)
    .fetch_optional(conn)
    .await?;
    row.map(Row::into_request).transpose()
}

/// Stores a new pending request.
pub async fn insert(
    conn: &mut PgConnection,
    customer_id: Uuid,
    request: &CancelRequest,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO orders.cancel_requests (id, customer_id, order_id, reason, status, order_status, requested_at) \
         VALUES ($1, $2, $3, $4, 'pending', $5, $6)",
    )
    .bind(request.id)
    .bind(customer_id)
    .bind(request.order_id)
    .bind(&request.reason)
    .bind(request.order_status.as_str())
    .bind(request.requested_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records the decision of a pending request.
pub async fn decide(
    conn: &mut PgConnection,
    customer_id: Uuid,
    request: &CancelRequest,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE orders.cancel_requests SET status = $3, decided_at = $4, decided_by = $5, note = $6, \
           charge_cents = $7 \
         WHERE customer_id = $1 AND id = $2 AND status = 'pending'",
    )
    .bind(customer_id)
    .bind(request.id)
    .bind(request.status.as_str())
    .bind(request.decided_at)
    .bind(&request.decided_by)
    .bind(&request.note)
    .bind(request.charge_cents)
    .execute(conn)
    .await?;
    Ok(())
}

/// Requests lab-wide for staff: pending ones oldest first, decided ones newest first.
pub async fn list(
    conn: &mut PgConnection,
    status: Option<RequestStatus>,
    limit: i64,
) -> Result<Vec<CancelRequest>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(select_requests!(
        "WHERE ($1::text IS NULL OR r.status = $1) \
         ORDER BY (r.status = 'pending') DESC, \
           CASE WHEN r.status = 'pending' THEN r.requested_at END ASC, \
           r.decided_at DESC, r.id \
         LIMIT $2"
    ))
    .bind(status.map(RequestStatus::as_str))
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(Row::into_request).collect()
}

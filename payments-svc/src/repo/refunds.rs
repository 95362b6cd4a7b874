//! Cancelled orders applied (`payments.order_cancellations`) and refunds (`payments.refunds`).
//! Customer statements filter by customer id; the staff listing and the refund worker read
//! lab-wide, named as such.

use super::bad_value;
use crate::domain::PaymentMethod;
use chrono::{DateTime, Utc};
use platform::money::Cents;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// A refund with its invoice and the paying payment's reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refund {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub payment_id: Uuid,
    pub invoice_id: Uuid,
    pub invoice_number: String,
    pub order_id: Uuid,
    pub order_number: String,
    pub rail: PaymentMethod,
    pub amount: Cents,
    pub currency: String,
    pub status: String,
    pub processor_refund_id: Option<String>,
    pub external_reference: Option<String>,
    /// The paying payment's external reference (payment intent, bank reference, tx hash).
    pub paid_with: String,
    pub failure: Option<String>,
    pub recorded_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    /// Of a sandbox customer's invoice: a card refund goes to the sandbox processor.
    pub sandbox: bool,
}

impl Refund {
    /// The processor's refund id or staff's reference, whichever exists.
    pub fn reference(&self) -> String {
        self.processor_refund_id
            .clone()
            .or_else(|| self.external_reference.clone())
            .unwrap_or_default()
    }
}

macro_rules! select_refunds {
    () => {
        "SELECT r.id, r.customer_id, r.payment_id, r.invoice_id, i.invoice_number, r.order_id, i.order_number, \
           r.rail, r.amount_cents, r.currency, r.status, r.processor_refund_id, r.external_reference, \
           p.external_reference AS paid_with, r.failure, r.recorded_by, r.created_at, r.completed_at, i.sandbox \
         FROM payments.refunds r JOIN payments.invoices i ON i.id = r.invoice_id \
           JOIN payments.payments p ON p.id = r.payment_id "
    };
}

fn refund_from_row(row: &PgRow) -> Result<Refund, sqlx::Error> {
    let rail: String = row.try_get("rail")?;
    Ok(Refund {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        payment_id: row.try_get("payment_id")?,
        invoice_id: row.try_get("invoice_id")?,
        invoice_number: row.try_get("invoice_number")?,
        order_id: row.try_get("order_id")?,
        order_number: row.try_get("order_number")?,
        rail: PaymentMethod::parse(&rail).ok_or_else(|| bad_value("rail", &rail))?,
        amount: Cents(row.try_get("amount_cents")?),
        currency: row.try_get("currency")?,
        status: row.try_get("status")?,
        processor_refund_id: row.try_get("processor_refund_id")?,
        external_reference: row.try_get("external_reference")?,
        paid_with: row.try_get("paid_with")?,
        failure: row.try_get("failure")?,
        recorded_by: row.try_get("recorded_by")?,
        created_at: row.try_get("created_at")?,
        completed_at: row.try_get("completed_at")?,
        sandbox: row.try_get("sandbox")?,
    })
}

/// An order's cancellation as applied.
pub struct AppliedCancellation<'a> {
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub cancel_request_id: &'a str,
    pub charge: Cents,
    /// The order.cancelled event applied.
    pub event_id: &'a str,
    pub invoice_id: Option<Uuid>,
}

/// Records that the cancellation of an order is applied; false (nothing written) when it was
/// already: the caller then changes nothing.
pub async fn claim_cancellation(
    conn: &mut PgConnection,
    applied: &AppliedCancellation<'_>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.order_cancellations \
           (order_id, customer_id, cancel_request_id, charge_cents, event_id, invoice_id, applied_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (order_id) DO NOTHING",
    )
    .bind(applied.order_id)
    .bind(applied.customer_id)
    .bind(applied.cancel_request_id)
    .bind(applied.charge.0)
    .bind(applied.event_id)
    .bind(applied.invoice_id)
    .bind(now)
    .execute(conn)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// The succeeded payments of an invoice, newest first: `(id, rail, amount)`.
pub async fn invoice_payments(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
) -> Result<Vec<(Uuid, PaymentMethod, Cents)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, rail, amount_cents FROM payments.payments \
         WHERE customer_id = $1 AND invoice_id = $2 AND status = 'succeeded' \
         ORDER BY received_at DESC, id DESC",
    )
    .bind(customer_id)
    .bind(invoice_id)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            let rail: String = row.try_get("rail")?;
            Ok((
                row.try_get("id")?,
                PaymentMethod::parse(&rail).ok_or_else(|| bad_value("rail", &rail))?,
                Cents(row.try_get("amount_cents")?),
            ))
        })
        .collect()
}

/// Writes an invoice's state after a cancellation (status, due, credit).
pub async fn credit_invoice(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
    status: &str,
    due: Cents,
    credited: Cents,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.invoices SET previous_status = CASE WHEN status = $3 THEN previous_status ELSE status END, \
           status = $3, amount_due_cents = $4, credited_cents = $5, updated_at = $6 \
         WHERE customer_id = $1 AND id = $2",
    )
    .bind(customer_id)
    .bind(invoice_id)
    .bind(status)
    .bind(due.0)
    .bind(credited.0)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// A refund to store.
pub struct NewRefund {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub invoice_id: Uuid,
    pub payment_id: Uuid,
    pub order_id: Uuid,
    pub rail: PaymentMethod,
    pub amount: Cents,
    pub currency: String,
    /// `pending` (card) or `due` (bank, stablecoin).
    pub status: &'static str,
}

/// Stores a refund; false when its payment already has one.
pub async fn insert(
    conn: &mut PgConnection,
    refund: &NewRefund,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.refunds (id, customer_id, invoice_id, payment_id, order_id, rail, amount_cents, \
           currency, status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) ON CONFLICT (payment_id) DO NOTHING",
    )
    .bind(refund.id)
    .bind(refund.customer_id)
    .bind(refund.invoice_id)
    .bind(refund.payment_id)
    .bind(refund.order_id)
    .bind(refund.rail.as_str())
    .bind(refund.amount.0)
    .bind(&refund.currency)
    .bind(refund.status)
    .bind(now)
    .execute(conn)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// Lab-wide (the refund worker): pending card refunds the processor has not answered yet, or
/// answered `pending` longer ago than `stale_before`, oldest first, locked (skipping locked rows).
pub async fn lock_pending(
    conn: &mut PgConnection,
    stale_before: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Refund>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        select_refunds!(),
        "WHERE r.status = 'pending' AND (r.processor_refund_id IS NULL OR r.updated_at <= $1) \
         ORDER BY r.created_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED"
    ))
    .bind(stale_before)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(refund_from_row).collect()
}

/// Lab-wide: one refund by id, locked.
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> Result<Option<Refund>, sqlx::Error> {
    let row = sqlx::query(concat!(select_refunds!(), "WHERE r.id = $1 FOR UPDATE OF r"))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| refund_from_row(&row)).transpose()
}

/// A refund's new status and what the processor or staff said (`None` keeps a field).
#[derive(Default)]
pub struct RefundChange<'a> {
    pub status: &'a str,
    pub processor_refund_id: Option<&'a str>,
    pub external_reference: Option<&'a str>,
    pub recorded_by: Option<&'a str>,
    /// Replaces the last failure (`None` clears it).
    pub failure: Option<&'a str>,
}

/// Writes a refund's new status.
pub async fn update(
    conn: &mut PgConnection,
    id: Uuid,
    change: &RefundChange<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.refunds SET status = $2, \
           processor_refund_id = COALESCE($3, processor_refund_id), \
           external_reference = COALESCE($4, external_reference), \
           recorded_by = COALESCE($5, recorded_by), failure = $6, attempts = attempts + 1, updated_at = $7, \
           completed_at = CASE WHEN $2 IN ('succeeded', 'failed') THEN $7 ELSE completed_at END \
         WHERE id = $1",
    )
    .bind(id)
    .bind(change.status)
    .bind(change.processor_refund_id)
    .bind(change.external_reference)
    .bind(change.recorded_by)
    .bind(change.failure)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Lab-wide for staff: refunds needing a hand (`due`, `failed`) first, oldest first; then the rest
/// newest first.
pub async fn list(
    conn: &mut PgConnection,
    status: Option<&str>,
    limit: i64,
) -> Result<Vec<Refund>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        select_refunds!(),
        "WHERE ($1::text IS NULL OR r.status = $1) \
         ORDER BY (r.status IN ('due', 'failed')) DESC, \
           CASE WHEN r.status IN ('due', 'failed') THEN r.created_at END ASC, r.created_at DESC, r.id \
         LIMIT $2"
    ))
    .bind(status)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(refund_from_row).collect()
}

/// The customer's refunds of one order (oldest first).
pub async fn of_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<Refund>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        select_refunds!(),
        "WHERE r.customer_id = $1 AND r.order_id = $2 ORDER BY r.created_at, r.id"
    ))
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    rows.iter().map(refund_from_row).collect()
}

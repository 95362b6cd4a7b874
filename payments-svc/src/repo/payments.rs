//! Payments recorded against invoices.

use super::bad_value;
use crate::domain::{Payment, PaymentMethod};
use platform::money::Cents;
use platform::pagination::After;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

macro_rules! select_payments {
    () => {
        "SELECT p.id, p.customer_id, p.invoice_id, i.invoice_number, i.order_id, i.order_number, p.rail, \
         p.status, p.amount_cents, p.currency, p.external_reference, p.received_at, p.created_at, \
         p.recorded_by \
         FROM payments.payments p JOIN payments.invoices i ON i.id = p.invoice_id "
    };
}

/// Inserts a payment; false (and nothing written) when its rail already has a payment with the
/// same external reference (`payments_rail_external_reference_key`). A concurrent insert of the
/// same reference is waited for, then yields false.
pub async fn insert(conn: &mut PgConnection, payment: &Payment) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.payments (id, customer_id, invoice_id, rail, status, amount_cents, currency, \
           external_reference, received_at, created_at, recorded_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT ON CONSTRAINT payments_rail_external_reference_key DO NOTHING",
    )
    .bind(payment.id)
    .bind(payment.customer_id)
    .bind(payment.invoice_id)
    .bind(payment.rail.as_str())
    .bind(&payment.status)
    .bind(payment.amount.0)
    .bind(&payment.currency)
    .bind(&payment.external_reference)
    .bind(payment.received_at)
    .bind(payment.created_at)
    .bind(&payment.recorded_by)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Staff lookup across customers: the payment of `rail` with this external reference.
pub async fn by_external_reference(
    conn: &mut PgConnection,
    rail: PaymentMethod,
    reference: &str,
) -> Result<Option<Payment>, sqlx::Error> {
    let query = concat!(
        select_payments!(),
        "WHERE p.rail = $1 AND p.external_reference = $2"
    );
    let row = sqlx::query(query)
        .bind(rail.as_str())
        .bind(reference)
        .fetch_optional(conn)
        .await?;
    row.map(|row| payment_from_row(&row)).transpose()
}

/// The customer's payment with this id.
pub async fn by_id(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
) -> Result<Option<Payment>, sqlx::Error> {
    let query = concat!(select_payments!(), "WHERE p.customer_id = $1 AND p.id = $2");
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| payment_from_row(&row)).transpose()
}

/// One newest-first page of the customer's payments, optionally of one invoice.
pub async fn list(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Option<Uuid>,
    after: Option<After>,
    limit: i64,
) -> Result<Vec<Payment>, sqlx::Error> {
    let query = concat!(
        select_payments!(),
        "WHERE p.customer_id = $1 AND ($2::uuid IS NULL OR p.invoice_id = $2) \
         AND ($3::timestamptz IS NULL OR (p.created_at, p.id) < ($3, $4::uuid)) \
         ORDER BY p.created_at DESC, p.id DESC LIMIT $5"
    );
    let rows = sqlx::query(query)
        .bind(customer_id)
        .bind(invoice_id)
        .bind(after.map(|after| after.created_at))
        .bind(after.map(|after| after.id))
        .bind(limit)
        .fetch_all(conn)
        .await?;
    rows.iter().map(payment_from_row).collect()
}

fn payment_from_row(row: &PgRow) -> Result<Payment, sqlx::Error> {
    let rail: String = row.try_get("rail")?;
    Ok(Payment {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        invoice_id: row.try_get("invoice_id")?,
        invoice_number: row.try_get("invoice_number")?,
        order_id: row.try_get("order_id")?,
        order_number: row.try_get("order_number")?,
        rail: PaymentMethod::parse(&rail).ok_or_else(|| bad_value("rail", &rail))?,
        status: row.try_get("status")?,
        amount: Cents(row.try_get("amount_cents")?),
        currency: row.try_get("currency")?,
        external_reference: row.try_get("external_reference")?,
        received_at: row.try_get("received_at")?,
        created_at: row.try_get("created_at")?,
        recorded_by: row.try_get("recorded_by")?,
    })
}

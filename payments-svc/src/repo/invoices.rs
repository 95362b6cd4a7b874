//! Invoices and their lines.

use super::bad_value;
use crate::domain::payment::Settlement;
use crate::domain::{BankInstructions, Invoice, InvoiceLine, InvoiceReference, InvoiceStatus, PaymentMethod};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use platform::pagination::After;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{PgConnection, Row};
use std::collections::HashMap;
use uuid::Uuid;

macro_rules! select_invoices {
    () => {
        "SELECT id, invoice_number, customer_id, order_id, order_number, status, previous_status, \
         payment_method, currency, total_cents, amount_paid_cents, amount_due_cents, bank_instructions, \
         issued_at, due_at, paid_at, created_at, addon_id, sandbox FROM payments.invoices "
    };
}

/// Draws the next value of the invoice number sequence.
pub async fn next_invoice_sequence(conn: &mut PgConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT nextval('payments.invoice_number_seq')")
        .fetch_one(conn)
        .await
}

/// Inserts an invoice and its lines; false (and nothing written) when the customer's order already
/// has an invoice. A concurrent insert for the same order is waited for, then yields false.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT payments.invoices", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT", db.collection.name = "payments.invoices"))]
pub async fn insert_invoice(conn: &mut PgConnection, invoice: &Invoice) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.invoices (id, invoice_number, customer_id, order_id, order_number, status, \
           previous_status, payment_method, currency, total_cents, amount_paid_cents, amount_due_cents, \
           bank_instructions, issued_at, due_at, paid_at, created_at, updated_at, addon_id, sandbox) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17, $18, $19) \
         ON CONFLICT DO NOTHING",
    )
    .bind(invoice.id)
    .bind(&invoice.invoice_number)
    .bind(invoice.customer_id)
    .bind(invoice.order_id)
    .bind(&invoice.order_number)
    .bind(invoice.status.as_str())
    .bind(
        invoice
            .previous_status
            .map(InvoiceStatus::as_str)
            .unwrap_or_default(),
    )
    .bind(invoice.payment_method.as_str())
    .bind(&invoice.currency)
    .bind(invoice.total.0)
    .bind(invoice.amount_paid.0)
    .bind(invoice.amount_due.0)
    .bind(invoice.bank_instructions.as_ref().map(Json))
    .bind(invoice.issued_at)
    .bind(invoice.due_at)
    .bind(invoice.paid_at)
    .bind(invoice.created_at)
    .bind(invoice.addon_id)
    .bind(invoice.sandbox)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(false);
    }
    let numbers: Vec<i32> = (1..).take(invoice.lines.len()).collect();
    let descriptions: Vec<&str> = invoice
        .lines
        .iter()
        .map(|line| line.description.as_str())
        .collect();
    let quantities: Vec<i64> = invoice.lines.iter().map(|line| line.quantity).collect();
    let unit_prices: Vec<i64> = invoice.lines.iter().map(|line| line.unit_price.0).collect();
    let amounts: Vec<i64> = invoice.lines.iter().map(|line| line.amount.0).collect();
    sqlx::query(
        "INSERT INTO payments.invoice_lines (invoice_id, line_number, description, quantity, unit_price_cents, amount_cents) \
         SELECT $1, * FROM UNNEST($2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])",
    )
    .bind(invoice.id)
    .bind(&numbers)
    .bind(&descriptions)
    .bind(&quantities)
    .bind(&unit_prices)
    .bind(&amounts)
    .execute(conn)
    .await?;
    Ok(true)
}

/// The customer's invoice of `order_id`, with lines.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT payments.invoices", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "payments.invoices"))]
pub async fn by_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<Invoice>, sqlx::Error> {
    let query = concat!(
        select_invoices!(),
        "WHERE customer_id = $1 AND order_id = $2 AND addon_id IS NULL"
    );
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(order_id)
        .fetch_optional(&mut *conn)
        .await?;
    with_lines(conn, customer_id, row).await
}

/// The unpaid supplementary invoices of the customer's order (open or overdue, nothing paid),
/// locked, with lines.
pub async fn lock_unpaid_addon_invoices(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<Invoice>, sqlx::Error> {
    let query = concat!(
        select_invoices!(),
        "WHERE customer_id = $1 AND order_id = $2 AND addon_id IS NOT NULL \
           AND status IN ('open', 'overdue') AND amount_paid_cents = 0 ORDER BY id FOR UPDATE"
    );
    let rows = sqlx::query(query)
        .bind(customer_id)
        .bind(order_id)
        .fetch_all(&mut *conn)
        .await?;
    let mut invoices = rows.iter().map(invoice_from_row).collect::<Result<Vec<_>, _>>()?;
    attach_lines(conn, customer_id, &mut invoices).await?;
    Ok(invoices)
}

/// The customer's supplementary invoice of add-on `addon_id`, with lines.
pub async fn by_addon(
    conn: &mut PgConnection,
    customer_id: Uuid,
    addon_id: Uuid,
) -> Result<Option<Invoice>, sqlx::Error> {
    let query = concat!(select_invoices!(), "WHERE customer_id = $1 AND addon_id = $2");
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(addon_id)
        .fetch_optional(&mut *conn)
        .await?;
    with_lines(conn, customer_id, row).await
}

/// The customer's invoice named by a reference: its UUID, its order's UUID, or its number.
pub async fn by_reference(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &InvoiceReference,
) -> Result<Option<Invoice>, sqlx::Error> {
    let (id, number) = split(reference);
    let query = concat!(
        select_invoices!(),
        "WHERE customer_id = $1 AND (id = $2 OR (order_id = $2 AND addon_id IS NULL) OR invoice_number = $3) \
         ORDER BY id LIMIT 1"
    );
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(id)
        .bind(number)
        .fetch_optional(&mut *conn)
        .await?;
    with_lines(conn, customer_id, row).await
}

/// The customer's invoice of an order named by the order's UUID or number, or by the invoice's
/// UUID or number (what `POST /payments/prepare` accepts), with lines.
pub async fn by_order_reference(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &InvoiceReference,
) -> Result<Option<Invoice>, sqlx::Error> {
    let (id, number) = split(reference);
    let query = concat!(
        select_invoices!(),
        "WHERE customer_id = $1 AND (id = $2 OR invoice_number = $3 \
           OR (addon_id IS NULL AND (order_id = $2 OR order_number = $3))) \
         ORDER BY id LIMIT 1"
    );
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(id)
        .bind(number)
        .fetch_optional(&mut *conn)
        .await?;
    with_lines(conn, customer_id, row).await
}

/// The customer's invoice `invoice_id`, locked for update (without lines).
pub async fn lock_by_id(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
) -> Result<Option<Invoice>, sqlx::Error> {
    let query = concat!(
        select_invoices!(),
        "WHERE customer_id = $1 AND id = $2 FOR UPDATE"
    );
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(invoice_id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| invoice_from_row(&row)).transpose()
}

/// Moves up to `limit` open bank invoices due by `now` to `overdue` (previous status `open`),
/// returning their ids and customers. Rows locked by a concurrent payment are skipped this round.
pub async fn mark_overdue(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<(Uuid, Uuid)>, sqlx::Error> {
    let rows = sqlx::query(
        "UPDATE payments.invoices SET status = $4, previous_status = status, updated_at = $1 \
         WHERE id IN (SELECT id FROM payments.invoices WHERE status = $5 AND payment_method = $3 \
                      AND due_at <= $1 ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING id, customer_id",
    )
    .bind(now)
    .bind(limit)
    .bind(PaymentMethod::BankInvoice.as_str())
    .bind(InvoiceStatus::Overdue.as_str())
    .bind(InvoiceStatus::Open.as_str())
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("id")?, row.try_get("customer_id")?)))
        .collect()
}

/// Staff lookup across customers: the invoice with this UUID or number, locked for update
/// (without lines), so that concurrent payments apply one after the other.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT payments.invoices", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "payments.invoices"))]
pub async fn lock_for_payment(
    conn: &mut PgConnection,
    reference: &InvoiceReference,
) -> Result<Option<Invoice>, sqlx::Error> {
    let (id, number) = split(reference);
    let query = concat!(
        select_invoices!(),
        "WHERE id = $1 OR invoice_number = $2 LIMIT 1 FOR UPDATE"
    );
    let row = sqlx::query(query)
        .bind(id)
        .bind(number)
        .fetch_optional(conn)
        .await?;
    row.map(|row| invoice_from_row(&row)).transpose()
}

/// Writes the money state after a payment; `paid_at` is set when the payment completed it.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "UPDATE payments.invoices", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "UPDATE", db.collection.name = "payments.invoices"))]
pub async fn apply_settlement(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
    settlement: &Settlement,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.invoices SET amount_paid_cents = $3, amount_due_cents = $4, updated_at = $5, \
           status = CASE WHEN $6 THEN $7 ELSE status END, \
           previous_status = CASE WHEN $6 THEN status ELSE previous_status END, \
           paid_at = CASE WHEN $6 THEN $5 ELSE paid_at END \
         WHERE customer_id = $1 AND id = $2",
    )
    .bind(customer_id)
    .bind(invoice_id)
    .bind(settlement.paid.0)
    .bind(settlement.due.0)
    .bind(now)
    .bind(settlement.completes)
    .bind(InvoiceStatus::Paid.as_str())
    .execute(conn)
    .await?;
    Ok(())
}

/// Filters of the invoice listing.
#[derive(Clone, Debug, Default)]
pub struct InvoiceFilter {
    pub status: Option<InvoiceStatus>,
    pub order_id: Option<Uuid>,
}

/// One newest-first page of the customer's invoices with their lines (`limit` rows at most).
pub async fn list(
    conn: &mut PgConnection,
    customer_id: Uuid,
    filter: &InvoiceFilter,
    after: Option<After>,
    limit: i64,
) -> Result<Vec<Invoice>, sqlx::Error> {
    let query = concat!(
        select_invoices!(),
        "WHERE customer_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::uuid IS NULL OR order_id = $3) \
         AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid)) \
         ORDER BY created_at DESC, id DESC LIMIT $6"
    );
    let rows = sqlx::query(query)
        .bind(customer_id)
        .bind(filter.status.map(InvoiceStatus::as_str))
        .bind(filter.order_id)
        .bind(after.map(|after| after.created_at))
        .bind(after.map(|after| after.id))
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
    let mut invoices = rows.iter().map(invoice_from_row).collect::<Result<Vec<_>, _>>()?;
    attach_lines(conn, customer_id, &mut invoices).await?;
    Ok(invoices)
}

fn split(reference: &InvoiceReference) -> (Option<Uuid>, Option<&str>) {
    match reference {
        InvoiceReference::Id(id) => (Some(*id), None),
        InvoiceReference::Text(number) => (None, Some(number.as_str())),
    }
}

async fn with_lines(
    conn: &mut PgConnection,
    customer_id: Uuid,
    row: Option<PgRow>,
) -> Result<Option<Invoice>, sqlx::Error> {
    let Some(row) = row else { return Ok(None) };
    let mut invoices = vec![invoice_from_row(&row)?];
    attach_lines(conn, customer_id, &mut invoices).await?;
    Ok(invoices.pop())
}

/// Loads the lines of every invoice of a page in one query.
pub async fn attach_lines(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoices: &mut [Invoice],
) -> Result<(), sqlx::Error> {
    if invoices.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = invoices.iter().map(|invoice| invoice.id).collect();
    let rows = sqlx::query(
        "SELECT l.invoice_id, l.description, l.quantity, l.unit_price_cents, l.amount_cents \
         FROM payments.invoice_lines l JOIN payments.invoices i ON i.id = l.invoice_id \
         WHERE i.customer_id = $1 AND l.invoice_id = ANY($2) ORDER BY l.invoice_id, l.line_number",
    )
    .bind(customer_id)
    .bind(&ids)
    .fetch_all(conn)
    .await?;
    let mut by_invoice: HashMap<Uuid, Vec<InvoiceLine>> = HashMap::new();
    for row in rows {
        by_invoice
            .entry(row.try_get("invoice_id")?)
            .or_default()
            .push(InvoiceLine {
                description: row.try_get("description")?,
                quantity: row.try_get("quantity")?,
                unit_price: Cents(row.try_get("unit_price_cents")?),
                amount: Cents(row.try_get("amount_cents")?),
            });
    }
    for invoice in invoices {
        invoice.lines = by_invoice.remove(&invoice.id).unwrap_or_default();
    }
    Ok(())
}

fn invoice_from_row(row: &PgRow) -> Result<Invoice, sqlx::Error> {
    let status: String = row.try_get("status")?;
    let previous: String = row.try_get("previous_status")?;
    let method: String = row.try_get("payment_method")?;
    let previous_status = match previous.as_str() {
        "" => None,
        other => Some(InvoiceStatus::parse(other).ok_or_else(|| bad_value("previous_status", other))?),
    };
    let bank: Option<Json<BankInstructions>> = row.try_get("bank_instructions")?;
    Ok(Invoice {
        id: row.try_get("id")?,
        invoice_number: row.try_get("invoice_number")?,
        customer_id: row.try_get("customer_id")?,
        order_id: row.try_get("order_id")?,
        order_number: row.try_get("order_number")?,
        status: InvoiceStatus::parse(&status).ok_or_else(|| bad_value("status", &status))?,
        previous_status,
        payment_method: PaymentMethod::parse(&method).ok_or_else(|| bad_value("payment_method", &method))?,
        currency: row.try_get("currency")?,
        lines: Vec::new(),
        total: Cents(row.try_get("total_cents")?),
        amount_paid: Cents(row.try_get("amount_paid_cents")?),
        amount_due: Cents(row.try_get("amount_due_cents")?),
        issued_at: row.try_get("issued_at")?,
        due_at: row.try_get("due_at")?,
        paid_at: row.try_get("paid_at")?,
        bank_instructions: bank.map(|Json(instructions)| instructions),
        created_at: row.try_get("created_at")?,
        sandbox: row.try_get("sandbox")?,
        checkout: None,
        addon_id: row.try_get("addon_id")?,
    })
}

//! Writes: placing an order with its lines, charges and first history entry, status changes and
//! the payment block.

use super::corrupt;
use crate::domain::order::{Order, PaymentSummary, StatusChange};
use crate::domain::status::OrderStatus;
use chrono::{DateTime, Utc};
use proto::common::InvoiceStatus;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// True when the customer's quote was already used by an order.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT orders.orders", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "orders.orders"))]
pub async fn quote_consumed(
    conn: &mut PgConnection,
    customer_id: Uuid,
    quote_id: Uuid,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM orders.orders WHERE customer_id = $1 AND quote_id = $2)")
        .bind(customer_id)
        .bind(quote_id)
        .fetch_one(conn)
        .await
}

/// Draws the next order-number sequence value.
pub async fn next_order_sequence(conn: &mut PgConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT nextval('orders.order_number_seq')")
        .fetch_one(conn)
        .await
}

/// Inserts an order with its lines, charges and status history. Fails with a unique violation of
/// [`super::QUOTE_UNIQUE_CONSTRAINT`] when the quote already has an order.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT orders.orders", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT", db.collection.name = "orders.orders"))]
pub async fn insert_order(conn: &mut PgConnection, order: &Order) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO orders.orders (id, order_number, customer_id, quote_id, status, payment_method, catalog_revision, \
           category_id, turnaround, turnaround_business_days, conformity_samples, client_reference, notes, \
           publish_raw_data, expected_payer_address, billing_address_id, shipping_address_id, total_cents, currency, \
           created_at, updated_at, quote_expires_at, sandbox) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)",
    )
    .bind(order.id)
    .bind(&order.order_number)
    .bind(order.customer_id)
    .bind(order.quote_id)
    .bind(order.status.as_str())
    .bind(order.payment_method.as_str())
    .bind(&order.catalog_revision)
    .bind(&order.category_id)
    .bind(&order.turnaround)
    .bind(order.turnaround_business_days)
    .bind(order.conformity_samples)
    .bind(&order.client_reference)
    .bind(&order.notes)
    .bind(order.publish_raw_data)
    .bind(&order.expected_payer_address)
    .bind(order.billing_address_id)
    .bind(order.shipping_address_id)
    .bind(order.total.0)
    .bind(&order.currency)
    .bind(order.created_at)
    .bind(order.updated_at)
    .bind(order.quote_expires_at)
    .bind(order.sandbox)
    .execute(&mut *conn)
    .await?;
    insert_lines(conn, order).await?;
    insert_charges(conn, order).await?;
    for change in &order.status_history {
        insert_status_change(conn, order.customer_id, order.id, change).await?;
    }
    Ok(())
}

async fn insert_lines(conn: &mut PgConnection, order: &Order) -> Result<(), sqlx::Error> {
    let lines = &order.lines;
    let to_json = |value: serde_json::Result<serde_json::Value>| {
        value.map_err(|error| sqlx::Error::Encode(error.into()))
    };
    let items = lines
        .iter()
        .map(|line| to_json(serde_json::to_value(&line.items)))
        .collect::<Result<Vec<_>, _>>()?;
    let requirements = lines
        .iter()
        .map(|line| to_json(serde_json::to_value(&line.sample_requirements)))
        .collect::<Result<Vec<_>, _>>()?;
    sqlx::query(
        "INSERT INTO orders.order_lines (order_id, customer_id, line_number, compound_name, lot_number, matrix_notes, \
           items, sample_requirements, subtotal_cents) \
         SELECT $1, $2, * FROM UNNEST($3::int4[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[], $9::int8[])",
    )
    .bind(order.id)
    .bind(order.customer_id)
    .bind(lines.iter().map(|line| line.line_number).collect::<Vec<_>>())
    .bind(lines.iter().map(|line| line.compound_name.clone()).collect::<Vec<_>>())
    .bind(lines.iter().map(|line| line.lot_number.clone()).collect::<Vec<_>>())
    .bind(lines.iter().map(|line| line.matrix_notes.clone()).collect::<Vec<_>>())
    .bind(items)
    .bind(requirements)
    .bind(lines.iter().map(|line| line.subtotal.0).collect::<Vec<_>>())
    .execute(conn)
    .await?;
    Ok(())
}

async fn insert_charges(conn: &mut PgConnection, order: &Order) -> Result<(), sqlx::Error> {
    let charges = &order.charges;
    sqlx::query(
        "INSERT INTO orders.order_charges (order_id, customer_id, position, kind, description, quantity, \
           unit_price_cents, amount_cents) \
         SELECT $1, $2, * FROM UNNEST($3::int4[], $4::text[], $5::text[], $6::int8[], $7::int8[], $8::int8[])",
    )
    .bind(order.id)
    .bind(order.customer_id)
    .bind((1..=charges.len() as i32).collect::<Vec<_>>())
    .bind(charges.iter().map(|charge| charge.kind.clone()).collect::<Vec<_>>())
    .bind(charges.iter().map(|charge| charge.description.clone()).collect::<Vec<_>>())
    .bind(charges.iter().map(|charge| charge.quantity).collect::<Vec<_>>())
    .bind(charges.iter().map(|charge| charge.unit_price.0).collect::<Vec<_>>())
    .bind(charges.iter().map(|charge| charge.amount.0).collect::<Vec<_>>())
    .execute(conn)
    .await?;
    Ok(())
}

/// Appends one status-history entry.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT orders.order_status_history", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT", db.collection.name = "orders.order_status_history"))]
pub async fn insert_status_change(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    change: &StatusChange,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO orders.order_status_history (order_id, customer_id, from_status, to_status, changed_at, reason) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(order_id)
    .bind(customer_id)
    .bind(change.from.map(OrderStatus::as_str).unwrap_or_default())
    .bind(change.to.as_str())
    .bind(change.changed_at)
    .bind(&change.reason)
    .execute(conn)
    .await?;
    Ok(())
}

/// Locks a customer's order for a status change; returns its status and number.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT orders.orders", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "orders.orders"))]
pub async fn lock_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<(OrderStatus, String)>, sqlx::Error> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT status, order_number FROM orders.orders WHERE customer_id = $1 AND id = $2 FOR UPDATE",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_optional(conn)
    .await?;
    row.map(|(status, number)| {
        Ok((
            OrderStatus::parse(&status).ok_or_else(|| corrupt("status", &status))?,
            number,
        ))
    })
    .transpose()
}

/// Sets a customer's order status.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "UPDATE orders.orders", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "UPDATE", db.collection.name = "orders.orders"))]
pub async fn set_status(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    status: OrderStatus,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE orders.orders SET status = $3, updated_at = $4 WHERE customer_id = $1 AND id = $2")
        .bind(customer_id)
        .bind(order_id)
        .bind(status.as_str())
        .bind(at)
        .execute(conn)
        .await?;
    Ok(())
}

/// How [`store_invoice_summary`] treats a payment block that already exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvoiceMerge {
    /// Write the summary (the synchronous answer of payments-svc); a `paid` status already
    /// learned from an event stays paid.
    Overwrite,
    /// Write only when the order has no payment block yet (the `invoice.created` backstop).
    OnlyIfAbsent,
}

/// Stores the payment block of a customer's order; returns whether a row changed.
pub async fn store_invoice_summary(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    summary: &PaymentSummary,
    merge: InvoiceMerge,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE orders.orders SET invoice_id = $3, invoice_number = $4, \
           invoice_status = CASE WHEN invoice_status = $12 THEN invoice_status ELSE $5 END, \
           amount_due_cents = CASE WHEN invoice_status = $12 THEN amount_due_cents ELSE $6 END, \
           invoice_due_at = $7, bank_instructions = $8, updated_at = now(), \
           hosted_url = COALESCE($10, hosted_url), checkout_expires_at = COALESCE($11, checkout_expires_at) \
         WHERE customer_id = $1 AND id = $2 AND (NOT $9 OR invoice_id IS NULL)",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(&summary.invoice_id)
    .bind(&summary.invoice_number)
    .bind(summary.status.as_str())
    .bind(summary.amount_due.0)
    .bind(summary.due_at)
    .bind(summary.bank_instructions.as_ref().map(Json))
    .bind(merge == InvoiceMerge::OnlyIfAbsent)
    .bind(&summary.hosted_url)
    .bind(summary.checkout_expires_at)
    .bind(InvoiceStatus::Paid.as_str())
    .execute(conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Stores the stablecoin payment request issued with a customer's order (chain_stablecoin rail).
pub async fn store_stablecoin_request(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    request: &crate::domain::order::StablecoinRequest,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE orders.orders SET stablecoin_request = $3, updated_at = now() \
         WHERE customer_id = $1 AND id = $2",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(Json(request))
    .execute(conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Sets the invoice status and amount due of a customer's order's payment block. When the block
/// is still missing (the synchronous answer has not been stored yet), the invoice id and number
/// given here start it.
pub async fn set_invoice_status(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    invoice: (&str, &str),
    status: InvoiceStatus,
    amount_due_cents: i64,
) -> Result<bool, sqlx::Error> {
    let (invoice_id, invoice_number) = invoice;
    let result = sqlx::query(
        "UPDATE orders.orders SET invoice_status = $5, amount_due_cents = $6, updated_at = now(), \
           invoice_id = COALESCE(invoice_id, $3), invoice_number = COALESCE(invoice_number, $4) \
         WHERE customer_id = $1 AND id = $2",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(invoice_id)
    .bind(invoice_number)
    .bind(status.as_str())
    .bind(amount_due_cents)
    .execute(conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

//! SQL of add-ons (`orders.addons`). Every statement filters by `customer_id`, except the
//! lookups by add-on id that events name (their customer is checked by the caller).

use super::corrupt;
use crate::domain::addon::{Addon, AddonInvoice, AddonStatus, AddonTest};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// `SELECT` of an add-on with its order's number, then `$tail`.
macro_rules! select_addons {
    ($tail:literal) => {
        concat!(
            "SELECT a.id, a.order_id, o.order_number, a.line_number, a.accession_number, a.status, \
               a.tests, a.total_cents, a.currency, a.catalog_revision, a.requested_at, a.paid_at, \
               a.reported_at, a.invoice \
             FROM orders.addons a JOIN orders.orders o ON o.id = a.order_id ",
            $tail
        )
    };
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    order_id: Uuid,
    order_number: String,
    line_number: i32,
    accession_number: String,
    status: String,
    tests: Json<Vec<AddonTest>>,
    total_cents: i64,
    currency: String,
    catalog_revision: String,
    requested_at: DateTime<Utc>,
    paid_at: Option<DateTime<Utc>>,
    reported_at: Option<DateTime<Utc>>,
    invoice: Option<Json<AddonInvoice>>,
}

impl Row {
    fn into_addon(self) -> Result<Addon, sqlx::Error> {
        Ok(Addon {
            id: self.id,
            order_id: self.order_id,
            order_number: self.order_number,
            line_number: self.line_number,
            accession_number: self.accession_number,
            status: AddonStatus::parse(&self.status).ok_or_else(|| corrupt("add-on status", &self.status))?,
            tests: self.tests.0,
            total: Cents(self.total_cents),
            currency: self.currency,
            catalog_revision: self.catalog_revision,
            requested_at: Some(self.requested_at),
            paid_at: self.paid_at,
            reported_at: self.reported_at,
            invoice: self.invoice.map(|Json(invoice)| invoice),
        })
    }
}

/// Stores a new add-on (status `pending_payment`, no invoice yet).
pub async fn insert(conn: &mut PgConnection, customer_id: Uuid, addon: &Addon) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO orders.addons (id, customer_id, order_id, line_number, accession_number, status, tests, \
           total_cents, currency, catalog_revision, requested_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(addon.id)
    .bind(customer_id)
    .bind(addon.order_id)
    .bind(addon.line_number)
    .bind(&addon.accession_number)
    .bind(addon.status.as_str())
    .bind(Json(&addon.tests))
    .bind(addon.total.0)
    .bind(&addon.currency)
    .bind(&addon.catalog_revision)
    .bind(addon.requested_at.unwrap_or_else(platform::time::now))
    .execute(conn)
    .await?;
    Ok(())
}

/// The add-ons of a customer's order, oldest first.
pub async fn of_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<Addon>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(select_addons!(
        "WHERE a.customer_id = $1 AND a.order_id = $2 ORDER BY a.requested_at, a.id"
    ))
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(Row::into_addon).collect()
}

/// A customer's add-on, locked for the caller's transaction.
pub async fn lock(
    conn: &mut PgConnection,
    customer_id: Uuid,
    addon_id: Uuid,
) -> Result<Option<Addon>, sqlx::Error> {
    let row: Option<Row> = sqlx::query_as(select_addons!(
        "WHERE a.customer_id = $1 AND a.id = $2 FOR UPDATE OF a"
    ))
    .bind(customer_id)
    .bind(addon_id)
    .fetch_optional(conn)
    .await?;
    row.map(Row::into_addon).transpose()
}

/// Stores the supplementary invoice as last known.
pub async fn store_invoice(
    conn: &mut PgConnection,
    customer_id: Uuid,
    addon_id: Uuid,
    invoice: &AddonInvoice,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE orders.addons SET invoice = $3 WHERE customer_id = $1 AND id = $2")
        .bind(customer_id)
        .bind(addon_id)
        .bind(Json(invoice))
        .execute(conn)
        .await?;
    Ok(())
}

/// Moves an add-on to `status`, stamping `paid_at` or `reported_at` when it gets there.
pub async fn set_status(
    conn: &mut PgConnection,
    customer_id: Uuid,
    addon_id: Uuid,
    status: AddonStatus,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE orders.addons SET status = $3, \
           paid_at = CASE WHEN $3 IN ('paid', 'in_testing') THEN COALESCE(paid_at, $4) ELSE paid_at END, \
           reported_at = CASE WHEN $3 = 'reported' THEN $4 ELSE reported_at END \
         WHERE customer_id = $1 AND id = $2",
    )
    .bind(customer_id)
    .bind(addon_id)
    .bind(status.as_str())
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The paid add-ons of an order that are waiting for testing or in it (`paid`, `in_testing`),
/// locked.
pub async fn unreported_of_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<Addon>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(select_addons!(
        "WHERE a.customer_id = $1 AND a.order_id = $2 AND a.status IN ('paid', 'in_testing') \
         ORDER BY a.requested_at, a.id FOR UPDATE OF a"
    ))
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(Row::into_addon).collect()
}

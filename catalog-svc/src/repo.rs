//! SQL of catalog-svc (schema `catalog`): revisions and their item rows, and quotes.
//!
//! Quote statements always filter by customer id. Item rows use the byte-wise "C" collation so
//! that the listing order and the cursor's `id > last` comparison agree.

use crate::domain::catalog::{CatalogItem, ItemKind};
use crate::domain::document::SampleRequirement;
use crate::domain::listing::Filters;
use crate::domain::quote::{PricedQuote, Quote, QuoteCharge, QuoteLine};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// The current revision's identity.
#[derive(Clone, Debug, PartialEq)]
pub struct RevisionRow {
    pub id: String,
    pub content_sha256: String,
    pub test_count: i32,
    pub bundle_count: i32,
}

/// Serializes imports (the advisory lock is released when the transaction ends).
pub async fn lock_imports(tx: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('catalog.revisions.import'))")
        .execute(tx)
        .await?;
    Ok(())
}

/// Returns the current revision, if any catalog was imported.
pub async fn current_revision(conn: &mut PgConnection) -> Result<Option<RevisionRow>, sqlx::Error> {
    let row: Option<(String, String, i32, i32)> = sqlx::query_as(
        "SELECT id, content_sha256, test_count, bundle_count FROM catalog.revisions WHERE is_current",
    )
    .fetch_optional(conn)
    .await?;
    Ok(
        row.map(|(id, content_sha256, test_count, bundle_count)| RevisionRow {
            id,
            content_sha256,
            test_count,
            bundle_count,
        }),
    )
}

/// Returns the id of the current revision.
pub async fn current_revision_id(pool: &PgPool) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM catalog.revisions WHERE is_current")
        .fetch_optional(pool)
        .await
}

/// Allocates the next revision id (`rev-000001`, …).
pub async fn next_revision_id(tx: &mut PgConnection) -> Result<String, sqlx::Error> {
    let number: i64 = sqlx::query_scalar("SELECT nextval('catalog.revision_seq')")
        .fetch_one(tx)
        .await?;
    Ok(format!("rev-{number:06}"))
}

/// Stores a revision and makes it the only current one.
pub async fn insert_current_revision(
    tx: &mut PgConnection,
    revision: &RevisionRow,
    document: &Value,
    note: &str,
    imported_by: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE catalog.revisions SET is_current = FALSE WHERE is_current")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO catalog.revisions \
           (id, document, content_sha256, note, test_count, bundle_count, is_current, imported_by) \
         VALUES ($1, $2, $3, $4, $5, $6, TRUE, $7)",
    )
    .bind(&revision.id)
    .bind(Json(document))
    .bind(&revision.content_sha256)
    .bind(note)
    .bind(revision.test_count)
    .bind(revision.bundle_count)
    .bind(imported_by)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Inserts the item rows of a revision in one statement.
pub async fn insert_items<'a>(
    tx: &mut PgConnection,
    revision_id: &str,
    items: impl Iterator<Item = &'a CatalogItem>,
) -> Result<(), sqlx::Error> {
    let rows: Vec<Value> = items
        .map(|item| {
            serde_json::json!({
                "id": item.id, "kind": item.kind.as_str(), "name": item.name, "description": item.description,
                "method": item.method, "category_ids": item.category_ids, "price_cents": item.price.0,
                "test_ids": item.test_ids, "sample_requirement": item.sample_requirement,
            })
        })
        .collect();
    sqlx::query(
        "INSERT INTO catalog.items \
           (revision_id, id, kind, name, description, method, category_ids, price_cents, test_ids, sample_requirement) \
         SELECT $1, r.id, r.kind, r.name, r.description, r.method, r.category_ids, r.price_cents, r.test_ids, \
                r.sample_requirement \
         FROM jsonb_to_recordset($2) AS r(id text, kind text, name text, description text, method text, \
              category_ids text[], price_cents bigint, test_ids text[], sample_requirement jsonb)",
    )
    .bind(revision_id)
    .bind(Json(rows))
    .execute(tx)
    .await?;
    Ok(())
}

/// Returns the stored document of a revision.
pub async fn revision_document(pool: &PgPool, revision_id: &str) -> Result<Option<Value>, sqlx::Error> {
    let row: Option<Json<Value>> = sqlx::query_scalar("SELECT document FROM catalog.revisions WHERE id = $1")
        .bind(revision_id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|Json(value)| value))
}

type ItemRow = (
    String,
    String,
    String,
    String,
    String,
    Vec<String>,
    i64,
    Vec<String>,
    Option<Json<SampleRequirement>>,
);

/// Returns up to `limit` items of a revision after `after_id`, by id, matching the filters.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT catalog.items", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "catalog.items"))]
pub async fn list_items(
    pool: &PgPool,
    revision_id: &str,
    filters: &Filters,
    after_id: Option<&str>,
    limit: i64,
) -> Result<Vec<CatalogItem>, sqlx::Error> {
    let rows: Vec<ItemRow> = sqlx::query_as(
        "SELECT id, kind, name, description, method, category_ids, price_cents, test_ids, sample_requirement \
         FROM catalog.items \
         WHERE revision_id = $1 \
           AND ($2::text IS NULL OR $2::text = ANY (category_ids)) \
           AND ($3::text IS NULL OR strpos(lower(id), lower($3::text)) > 0 \
                OR strpos(lower(name), lower($3::text)) > 0 \
                OR strpos(lower(description), lower($3::text)) > 0 \
                OR strpos(lower(method), lower($3::text)) > 0) \
           AND ($4::text IS NULL OR id > $4::text) \
         ORDER BY id \
         LIMIT $5",
    )
    .bind(revision_id)
    .bind(filters.category.as_deref())
    .bind(filters.query.as_deref())
    .bind(after_id)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, kind, name, description, method, category_ids, price, test_ids, requirement)| CatalogItem {
                id,
                kind: ItemKind::parse(&kind).unwrap_or(ItemKind::Test),
                name,
                description,
                method,
                category_ids,
                price: Cents(price),
                test_ids,
                sample_requirement: requirement.map(|Json(requirement)| requirement),
            },
        )
        .collect())
}

/// Stores a quote.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT catalog.quotes", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT", db.collection.name = "catalog.quotes"))]
pub async fn insert_quote(tx: &mut PgConnection, quote: &Quote) -> Result<(), sqlx::Error> {
    let priced = &quote.priced;
    sqlx::query(
        "INSERT INTO catalog.quotes (id, customer_id, catalog_revision, category_id, turnaround, \
           turnaround_business_days, conformity_samples, lines, charges, analysis_subtotal_cents, total_cents, \
           currency, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(quote.id)
    .bind(quote.customer_id)
    .bind(&quote.catalog_revision)
    .bind(&priced.category_id)
    .bind(&priced.turnaround)
    .bind(priced.turnaround_business_days)
    .bind(priced.conformity_samples)
    .bind(Json(&priced.lines))
    .bind(Json(&priced.charges))
    .bind(priced.analysis_subtotal.0)
    .bind(priced.total.0)
    .bind(&quote.currency)
    .bind(quote.created_at)
    .bind(quote.expires_at)
    .execute(tx)
    .await?;
    Ok(())
}

type QuoteRow = (
    Uuid,
    Uuid,
    String,
    String,
    String,
    i32,
    i64,
    Json<Vec<QuoteLine>>,
    Json<Vec<QuoteCharge>>,
    i64,
    i64,
    String,
    DateTime<Utc>,
    DateTime<Utc>,
);

/// Returns the quote `quote_id` when it belongs to `customer_id`.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT catalog.quotes", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "catalog.quotes"))]
pub async fn find_quote(
    pool: &PgPool,
    customer_id: Uuid,
    quote_id: Uuid,
) -> Result<Option<Quote>, sqlx::Error> {
    let row: Option<QuoteRow> = sqlx::query_as(
        "SELECT id, customer_id, catalog_revision, category_id, turnaround, turnaround_business_days, \
           conformity_samples, lines, charges, analysis_subtotal_cents, total_cents, currency, created_at, expires_at \
         FROM catalog.quotes WHERE id = $1 AND customer_id = $2",
    )
    .bind(quote_id)
    .bind(customer_id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|row| Quote {
        id: row.0,
        customer_id: row.1,
        catalog_revision: row.2,
        priced: PricedQuote {
            category_id: row.3,
            turnaround: row.4,
            turnaround_business_days: row.5,
            conformity_samples: row.6,
            lines: row.7.0,
            charges: row.8.0,
            analysis_subtotal: Cents(row.9),
            total: Cents(row.10),
        },
        currency: row.11,
        created_at: row.12,
        expires_at: row.13,
    }))
}

/// Records that an order consumed a quote, the first time only; returns whether it changed.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "UPDATE catalog.quotes", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "UPDATE", db.collection.name = "catalog.quotes"))]
pub async fn mark_quote_consumed(
    tx: &mut PgConnection,
    customer_id: Uuid,
    quote_id: Uuid,
    order_id: Uuid,
    consumed_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE catalog.quotes SET consumed_at = $4, consumed_by_order_id = $3 \
         WHERE id = $1 AND customer_id = $2 AND consumed_at IS NULL",
    )
    .bind(quote_id)
    .bind(customer_id)
    .bind(order_id)
    .bind(consumed_at)
    .execute(tx)
    .await?;
    Ok(result.rows_affected() == 1)
}

//! SQL of samples, the chain of custody and the published COAs of samples. Staff lookups find an
//! order lab-wide (operators are not tenants); every other statement filters by `customer_id`.

use crate::domain::order::LineItem;
use crate::domain::reference::OrderReference;
use crate::domain::sample::{CustodyFacts, GENESIS_HASH, Sample};
use crate::domain::sample_items::CoaMark;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// Finds the owner and id of an order lab-wide by UUID, order, invoice, accession or tracking
/// number.
pub async fn find_order_for_staff(
    conn: &mut PgConnection,
    reference: &OrderReference,
) -> Result<Option<(Uuid, Uuid)>, sqlx::Error> {
    let (statement, value) = match reference {
        OrderReference::Id(id) => (
            "SELECT customer_id, id FROM orders.orders WHERE id = $1::uuid",
            id.to_string(),
        ),
        OrderReference::OrderNumber(number) => (
            "SELECT customer_id, id FROM orders.orders WHERE order_number = $1",
            number.clone(),
        ),
        OrderReference::InvoiceNumber(number) => (
            "SELECT customer_id, id FROM orders.orders WHERE invoice_number = $1",
            number.clone(),
        ),
        OrderReference::AccessionNumber(number) => {
            return sqlx::query_as(
                "SELECT customer_id, order_id FROM orders.samples WHERE accession_number = $1",
            )
            .bind(number)
            .fetch_optional(conn)
            .await;
        }
        OrderReference::TrackingNumber(number) => {
            return sqlx::query_as(
                "SELECT customer_id, order_id FROM orders.order_views WHERE tracking_number = $1 LIMIT 1",
            )
            .bind(number)
            .fetch_optional(conn)
            .await;
        }
    };
    sqlx::query_as(statement).bind(value).fetch_optional(conn).await
}

/// Draws the next accession-number sequence value.
pub async fn next_accession_sequence(conn: &mut PgConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT nextval('orders.accession_number_seq')")
        .fetch_one(conn)
        .await
}

/// Inserts the logged samples of an order.
pub async fn insert_samples(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    tracking_number: &str,
    samples: &[Sample],
) -> Result<(), sqlx::Error> {
    for sample in samples {
        sqlx::query(
            "INSERT INTO orders.samples (accession_number, order_id, customer_id, line_number, units, containers, \
               condition, storage_location, received_at, received_by, tracking_number, retain_until) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&sample.accession_number)
        .bind(order_id)
        .bind(customer_id)
        .bind(sample.line_number)
        .bind(sample.units)
        .bind(&sample.containers)
        .bind(&sample.condition)
        .bind(&sample.storage_location)
        .bind(sample.received_at)
        .bind(&sample.received_by)
        .bind(tracking_number)
        .bind(sample.retain_until)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct SampleRow {
    accession_number: String,
    line_number: i32,
    compound_name: String,
    lot_number: Option<String>,
    units: i32,
    containers: String,
    condition: String,
    storage_location: String,
    received_at: DateTime<Utc>,
    received_by: String,
    testing_started_at: Option<DateTime<Utc>>,
    retain_until: DateTime<Utc>,
    disposed_at: Option<DateTime<Utc>>,
    items: Json<Vec<LineItem>>,
}

/// Reads the samples of a customer's order with their line's compound, lot and tests.
pub async fn list_samples(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<Sample>, sqlx::Error> {
    let rows: Vec<SampleRow> = sqlx::query_as(
        "SELECT s.accession_number, s.line_number, l.compound_name, l.lot_number, s.units, s.containers, \
           s.condition, s.storage_location, s.received_at, s.received_by, s.testing_started_at, s.retain_until, \
           s.disposed_at, l.items \
         FROM orders.samples s JOIN orders.order_lines l \
           ON l.customer_id = s.customer_id AND l.order_id = s.order_id AND l.line_number = s.line_number \
         WHERE s.customer_id = $1 AND s.order_id = $2 ORDER BY s.line_number",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let test_ids = crate::domain::order::line_test_ids(&row.items.0);
            Sample {
                accession_number: row.accession_number,
                line_number: row.line_number,
                compound_name: row.compound_name,
                lot_number: row.lot_number,
                units: row.units,
                containers: row.containers,
                condition: row.condition,
                storage_location: row.storage_location,
                received_at: row.received_at,
                received_by: row.received_by,
                testing_started_at: row.testing_started_at,
                retain_until: row.retain_until,
                disposed_at: row.disposed_at,
                test_ids,
                test_names: row.items.0.iter().map(|item| item.name.clone()).collect(),
            }
        })
        .collect())
}

/// Stamps the start of testing on every sample of a customer's order.
pub async fn mark_testing_started(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE orders.samples SET testing_started_at = $3 \
         WHERE customer_id = $1 AND order_id = $2 AND testing_started_at IS NULL",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// A stored custody entry: its facts, the previous hash and its own hash.
pub type CustodyRow = (CustodyFacts, String, String);

/// Appends custody entries to an order's chain (the caller holds the order's lock), each hashed
/// over its predecessor.
pub async fn append_custody(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    entries: Vec<CustodyFacts>,
) -> Result<(), sqlx::Error> {
    let last: Option<(i64, String)> = sqlx::query_as(
        "SELECT sequence, hash FROM orders.custody_entries WHERE customer_id = $1 AND order_id = $2 \
         ORDER BY sequence DESC LIMIT 1",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_optional(&mut *conn)
    .await?;
    let (mut sequence, mut previous) = last.unwrap_or((0, GENESIS_HASH.to_owned()));
    for mut facts in entries {
        sequence += 1;
        facts.sequence = sequence;
        let hash = facts.hash(&previous);
        sqlx::query(
            "INSERT INTO orders.custody_entries (order_id, customer_id, sequence, occurred_at, action, \
               accession_number, actor, location, details, previous_hash, hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(order_id)
        .bind(customer_id)
        .bind(sequence)
        .bind(facts.occurred_at)
        .bind(&facts.action)
        .bind(&facts.accession_number)
        .bind(&facts.actor)
        .bind(&facts.location)
        .bind(&facts.details)
        .bind(&previous)
        .bind(&hash)
        .execute(&mut *conn)
        .await?;
        previous = hash;
    }
    Ok(())
}

/// Reads the custody chain of a customer's order in sequence order.
pub async fn list_custody(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<CustodyRow>, sqlx::Error> {
    type Row = (
        i64,
        DateTime<Utc>,
        String,
        String,
        String,
        String,
        String,
        String,
        String,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT sequence, occurred_at, action, accession_number, actor, location, details, previous_hash, hash \
         FROM orders.custody_entries WHERE customer_id = $1 AND order_id = $2 ORDER BY sequence",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(sequence, occurred_at, action, accession_number, actor, location, details, previous, hash)| {
                (
                    CustodyFacts {
                        sequence,
                        occurred_at,
                        action,
                        accession_number,
                        actor,
                        location,
                        details,
                    },
                    previous,
                    hash,
                )
            },
        )
        .collect())
}

/// Records that a sample's COA was published (and that the COA it amends, if any, is superseded);
/// returns the sample's order when the sample is the customer's.
pub async fn record_published_coa(
    conn: &mut PgConnection,
    customer_id: Uuid,
    accession_number: &str,
    coa: (Uuid, Option<Uuid>),
    published_at: DateTime<Utc>,
) -> Result<Option<Uuid>, sqlx::Error> {
    let (coa_id, amends) = coa;
    let Some(order_id) = sample_order(conn, customer_id, accession_number).await? else {
        return Ok(None);
    };
    sqlx::query(
        "INSERT INTO orders.published_coas (accession_number, coa_id, customer_id, published_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind(accession_number)
    .bind(coa_id)
    .bind(customer_id)
    .bind(published_at)
    .execute(&mut *conn)
    .await?;
    if let Some(amends) = amends {
        sqlx::query(
            "UPDATE orders.published_coas SET superseded_by = $3 \
             WHERE customer_id = $1 AND accession_number = $2 AND coa_id = $4",
        )
        .bind(customer_id)
        .bind(accession_number)
        .bind(coa_id)
        .bind(amends)
        .execute(&mut *conn)
        .await?;
    }
    Ok(Some(order_id))
}

/// Records that a sample's published COA was retracted; returns the sample's order when the
/// sample is the customer's.
pub async fn record_retracted_coa(
    conn: &mut PgConnection,
    customer_id: Uuid,
    accession_number: &str,
    coa_id: Uuid,
    retracted_at: DateTime<Utc>,
) -> Result<Option<Uuid>, sqlx::Error> {
    let Some(order_id) = sample_order(conn, customer_id, accession_number).await? else {
        return Ok(None);
    };
    sqlx::query(
        "UPDATE orders.published_coas SET retracted_at = COALESCE(retracted_at, $4) \
         WHERE customer_id = $1 AND accession_number = $2 AND coa_id = $3",
    )
    .bind(customer_id)
    .bind(accession_number)
    .bind(coa_id)
    .bind(retracted_at)
    .execute(&mut *conn)
    .await?;
    Ok(Some(order_id))
}

async fn sample_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    accession_number: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar("SELECT order_id FROM orders.samples WHERE customer_id = $1 AND accession_number = $2")
        .bind(customer_id)
        .bind(accession_number)
        .fetch_optional(conn)
        .await
}

/// How many samples of a customer's order have no COA in force (published, neither retracted
/// nor superseded by a published amendment).
pub async fn samples_without_coa_in_force(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT count(*) FROM orders.samples s WHERE s.customer_id = $1 AND s.order_id = $2 \
           AND NOT EXISTS (SELECT 1 FROM orders.published_coas p \
                           WHERE p.customer_id = s.customer_id AND p.accession_number = s.accession_number \
                             AND p.retracted_at IS NULL AND p.superseded_by IS NULL)",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_one(conn)
    .await
}

/// Stamps the disposal of a sample's retained portion (once).
pub async fn mark_disposed(
    conn: &mut PgConnection,
    customer_id: Uuid,
    accession_number: &str,
    at: DateTime<Utc>,
    by: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE orders.samples SET disposed_at = $3, disposed_by = $4 \
         WHERE customer_id = $1 AND accession_number = $2 AND disposed_at IS NULL",
    )
    .bind(customer_id)
    .bind(accession_number)
    .bind(at)
    .bind(by)
    .execute(conn)
    .await?;
    Ok(())
}

/// The published COAs of a customer's order by sample, with whether each is in force.
pub async fn coas_of_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<CoaMark>, sqlx::Error> {
    let rows: Vec<(String, DateTime<Utc>, bool)> = sqlx::query_as(
        "SELECT p.accession_number, p.published_at, (p.retracted_at IS NULL AND p.superseded_by IS NULL) \
         FROM orders.published_coas p JOIN orders.samples s ON s.accession_number = p.accession_number \
         WHERE s.customer_id = $1 AND s.order_id = $2 AND p.customer_id = $1",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(accession_number, published_at, in_force)| CoaMark {
            accession_number,
            published_at,
            in_force,
        })
        .collect())
}

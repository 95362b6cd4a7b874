//! SQL of the `results` schema. Staff statements find COAs lab-wide by accession (operators are
//! not tenants); every customer read filters by `customer_id`. A COA is read in one statement
//! with its sample facts and its rows aggregated as JSON.

use crate::domain::coa::{AnalyteRow, Coa, CoaStatus};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// `SELECT` of a COA with its sample and rows, up to the `FROM` tail.
macro_rules! select_coas {
    ($tail:literal) => {
        concat!(
            "SELECT c.id, c.submission_id, c.accession_number, c.customer_id, c.order_id, s.order_number, \
               s.compound, s.lot_number, c.version, c.status, c.submitted_by, c.submitted_by_id, c.approved_by, \
               c.approved_by_id, c.approved_at, \
               c.published_at, c.retracted_at, c.retraction_reason, c.send_back_reason, c.amends, \
               c.amendment_reason, c.superseded_by, c.verification_code, c.signed_content, c.signature, \
               c.signing_key_id, s.received_at, s.testing_started_at, c.created_at, \
               (SELECT json_agg(r ORDER BY r.position) FROM ( \
                  SELECT position, analyte, test_id, value, qualifier, unit, loq, lod, specification, outcome, \
                         method, instrument, analyst, analyst_id, measured_at \
                  FROM results.analyte_results WHERE coa_id = c.id) r) AS rows \
             FROM results.coas c JOIN results.samples s ON s.accession_number = c.accession_number ",
            $tail
        )
    };
}

/// Key of the transaction-scoped advisory lock that orders publications and imports.
pub const PUBLICATION_LOCK: i64 = 0x7265_7375_6c74_7331;

/// Takes the publication lock (held until the caller's transaction ends) and returns the
/// publication time: now, but strictly after every publication already committed. Stamps taken
/// under the lock follow commit order, which the exports' `since` relies on (docs/data.md).
pub async fn publication_stamp(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(PUBLICATION_LOCK)
        .execute(&mut *conn)
        .await?;
    // A statement of its own: its snapshot, taken after the lock, sees every stamp committed
    // before (read committed).
    sqlx::query_scalar(
        "SELECT greatest($1::timestamptz, clock_timestamp(), \
           (SELECT published_at FROM results.coas WHERE published_at IS NOT NULL \
              ORDER BY published_at DESC LIMIT 1) + interval '1 microsecond')",
    )
    .bind(now)
    .fetch_one(conn)
    .await
}

/// The facts of a sample results-svc learned from orders-svc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleFacts {
    pub accession_number: String,
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub line_number: i32,
    pub compound: String,
    pub lot_number: Option<String>,
    pub test_ids: Vec<String>,
    pub test_names: Vec<String>,
    pub received_at: DateTime<Utc>,
    pub testing_started_at: Option<DateTime<Utc>>,
}

/// Stores a received sample (once) and the order it belongs to.
pub async fn insert_sample(conn: &mut PgConnection, sample: &SampleFacts) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO results.lab_orders (order_id, customer_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    )
    .bind(sample.order_id)
    .bind(sample.customer_id)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO results.samples (accession_number, customer_id, order_id, order_number, line_number, compound, \
           lot_number, test_ids, test_names, received_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
    )
    .bind(&sample.accession_number)
    .bind(sample.customer_id)
    .bind(sample.order_id)
    .bind(&sample.order_number)
    .bind(sample.line_number)
    .bind(&sample.compound)
    .bind(&sample.lot_number)
    .bind(&sample.test_ids)
    .bind(&sample.test_names)
    .bind(sample.received_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds tests (a paid add-on's) to a customer's sample, each once, keeping the names beside
/// their ids; an unknown sample changes nothing.
pub async fn add_sample_tests(
    conn: &mut PgConnection,
    customer_id: Uuid,
    accession_number: &str,
    test_ids: &[String],
    test_names: &[String],
) -> Result<(), sqlx::Error> {
    let row: Option<(Vec<String>, Vec<String>)> = sqlx::query_as(
        "SELECT test_ids, test_names FROM results.samples \
         WHERE customer_id = $1 AND accession_number = $2 FOR UPDATE",
    )
    .bind(customer_id)
    .bind(accession_number)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((mut ids, mut names)) = row else {
        return Ok(());
    };
    for (index, test_id) in test_ids.iter().enumerate() {
        if !ids.contains(test_id) {
            ids.push(test_id.clone());
            names.push(test_names.get(index).cloned().unwrap_or_else(|| test_id.clone()));
        }
    }
    sqlx::query(
        "UPDATE results.samples SET test_ids = $3, test_names = $4 \
         WHERE customer_id = $1 AND accession_number = $2",
    )
    .bind(customer_id)
    .bind(accession_number)
    .bind(&ids)
    .bind(&names)
    .execute(conn)
    .await?;
    Ok(())
}

/// Stamps the start of testing on a customer's order's samples.
pub async fn set_testing_started(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE results.samples SET testing_started_at = COALESCE(testing_started_at, $3) \
         WHERE customer_id = $1 AND order_id = $2",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that a customer's order is paid (locking its row); an order not seen yet is stored.
pub async fn mark_order_paid(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO results.lab_orders (order_id, customer_id, paid_at) VALUES ($1, $2, $3) \
         ON CONFLICT (order_id) DO UPDATE SET paid_at = COALESCE(results.lab_orders.paid_at, EXCLUDED.paid_at) \
         WHERE results.lab_orders.customer_id = EXCLUDED.customer_id",
    )
    .bind(order_id)
    .bind(customer_id)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Locks an order's row and tells whether it is paid. Publication and the payment consumer
/// both take this lock, so a COA is never held after its payment was applied.
pub async fn lock_order_paid(conn: &mut PgConnection, order_id: Uuid) -> Result<bool, sqlx::Error> {
    let paid: Option<Option<DateTime<Utc>>> =
        sqlx::query_scalar("SELECT paid_at FROM results.lab_orders WHERE order_id = $1 FOR UPDATE")
            .bind(order_id)
            .fetch_optional(conn)
            .await?;
    Ok(paid.flatten().is_some())
}

/// Reads and locks a sample lab-wide (workflow steps on one accession run one at a time).
pub async fn find_sample(
    conn: &mut PgConnection,
    accession: &str,
) -> Result<Option<SampleFacts>, sqlx::Error> {
    type Row = (
        String,
        Uuid,
        Uuid,
        String,
        i32,
        String,
        Option<String>,
        Vec<String>,
        Vec<String>,
        DateTime<Utc>,
        Option<DateTime<Utc>>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT accession_number, customer_id, order_id, order_number, line_number, compound, lot_number, test_ids, \
           test_names, received_at, testing_started_at FROM results.samples WHERE accession_number = $1 FOR UPDATE",
    )
    .bind(accession)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(
        |(
            accession_number,
            customer_id,
            order_id,
            order_number,
            line_number,
            compound,
            lot_number,
            test_ids,
            test_names,
            received_at,
            testing_started_at,
        )| {
            SampleFacts {
                accession_number,
                customer_id,
                order_id,
                order_number,
                line_number,
                compound,
                lot_number,
                test_ids,
                test_names,
                received_at,
                testing_started_at,
            }
        },
    ))
}

/// The current (newest version) COA of an accession, lab-wide, locked for a workflow step.
pub async fn lock_current_coa(conn: &mut PgConnection, accession: &str) -> Result<Option<Coa>, sqlx::Error> {
    let id: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM results.coas WHERE accession_number = $1 ORDER BY version DESC LIMIT 1 FOR UPDATE",
    )
    .bind(accession)
    .fetch_optional(&mut *conn)
    .await?;
    match id {
        Some(id) => coa_by_id(conn, id).await,
        None => Ok(None),
    }
}

/// Reads a COA by id, lab-wide.
pub async fn coa_by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<Coa>, sqlx::Error> {
    sqlx::query_as::<_, CoaRow>(select_coas!("WHERE c.id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await?
        .map(CoaRow::into_coa)
        .transpose()
}

/// Locks a COA by id, lab-wide.
pub async fn lock_coa(conn: &mut PgConnection, id: Uuid) -> Result<Option<Coa>, sqlx::Error> {
    let found: Option<Uuid> = sqlx::query_scalar("SELECT id FROM results.coas WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    match found {
        Some(id) => coa_by_id(conn, id).await,
        None => Ok(None),
    }
}

/// Inserts a new COA (its rows go through [`upsert_rows`]).
pub async fn insert_coa(conn: &mut PgConnection, coa: &Coa) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO results.coas (id, submission_id, accession_number, customer_id, order_id, version, status, \
           amends, amendment_reason, verification_code, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)",
    )
    .bind(coa.id)
    .bind(coa.submission_id)
    .bind(&coa.accession_number)
    .bind(coa.customer_id)
    .bind(coa.order_id)
    .bind(coa.version)
    .bind(coa.status.as_str())
    .bind(coa.amends)
    .bind(&coa.amendment_reason)
    .bind(&coa.verification_code)
    .bind(coa.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes the workflow columns of a COA as they now stand.
pub async fn update_coa(
    conn: &mut PgConnection,
    coa: &Coa,
    submitted_at: Option<DateTime<Utc>>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE results.coas SET status = $2, submission_id = $3, submitted_by = $4, \
           submitted_at = COALESCE($5, submitted_at), approved_by = $6, approved_at = $7, published_at = $8, \
           retracted_at = $9, retraction_reason = $10, send_back_reason = $11, superseded_by = $12, \
           signed_content = $13, signature = $14, signing_key_id = $15, submitted_by_id = $16, \
           approved_by_id = $17, updated_at = now() \
         WHERE id = $1",
    )
    .bind(coa.id)
    .bind(coa.status.as_str())
    .bind(coa.submission_id)
    .bind(&coa.submitted_by)
    .bind(submitted_at)
    .bind(&coa.approved_by)
    .bind(coa.approved_at)
    .bind(coa.published_at)
    .bind(coa.retracted_at)
    .bind(&coa.retraction_reason)
    .bind(&coa.send_back_reason)
    .bind(coa.superseded_by)
    .bind(&coa.signed_content)
    .bind(&coa.signature)
    .bind(&coa.signing_key_id)
    .bind(coa.submitted_by_id)
    .bind(coa.approved_by_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records or replaces rows of a COA by analyte name (new analytes go after the existing ones).
pub async fn upsert_rows(
    conn: &mut PgConnection,
    coa_id: Uuid,
    customer_id: Uuid,
    rows: &[AnalyteRow],
) -> Result<(), sqlx::Error> {
    for row in rows {
        sqlx::query(
            "INSERT INTO results.analyte_results (coa_id, customer_id, position, analyte, test_id, value, qualifier, \
               unit, loq, lod, specification, outcome, method, instrument, analyst, measured_at, analyst_id) \
             VALUES ($1, $2, (SELECT COALESCE(max(position), 0) + 1 FROM results.analyte_results WHERE coa_id = $1), \
               $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
             ON CONFLICT (coa_id, analyte) DO UPDATE SET test_id = EXCLUDED.test_id, value = EXCLUDED.value, \
               qualifier = EXCLUDED.qualifier, unit = EXCLUDED.unit, loq = EXCLUDED.loq, lod = EXCLUDED.lod, \
               specification = EXCLUDED.specification, outcome = EXCLUDED.outcome, method = EXCLUDED.method, \
               instrument = EXCLUDED.instrument, analyst = EXCLUDED.analyst, measured_at = EXCLUDED.measured_at, \
               analyst_id = EXCLUDED.analyst_id",
        )
        .bind(coa_id)
        .bind(customer_id)
        .bind(&row.analyte)
        .bind(&row.test_id)
        .bind(&row.value)
        .bind(&row.qualifier)
        .bind(&row.unit)
        .bind(&row.loq)
        .bind(&row.lod)
        .bind(&row.specification)
        .bind(&row.outcome)
        .bind(&row.method)
        .bind(&row.instrument)
        .bind(&row.analyst)
        .bind(row.measured_at)
        .bind(row.analyst_id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Ids of an order's held COAs.
pub async fn held_coas(conn: &mut PgConnection, order_id: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM results.coas WHERE order_id = $1 AND status = 'held' ORDER BY created_at",
    )
    .bind(order_id)
    .fetch_all(conn)
    .await
}

/// The page of a customer's published COAs: $1 customer, $2 order, $3 compound, $4 lot,
/// $5 published from, $6 published before, $7/$8 the cursor (published_at, id), $9 limit
/// (public so that the results benchmark can EXPLAIN the statement the service runs).
pub const LIST_PUBLISHED_SQL: &str = select_coas!(
    "WHERE c.customer_id = $1 AND c.published_at IS NOT NULL \
       AND ($2::uuid IS NULL OR c.order_id = $2) \
       AND ($3::text IS NULL OR s.compound = $3) \
       AND ($4::text IS NULL OR s.lot_number = $4) \
       AND ($5::timestamptz IS NULL OR c.published_at >= $5) \
       AND ($6::timestamptz IS NULL OR c.published_at < $6) \
       AND ($7::timestamptz IS NULL OR (c.published_at, c.id) < ($7, $8)) \
     ORDER BY c.published_at DESC, c.id DESC LIMIT $9"
);

/// The newest published COA of an accession of a customer: $1 customer, $2 accession (the COA
/// behind `GET /results/{accession}` and its analytes).
pub const PUBLISHED_BY_ACCESSION_SQL: &str = select_coas!(
    "WHERE c.customer_id = $1 AND c.accession_number = $2 AND c.published_at IS NOT NULL \
     ORDER BY c.version DESC LIMIT 1"
);

/// Filters of the customer's published COAs.
#[derive(Clone, Debug, Default)]
pub struct ResultsFilter {
    pub order_id: Option<Uuid>,
    pub compound: Option<String>,
    pub lot_number: Option<String>,
    pub published_from: Option<DateTime<Utc>>,
    pub published_to: Option<DateTime<Utc>>,
    /// Position of the last COA of the previous page (published_at, id).
    pub after: Option<(DateTime<Utc>, Uuid)>,
    pub limit: i64,
}

/// One page of the customer's COAs that were published, newest publication first.
pub async fn list_published(
    conn: &mut PgConnection,
    customer_id: Uuid,
    filter: &ResultsFilter,
) -> Result<Vec<Coa>, sqlx::Error> {
    let (after_time, after_id) = filter.after.unzip();
    let rows: Vec<CoaRow> = sqlx::query_as(LIST_PUBLISHED_SQL)
        .bind(customer_id)
        .bind(filter.order_id)
        .bind(&filter.compound)
        .bind(&filter.lot_number)
        .bind(filter.published_from)
        .bind(filter.published_to)
        .bind(after_time)
        .bind(after_id)
        .bind(filter.limit)
        .fetch_all(conn)
        .await?;
    rows.into_iter().map(CoaRow::into_coa).collect()
}

/// One of the customer's published COAs by id, or the newest published COA of an accession.
pub async fn find_published(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &str,
) -> Result<Option<Coa>, sqlx::Error> {
    let row: Option<CoaRow> = match Uuid::parse_str(reference) {
        Ok(id) => {
            sqlx::query_as(select_coas!(
                "WHERE c.customer_id = $1 AND c.id = $2 AND c.published_at IS NOT NULL"
            ))
            .bind(customer_id)
            .bind(id)
            .fetch_optional(conn)
            .await?
        }
        Err(_) => {
            sqlx::query_as(PUBLISHED_BY_ACCESSION_SQL)
                .bind(customer_id)
                .bind(reference)
                .fetch_optional(conn)
                .await?
        }
    };
    row.map(CoaRow::into_coa).transpose()
}

/// The newest published COA of each accession and the published COAs of `ids`, lab-wide
/// (public verification).
pub async fn published_by_references(
    conn: &mut PgConnection,
    accessions: &[String],
    ids: &[Uuid],
) -> Result<Vec<Coa>, sqlx::Error> {
    let rows: Vec<CoaRow> = sqlx::query_as(select_coas!(
        "WHERE c.id IN (SELECT DISTINCT ON (accession_number) id FROM results.coas \
           WHERE accession_number = ANY($1) AND published_at IS NOT NULL \
           ORDER BY accession_number, version DESC) \
         OR (c.id = ANY($2) AND c.published_at IS NOT NULL)"
    ))
    .bind(accessions)
    .bind(ids)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(CoaRow::into_coa).collect()
}

#[derive(sqlx::FromRow)]
struct CoaRow {
    id: Uuid,
    submission_id: Uuid,
    accession_number: String,
    customer_id: Uuid,
    order_id: Uuid,
    order_number: String,
    compound: String,
    lot_number: Option<String>,
    version: i32,
    status: String,
    submitted_by: Option<String>,
    submitted_by_id: Option<Uuid>,
    approved_by: Option<String>,
    approved_by_id: Option<Uuid>,
    approved_at: Option<DateTime<Utc>>,
    published_at: Option<DateTime<Utc>>,
    retracted_at: Option<DateTime<Utc>>,
    retraction_reason: Option<String>,
    send_back_reason: Option<String>,
    amends: Option<Uuid>,
    amendment_reason: Option<String>,
    superseded_by: Option<Uuid>,
    verification_code: String,
    signed_content: String,
    signature: String,
    signing_key_id: String,
    received_at: DateTime<Utc>,
    testing_started_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    rows: Option<Json<Vec<RowJson>>>,
}

#[derive(Deserialize)]
struct RowJson {
    analyte: String,
    test_id: String,
    value: Option<String>,
    qualifier: Option<String>,
    unit: String,
    loq: Option<String>,
    lod: Option<String>,
    specification: Option<String>,
    outcome: Option<String>,
    method: String,
    instrument: String,
    analyst: String,
    #[serde(default)]
    analyst_id: Option<Uuid>,
    measured_at: DateTime<Utc>,
}

impl CoaRow {
    fn into_coa(self) -> Result<Coa, sqlx::Error> {
        let status = CoaStatus::parse(&self.status)
            .ok_or_else(|| sqlx::Error::Decode(format!("stored COA status {:?}", self.status).into()))?;
        Ok(Coa {
            id: self.id,
            submission_id: self.submission_id,
            accession_number: self.accession_number,
            customer_id: self.customer_id,
            order_id: self.order_id,
            order_number: self.order_number,
            compound: self.compound,
            lot_number: self.lot_number,
            version: self.version,
            status,
            submitted_by: self.submitted_by,
            submitted_by_id: self.submitted_by_id,
            approved_by: self.approved_by,
            approved_by_id: self.approved_by_id,
            approved_at: self.approved_at,
            published_at: self.published_at,
            retracted_at: self.retracted_at,
            retraction_reason: self.retraction_reason,
            send_back_reason: self.send_back_reason,
            amends: self.amends,
            amendment_reason: self.amendment_reason,
            superseded_by: self.superseded_by,
            verification_code: self.verification_code,
            signed_content: self.signed_content,
            signature: self.signature,
            signing_key_id: self.signing_key_id,
            received_at: self.received_at,
            testing_started_at: self.testing_started_at,
            created_at: self.created_at,
            results: self
                .rows
                .map(|json| json.0)
                .unwrap_or_default()
                .into_iter()
                .map(|row| AnalyteRow {
                    analyte: row.analyte,
                    test_id: row.test_id,
                    value: row.value,
                    qualifier: row.qualifier,
                    unit: row.unit,
                    loq: row.loq,
                    lod: row.lod,
                    specification: row.specification,
                    outcome: row.outcome,
                    method: row.method,
                    instrument: row.instrument,
                    analyst: row.analyst,
                    analyst_id: row.analyst_id,
                    measured_at: row.measured_at,
                })
                .collect(),
        })
    }
}

/// The stored document of a COA: its blob key and SHA-256 (hex), once kept.
pub async fn coa_document(
    conn: &mut PgConnection,
    id: Uuid,
) -> Result<Option<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT document_key, document_sha256 FROM results.coas \
         WHERE id = $1 AND document_key IS NOT NULL",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Records the stored document of a COA that has none yet; false when another rendering was
/// kept first (that one is the document).
pub async fn keep_coa_document(
    conn: &mut PgConnection,
    id: Uuid,
    key: &str,
    sha256: &str,
) -> Result<bool, sqlx::Error> {
    let kept = sqlx::query(
        "UPDATE results.coas SET document_key = $2, document_sha256 = $3 \
         WHERE id = $1 AND document_key IS NULL",
    )
    .bind(id)
    .bind(key)
    .bind(sha256)
    .execute(conn)
    .await?;
    Ok(kept.rows_affected() == 1)
}

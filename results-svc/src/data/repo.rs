//! SQL of the data products: result sets, imported instrument files, their measurements, and
//! which published COAs release them. Staff statements are lab-wide by accession; every
//! customer read filters by `customer_id`.
//!
//! A file is released by every COA of its accession that is published or superseded and was
//! published at or after the file's import ([`RELEASES`]): a COA releases what existed when QA
//! published it, a retracted COA releases nothing, an amendment releases again.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// An import's own columns (with its result set's name): what is stored, and what every read
/// returns.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ImportRecord {
    pub id: Uuid,
    pub result_set: String,
    pub accession_number: String,
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub vendor: String,
    pub filename: String,
    pub mime_type: Option<String>,
    pub size_bytes: i64,
    pub sha256: String,
    pub client_sha256: Option<String>,
    pub integrity_verified_at: Option<DateTime<Utc>>,
    pub format: Option<String>,
    pub parser_version: String,
    pub connector_version: Option<String>,
    pub sample_identifier: Option<String>,
    pub run_identifier: Option<String>,
    pub instrument_id: Option<String>,
    pub instrument_name: Option<String>,
    pub method_id: Option<String>,
    pub acquired_at: Option<DateTime<Utc>>,
    pub imported_at: DateTime<Utc>,
    pub imported_by: String,
    pub imported_by_id: Option<Uuid>,
    pub storage_key: String,
    pub native_bundle_filename: Option<String>,
    pub native_bundle_key: Option<String>,
    pub native_bundle_size_bytes: Option<i64>,
    pub parse_status: String,
    pub parse_error: Option<String>,
}

/// An import about to be stored.
pub type NewImport = ImportRecord;

/// One imported file as read: its record, its result set's id, measurement count and (for
/// customer reads) its releases. Reads through to the record's fields.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ImportRow {
    #[sqlx(flatten)]
    pub record: ImportRecord,
    pub result_set_id: Uuid,
    pub measurement_count: i64,
    pub releases: Option<Json<Vec<ReleaseRow>>>,
}

impl std::ops::Deref for ImportRow {
    type Target = ImportRecord;

    fn deref(&self) -> &ImportRecord {
        &self.record
    }
}

/// A COA that released a file.
#[derive(Clone, Debug, Deserialize)]
pub struct ReleaseRow {
    pub coa_id: Uuid,
    pub accession_number: String,
    pub published_at: Option<DateTime<Utc>>,
}

/// One measurement as stored.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct MeasurementRow {
    pub import_id: Uuid,
    pub position: i32,
    pub analyte: String,
    pub kind: String,
    pub retention_time_min: Option<f64>,
    pub mz: Option<f64>,
    pub precursor_mz: Option<f64>,
    pub product_mz: Option<f64>,
    pub response: Option<f64>,
    pub response_unit: Option<String>,
    pub concentration: Option<String>,
    pub concentration_unit: Option<String>,
    pub loq: Option<String>,
}

/// The COAs releasing import `i` (a correlated subquery over `results.coas c`): published or
/// superseded, published at or after the import.
macro_rules! releases {
    () => {
        "(SELECT json_agg(json_build_object('coa_id', c.id, 'accession_number', c.accession_number, \
             'published_at', c.published_at) ORDER BY c.published_at, c.id) \
           FROM results.coas c \
           WHERE c.accession_number = i.accession_number AND c.status IN ('published', 'superseded') \
             AND c.published_at >= i.imported_at)"
    };
}

/// Whether some COA releases import `i`.
macro_rules! is_released {
    () => {
        "EXISTS (SELECT 1 FROM results.coas c \
           WHERE c.accession_number = i.accession_number AND c.status IN ('published', 'superseded') \
             AND c.published_at >= i.imported_at)"
    };
}

/// `SELECT` of imports `i` with their result set, measurement count and releases, up to the
/// `FROM` tail.
macro_rules! select_imports {
    ($tail:literal) => {
        concat!(
            "SELECT i.id, i.result_set_id, rs.name AS result_set, i.accession_number, i.customer_id, i.order_id, \
               i.vendor, i.filename, i.mime_type, i.size_bytes, i.sha256, i.client_sha256, i.integrity_verified_at, \
               i.format, i.parser_version, i.connector_version, i.sample_identifier, i.run_identifier, \
               i.instrument_id, i.instrument_name, i.method_id, i.acquired_at, i.imported_at, i.imported_by, \
               i.imported_by_id, i.storage_key, i.native_bundle_filename, i.native_bundle_key, \
               i.native_bundle_size_bytes, i.parse_status, i.parse_error, \
               (SELECT count(*) FROM results.instrument_measurements m WHERE m.import_id = i.id) AS measurement_count, ",
            releases!(),
            " AS releases \
             FROM results.instrument_imports i JOIN results.result_sets rs ON rs.id = i.result_set_id ",
            $tail
        )
    };
}

/// The import of the same bytes under the same name into the same result set, if any.
pub async fn same_import(
    conn: &mut PgConnection,
    accession: &str,
    result_set: &str,
    filename: &str,
    sha256: &str,
) -> Result<Option<ImportRow>, sqlx::Error> {
    sqlx::query_as(select_imports!(
        "WHERE i.accession_number = $1 AND rs.name = $2 AND i.filename = $3 AND i.sha256 = $4"
    ))
    .bind(accession)
    .bind(result_set)
    .bind(filename)
    .bind(sha256)
    .fetch_optional(conn)
    .await
}

/// Stores an import and its measurements (in the caller's transaction), creating the result set
/// on first use. `false` when the same file was stored meanwhile (nothing written).
pub async fn insert_import(
    conn: &mut PgConnection,
    import: &NewImport,
    measurements: &[MeasurementRow],
) -> Result<bool, sqlx::Error> {
    sqlx::query(
        "INSERT INTO results.result_sets (id, accession_number, customer_id, order_id, name, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (accession_number, name) DO NOTHING",
    )
    .bind(Uuid::now_v7())
    .bind(&import.accession_number)
    .bind(import.customer_id)
    .bind(import.order_id)
    .bind(&import.result_set)
    .bind(import.imported_at)
    .execute(&mut *conn)
    .await?;
    let result_set_id: Uuid =
        sqlx::query_scalar("SELECT id FROM results.result_sets WHERE accession_number = $1 AND name = $2")
            .bind(&import.accession_number)
            .bind(&import.result_set)
            .fetch_one(&mut *conn)
            .await?;
    let inserted = sqlx::query(
        "INSERT INTO results.instrument_imports (id, result_set_id, accession_number, customer_id, order_id, vendor, \
           filename, mime_type, size_bytes, sha256, client_sha256, integrity_verified_at, format, parser_version, \
           connector_version, sample_identifier, run_identifier, instrument_id, instrument_name, method_id, \
           acquired_at, imported_at, imported_by, imported_by_id, storage_key, native_bundle_filename, \
           native_bundle_key, native_bundle_size_bytes, parse_status, parse_error) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, \
           $22, $23, $24, $25, $26, $27, $28, $29, $30) \
         ON CONFLICT (result_set_id, filename, sha256) DO NOTHING",
    )
    .bind(import.id)
    .bind(result_set_id)
    .bind(&import.accession_number)
    .bind(import.customer_id)
    .bind(import.order_id)
    .bind(&import.vendor)
    .bind(&import.filename)
    .bind(&import.mime_type)
    .bind(import.size_bytes)
    .bind(&import.sha256)
    .bind(&import.client_sha256)
    .bind(import.integrity_verified_at)
    .bind(&import.format)
    .bind(&import.parser_version)
    .bind(&import.connector_version)
    .bind(&import.sample_identifier)
    .bind(&import.run_identifier)
    .bind(&import.instrument_id)
    .bind(&import.instrument_name)
    .bind(&import.method_id)
    .bind(import.acquired_at)
    .bind(import.imported_at)
    .bind(&import.imported_by)
    .bind(import.imported_by_id)
    .bind(&import.storage_key)
    .bind(&import.native_bundle_filename)
    .bind(&import.native_bundle_key)
    .bind(import.native_bundle_size_bytes)
    .bind(&import.parse_status)
    .bind(&import.parse_error)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Ok(false);
    }
    if !measurements.is_empty() {
        let column = |f: fn(&MeasurementRow) -> Option<f64>| measurements.iter().map(f).collect::<Vec<_>>();
        let text = |f: fn(&MeasurementRow) -> Option<String>| measurements.iter().map(f).collect::<Vec<_>>();
        sqlx::query(
            "INSERT INTO results.instrument_measurements (import_id, customer_id, position, analyte, kind, \
               retention_time_min, mz, precursor_mz, product_mz, response, response_unit, concentration, \
               concentration_unit, loq) \
             SELECT $1, $2, * FROM UNNEST($3::int4[], $4::text[], $5::text[], $6::float8[], $7::float8[], \
               $8::float8[], $9::float8[], $10::float8[], $11::text[], $12::text[], $13::text[], $14::text[])",
        )
        .bind(import.id)
        .bind(import.customer_id)
        .bind(measurements.iter().map(|m| m.position).collect::<Vec<_>>())
        .bind(measurements.iter().map(|m| m.analyte.clone()).collect::<Vec<_>>())
        .bind(measurements.iter().map(|m| m.kind.clone()).collect::<Vec<_>>())
        .bind(column(|m| m.retention_time_min))
        .bind(column(|m| m.mz))
        .bind(column(|m| m.precursor_mz))
        .bind(column(|m| m.product_mz))
        .bind(column(|m| m.response))
        .bind(text(|m| m.response_unit.clone()))
        .bind(text(|m| m.concentration.clone()))
        .bind(text(|m| m.concentration_unit.clone()))
        .bind(text(|m| m.loq.clone()))
        .execute(&mut *conn)
        .await?;
    }
    // Stamped under the publication lock, so that a COA published before this commit never
    // releases the file and one published after it always sees it (crate::repo::publication_stamp).
    let stamp = crate::repo::publication_stamp(&mut *conn, import.imported_at).await?;
    sqlx::query("UPDATE results.instrument_imports SET imported_at = $2 WHERE id = $1")
        .bind(import.id)
        .bind(stamp)
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

/// Every import of an accession, lab-wide, oldest first.
pub async fn imports_of_accession(
    conn: &mut PgConnection,
    accession: &str,
) -> Result<Vec<ImportRow>, sqlx::Error> {
    sqlx::query_as(select_imports!(
        "WHERE i.accession_number = $1 ORDER BY i.imported_at, i.id"
    ))
    .bind(accession)
    .fetch_all(conn)
    .await
}

/// Whether the customer's order has a COA in force (status `published`).
pub async fn order_has_published_coa(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM results.coas WHERE customer_id = $1 AND order_id = $2 AND status = 'published')",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_one(conn)
    .await
}

/// The customer's released files of an order, oldest import first.
pub async fn released_imports_of_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<ImportRow>, sqlx::Error> {
    sqlx::query_as(concat!(
        select_imports!("WHERE i.customer_id = $1 AND i.order_id = $2 AND "),
        is_released!(),
        " ORDER BY i.imported_at, i.id"
    ))
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await
}

/// The customer's files released by one COA, oldest import first.
pub async fn imports_released_by(
    conn: &mut PgConnection,
    customer_id: Uuid,
    coa_id: Uuid,
) -> Result<Vec<ImportRow>, sqlx::Error> {
    sqlx::query_as(select_imports!(
        "JOIN results.coas r ON r.id = $2 AND r.accession_number = i.accession_number \
         WHERE i.customer_id = $1 AND r.customer_id = $1 AND r.status IN ('published', 'superseded') \
           AND r.published_at >= i.imported_at ORDER BY i.imported_at, i.id"
    ))
    .bind(customer_id)
    .bind(coa_id)
    .fetch_all(conn)
    .await
}

/// The measurements of `imports`, in import then position order.
pub async fn measurements_of(
    conn: &mut PgConnection,
    imports: &[Uuid],
) -> Result<Vec<MeasurementRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT import_id, position, analyte, kind, retention_time_min, mz, precursor_mz, product_mz, response, \
           response_unit, concentration, concentration_unit, loq \
         FROM results.instrument_measurements WHERE import_id = ANY($1) ORDER BY import_id, position",
    )
    .bind(imports)
    .fetch_all(conn)
    .await
}

/// What a local download link may open: a released file (or native bundle) stored under `key`:
/// (file name, MIME type).
pub async fn released_blob(
    conn: &mut PgConnection,
    key: &str,
) -> Result<Option<(String, Option<String>)>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT CASE WHEN i.storage_key = $1 THEN i.filename ELSE i.native_bundle_filename END, \
           CASE WHEN i.storage_key = $1 THEN i.mime_type ELSE 'application/octet-stream' END \
         FROM results.instrument_imports i \
         WHERE (i.storage_key = $1 OR i.native_bundle_key = $1) AND ",
        is_released!()
    ))
    .bind(key)
    .fetch_optional(conn)
    .await
}

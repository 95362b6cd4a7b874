//! Bulk exports (`GET /export/coas`, `GET /export/instrument-results`): the customer's rows in
//! publication order, at most [`MAX_ROWS`] a page, streamed from PostgreSQL and rendered as they
//! come (CSV per RFC 4180, or JSON objects), so that memory stays bounded whatever the page.
//!
//! Paging (docs/data.md, "Exports"): rows are ordered by their COA's `publishedAt`, which is
//! stamped under one lock in commit order (`crate::repo::publication_stamp`), so a row committed
//! later always carries a later time; a page never splits the rows of one `publishedAt`, so
//! `since` = the last `publishedAt` received neither loses nor repeats a row. Only a single
//! publication with more rows than a page is split, continued by `cursor`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use platform::error::{ApiError, ErrorCode};
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Row};
use uuid::Uuid;

/// Most rows of one page (the spec's limit).
pub const MAX_ROWS: i64 = 5000;
/// Rendered bytes gathered before a chunk is sent.
const CHUNK_BYTES: usize = 64 * 1024;

/// What is exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    /// Every published COA, one row per analyte.
    Coas,
    /// Every measurement released by a published COA, one row per analyte measurement.
    InstrumentResults,
}

/// How rows are rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
}

impl Format {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        match text.trim() {
            "" | "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "format",
                "format is json or csv",
            )),
        }
    }
}

/// Where a page starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Rows published strictly after this time (`None`: from the first).
    Since(Option<DateTime<Utc>>),
    /// Inside the publication at `at`, after its first `skip` rows.
    Within { at: DateTime<Utc>, skip: i64 },
}

impl Start {
    /// From the request's `since` and `cursor` (the cursor wins).
    pub fn new(since: Option<DateTime<Utc>>, cursor: Option<&str>) -> Result<Self, ApiError> {
        let Some(cursor) = cursor.filter(|cursor| !cursor.is_empty()) else {
            return Ok(Start::Since(since));
        };
        let invalid = || {
            ApiError::new(
                ErrorCode::InvalidCursor,
                "the export cursor is malformed or was edited",
            )
        };
        let text = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
        let text = String::from_utf8(text).map_err(|_| invalid())?;
        let (micros, skip) = text.split_once(':').ok_or_else(invalid)?;
        let at =
            DateTime::from_timestamp_micros(micros.parse().map_err(|_| invalid())?).ok_or_else(invalid)?;
        let skip: i64 = skip.parse().map_err(|_| invalid())?;
        if skip <= 0 {
            return Err(invalid());
        }
        Ok(Start::Within { at, skip })
    }
}

fn cursor(at: DateTime<Utc>, skip: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{skip}", at.timestamp_micros()))
}

/// The page's plan, known before its rows stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub truncated: bool,
    pub next_since: Option<DateTime<Utc>>,
    pub next_cursor: Option<String>,
    pub row_count: i64,
}

/// The rows of an export after a start (a constant: the queries built around it by `format!` hold
/// no input, which is bound, so `AssertSqlSafe` is true), in order: `$1` customer, `$2` since (exclusive) or the
/// cursor's publication time (inclusive, with `$3` = true).
fn rows_sql(export: Export) -> &'static str {
    match export {
        Export::Coas => {
            "SELECT c.published_at, c.id AS coa_id, c.submission_id, c.accession_number, c.order_id, s.order_number, \
               s.compound, s.lot_number, c.version, c.status, r.analyte, r.test_id, r.value, r.qualifier, r.unit, \
               r.loq, r.lod, r.specification, r.outcome, r.method, r.instrument, r.measured_at \
             FROM results.coas c \
             JOIN results.samples s ON s.accession_number = c.accession_number \
             JOIN results.analyte_results r ON r.coa_id = c.id \
             WHERE c.customer_id = $1 AND c.published_at IS NOT NULL \
               AND (c.published_at > $2 OR ($3 AND c.published_at = $2)) \
             ORDER BY c.published_at, c.id, r.position"
        }
        Export::InstrumentResults => {
            "SELECT c.published_at, c.id AS coa_id, c.accession_number, c.order_id, s.order_number, \
               i.id AS import_id, i.result_set_id, rs.name AS result_set, i.filename, i.sha256, i.instrument_id, \
               i.instrument_name, i.method_id, i.run_identifier, i.sample_identifier, i.acquired_at, m.position, \
               m.analyte, m.kind, m.retention_time_min, m.mz, m.precursor_mz, m.product_mz, m.response, \
               m.response_unit, m.concentration, m.concentration_unit, m.loq \
             FROM results.coas c \
             JOIN results.samples s ON s.accession_number = c.accession_number \
             JOIN results.instrument_imports i ON i.accession_number = c.accession_number \
               AND i.imported_at <= c.published_at \
             JOIN results.result_sets rs ON rs.id = i.result_set_id \
             JOIN results.instrument_measurements m ON m.import_id = i.id \
             WHERE c.customer_id = $1 AND c.status IN ('published', 'superseded') \
               AND (c.published_at > $2 OR ($3 AND c.published_at = $2)) \
             ORDER BY c.published_at, c.id, i.imported_at, i.id, m.position"
        }
    }
}

/// The columns of an export, in order (the CSV header and the JSON properties).
pub fn columns(export: Export) -> &'static [&'static str] {
    match export {
        Export::Coas => &[
            "publishedAt",
            "coaId",
            "submissionId",
            "accessionNumber",
            "orderId",
            "orderNumber",
            "compound",
            "lotNumber",
            "version",
            "status",
            "analyte",
            "testId",
            "value",
            "qualifier",
            "unit",
            "loq",
            "lod",
            "specification",
            "outcome",
            "method",
            "instrument",
            "measuredAt",
        ],
        Export::InstrumentResults => &[
            "publishedAt",
            "coaId",
            "accessionNumber",
            "orderId",
            "orderNumber",
            "importId",
            "resultSetId",
            "resultSet",
            "filename",
            "sha256",
            "instrumentId",
            "instrumentName",
            "methodId",
            "runIdentifier",
            "sampleIdentifier",
            "acquiredAt",
            "position",
            "analyte",
            "kind",
            "retentionTimeMin",
            "mz",
            "precursorMz",
            "productMz",
            "response",
            "responseUnit",
            "concentration",
            "concentrationUnit",
            "loq",
        ],
    }
}

/// One value of a row.
enum Field {
    Text(Option<String>),
    Number(Option<f64>),
    Integer(Option<i64>),
}

impl Field {
    fn json(&self) -> serde_json::Value {
        match self {
            Field::Text(text) => text
                .clone()
                .map_or(serde_json::Value::Null, serde_json::Value::String),
            Field::Number(number) => number
                .and_then(serde_json::Number::from_f64)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Field::Integer(number) => number.map_or(serde_json::Value::Null, Into::into),
        }
    }

    fn csv(&self) -> String {
        match self {
            Field::Text(text) => text.clone().unwrap_or_default(),
            Field::Number(number) => number.map(|n| n.to_string()).unwrap_or_default(),
            Field::Integer(number) => number.map(|n| n.to_string()).unwrap_or_default(),
        }
    }
}

fn time(row: &sqlx::postgres::PgRow, column: &str) -> Result<Field, sqlx::Error> {
    let value: Option<DateTime<Utc>> = row.try_get(column)?;
    Ok(Field::Text(value.map(platform::time::rfc3339)))
}

fn text(row: &sqlx::postgres::PgRow, column: &str) -> Result<Field, sqlx::Error> {
    Ok(Field::Text(row.try_get(column)?))
}

fn id(row: &sqlx::postgres::PgRow, column: &str) -> Result<Field, sqlx::Error> {
    let value: Option<Uuid> = row.try_get(column)?;
    Ok(Field::Text(value.map(|id| id.to_string())))
}

fn number(row: &sqlx::postgres::PgRow, column: &str) -> Result<Field, sqlx::Error> {
    Ok(Field::Number(row.try_get(column)?))
}

fn fields(export: Export, row: &sqlx::postgres::PgRow) -> Result<Vec<Field>, sqlx::Error> {
    Ok(match export {
        Export::Coas => vec![
            time(row, "published_at")?,
            id(row, "coa_id")?,
            id(row, "submission_id")?,
            text(row, "accession_number")?,
            id(row, "order_id")?,
            text(row, "order_number")?,
            text(row, "compound")?,
            text(row, "lot_number")?,
            Field::Integer(row.try_get::<Option<i32>, _>("version")?.map(i64::from)),
            text(row, "status")?,
            text(row, "analyte")?,
            text(row, "test_id")?,
            text(row, "value")?,
            text(row, "qualifier")?,
            text(row, "unit")?,
            text(row, "loq")?,
            text(row, "lod")?,
            text(row, "specification")?,
            text(row, "outcome")?,
            text(row, "method")?,
            text(row, "instrument")?,
            time(row, "measured_at")?,
        ],
        Export::InstrumentResults => vec![
            time(row, "published_at")?,
            id(row, "coa_id")?,
            text(row, "accession_number")?,
            id(row, "order_id")?,
            text(row, "order_number")?,
            id(row, "import_id")?,
            id(row, "result_set_id")?,
            text(row, "result_set")?,
            text(row, "filename")?,
            text(row, "sha256")?,
            text(row, "instrument_id")?,
            text(row, "instrument_name")?,
            text(row, "method_id")?,
            text(row, "run_identifier")?,
            text(row, "sample_identifier")?,
            time(row, "acquired_at")?,
            Field::Integer(row.try_get::<Option<i32>, _>("position")?.map(i64::from)),
            text(row, "analyte")?,
            text(row, "kind")?,
            number(row, "retention_time_min")?,
            number(row, "mz")?,
            number(row, "precursor_mz")?,
            number(row, "product_mz")?,
            number(row, "response")?,
            text(row, "response_unit")?,
            text(row, "concentration")?,
            text(row, "concentration_unit")?,
            text(row, "loq")?,
        ],
    })
}

/// Renders rows into chunks: the CSV header line first, or JSON objects separated by commas.
struct Renderer {
    export: Export,
    format: Format,
    buffer: Vec<u8>,
    rows: usize,
}

impl Renderer {
    fn new(export: Export, format: Format) -> Self {
        let mut renderer = Self {
            export,
            format,
            buffer: Vec::with_capacity(CHUNK_BYTES * 2),
            rows: 0,
        };
        if format == Format::Csv {
            renderer.csv_line(columns(export).iter().map(|c| (*c).to_owned()));
        }
        renderer
    }

    fn csv_line(&mut self, values: impl Iterator<Item = String>) {
        // RFC 4180: CRLF line ends; a field with a comma, quote, CR or LF is quoted, its quotes
        // doubled.
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .from_writer(&mut self.buffer);
        let record: Vec<String> = values.collect();
        // Writing into a Vec cannot fail.
        let _ = writer.write_record(&record);
        let _ = writer.flush();
    }

    fn push(&mut self, fields: &[Field]) {
        match self.format {
            Format::Csv => self.csv_line(fields.iter().map(Field::csv)),
            Format::Json => {
                if self.rows > 0 {
                    self.buffer.push(b',');
                }
                let object: serde_json::Map<String, serde_json::Value> = columns(self.export)
                    .iter()
                    .zip(fields)
                    .map(|(column, field)| ((*column).to_owned(), field.json()))
                    .collect();
                // Serializing a map of JSON values into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut self.buffer, &object);
            }
        }
        self.rows += 1;
    }

    fn take_if_full(&mut self) -> Option<Vec<u8>> {
        (self.buffer.len() >= CHUNK_BYTES).then(|| std::mem::take(&mut self.buffer))
    }
}

/// What an export stream carries: the page's plan first, then its rendered rows.
#[derive(Debug)]
pub enum Part {
    Head(Head),
    Rows(Vec<u8>),
}

/// Runs one page of an export in one read-only repeatable-read transaction (the plan and the
/// rows see the same data) and sends its parts into `send`; stops when the receiver is gone.
pub async fn run(
    pool: PgPool,
    export: Export,
    format: Format,
    customer_id: Uuid,
    start: Start,
    limit: i64,
    send: tokio::sync::mpsc::Sender<Result<Part, ApiError>>,
) {
    let outcome = async {
        let mut tx = pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        let head = plan(&mut tx, export, customer_id, start, limit).await?;
        let rows = head.row_count;
        if send.send(Ok(Part::Head(head))).await.is_err() {
            return Ok(());
        }
        stream_rows(&mut tx, export, format, customer_id, start, rows, &send).await
    }
    .await;
    if let Err(error) = outcome {
        let _ = send.send(Err(error)).await;
    }
}

/// Plans a page: how many rows, where the next starts.
async fn plan(
    conn: &mut PgConnection,
    export: Export,
    customer_id: Uuid,
    start: Start,
    limit: i64,
) -> Result<Head, ApiError> {
    let limit = if limit <= 0 { MAX_ROWS } else { limit.min(MAX_ROWS) };
    let (from, inclusive, skip) = bounds(start);
    // The publication time of the row just after a full page, if there is one.
    let next: Option<DateTime<Utc>> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT published_at FROM ({}) page OFFSET $4 LIMIT 1",
        rows_sql(export)
    )))
    .bind(customer_id)
    .bind(from)
    .bind(inclusive)
    .bind(skip + limit)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(next) = next else {
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT count(*) FROM ({}) page",
            rows_sql(export)
        )))
        .bind(customer_id)
        .bind(from)
        .bind(inclusive)
        .fetch_one(&mut *conn)
        .await?;
        let row_count = (count - skip).max(0);
        let last = last_time(conn, export, customer_id, start, row_count).await?;
        return Ok(Head {
            truncated: false,
            next_since: last,
            next_cursor: None,
            row_count,
        });
    };
    // Every row of the page published before `next`: whole publications only.
    let whole: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM (SELECT published_at FROM ({}) page OFFSET $4 LIMIT $5) head WHERE published_at < $6",
        rows_sql(export)
    )))
    .bind(customer_id)
    .bind(from)
    .bind(inclusive)
    .bind(skip)
    .bind(limit)
    .bind(next)
    .fetch_one(&mut *conn)
    .await?;
    if whole > 0 {
        let last = last_time(conn, export, customer_id, start, whole).await?;
        return Ok(Head {
            truncated: true,
            next_since: last,
            next_cursor: None,
            row_count: whole,
        });
    }
    // One publication larger than a page: split it, continued by the cursor.
    let skip_within = match start {
        Start::Within { at, skip } if at == next => skip + limit,
        _ => limit,
    };
    Ok(Head {
        truncated: true,
        next_since: Some(next),
        next_cursor: Some(cursor(next, skip_within)),
        row_count: limit,
    })
}

/// The earliest time of the export, for a page that starts at the beginning.
fn beginning() -> DateTime<Utc> {
    DateTime::from_timestamp(0, 0).unwrap_or_default()
}

fn bounds(start: Start) -> (DateTime<Utc>, bool, i64) {
    match start {
        Start::Since(since) => (since.unwrap_or_else(beginning), false, 0),
        Start::Within { at, skip } => (at, true, skip),
    }
}

async fn last_time(
    conn: &mut PgConnection,
    export: Export,
    customer_id: Uuid,
    start: Start,
    rows: i64,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    if rows == 0 {
        return Ok(None);
    }
    let (from, inclusive, skip) = bounds(start);
    Ok(sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT published_at FROM ({}) page OFFSET $4 LIMIT 1",
        rows_sql(export)
    )))
    .bind(customer_id)
    .bind(from)
    .bind(inclusive)
    .bind(skip + rows - 1)
    .fetch_optional(conn)
    .await?)
}

/// Streams `rows` rows after `start`, rendered, in chunks of about 64 KiB.
async fn stream_rows(
    conn: &mut PgConnection,
    export: Export,
    format: Format,
    customer_id: Uuid,
    start: Start,
    rows: i64,
    send: &tokio::sync::mpsc::Sender<Result<Part, ApiError>>,
) -> Result<(), ApiError> {
    let (from, inclusive, skip) = bounds(start);
    let sql = format!("{} OFFSET $4 LIMIT $5", rows_sql(export));
    let mut renderer = Renderer::new(export, format);
    let mut stream = sqlx::query(AssertSqlSafe(sql))
        .bind(customer_id)
        .bind(from)
        .bind(inclusive)
        .bind(skip)
        .bind(rows)
        .fetch(conn);
    while let Some(row) = stream.next().await {
        renderer.push(&fields(export, &row?)?);
        if let Some(chunk) = renderer.take_if_full()
            && send.send(Ok(Part::Rows(chunk))).await.is_err()
        {
            return Ok(());
        }
    }
    if !renderer.buffer.is_empty() {
        let _ = send
            .send(Ok(Part::Rows(std::mem::take(&mut renderer.buffer))))
            .await;
    }
    Ok(())
}

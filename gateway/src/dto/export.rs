//! Bulk export shapes: the query, and the JSON page with its rows (the CSV form carries the
//! same columns, header line first, and the page fields in `X-Export-*` headers).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Query of `GET /export/coas` and `GET /export/instrument-results`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `json` (default) or `csv` (RFC 4180, header line first, streamed; page fields in the
    /// `X-Export-Truncated`, `X-Export-Next-Since`, `X-Export-Next-Cursor` headers). The MCP tool
    /// answers JSON only.
    pub format: Option<String>,
    /// Rows published strictly after this time (ISO 8601): the last `publishedAt` of the
    /// previous page (`nextSince`). Absent: from the first row.
    pub since: Option<DateTime<Utc>>,
    /// Continues a page that split one publication larger than a page (`nextCursor`); wins over
    /// `since`.
    pub cursor: Option<String>,
    /// Rows per page, 1 to 5000 (default 5000).
    #[param(minimum = 1, maximum = 5000)]
    pub limit: Option<i32>,
}

/// One row of `GET /export/coas`: one analyte of one published COA.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportCoaRow {
    /// The COA's publication time; rows of one COA share it, and every COA has its own.
    #[schema(format = DateTime)]
    pub published_at: String,
    pub coa_id: String,
    pub submission_id: String,
    pub accession_number: String,
    pub order_id: String,
    pub order_number: String,
    pub compound: String,
    pub lot_number: Option<String>,
    pub version: i64,
    /// `published`, `superseded` or `retracted` (at the time of the export).
    pub status: String,
    pub analyte: String,
    pub test_id: String,
    /// Decimal string, or `null` when a qualifier stands instead.
    pub value: Option<String>,
    pub qualifier: Option<String>,
    pub unit: String,
    pub loq: Option<String>,
    pub lod: Option<String>,
    pub specification: Option<String>,
    pub outcome: Option<String>,
    pub method: String,
    pub instrument: String,
    #[schema(format = DateTime)]
    pub measured_at: String,
}

/// One row of `GET /export/instrument-results`: one measurement released by one published COA.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportInstrumentRow {
    #[schema(format = DateTime)]
    pub published_at: String,
    pub coa_id: String,
    pub accession_number: String,
    pub order_id: String,
    pub order_number: String,
    pub import_id: String,
    pub result_set_id: String,
    pub result_set: String,
    pub filename: String,
    pub sha256: String,
    pub instrument_id: Option<String>,
    pub instrument_name: Option<String>,
    pub method_id: Option<String>,
    pub run_identifier: Option<String>,
    pub sample_identifier: Option<String>,
    #[schema(format = DateTime)]
    pub acquired_at: Option<String>,
    pub position: i64,
    pub analyte: String,
    /// `chromatographic_peak` or `srm_transition`.
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

/// A page of `GET /export/coas` (JSON).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoaExportPage {
    /// At most 5000 rows, in publication order.
    pub data: Vec<ExportCoaRow>,
    /// More rows follow: call again with `since` = `nextSince` (the last `publishedAt`).
    pub truncated: bool,
    #[schema(format = DateTime)]
    pub next_since: Option<String>,
    /// Set only when one publication larger than a page was split: pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// A page of `GET /export/instrument-results` (JSON).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstrumentExportPage {
    /// At most 5000 rows, in publication order.
    pub data: Vec<ExportInstrumentRow>,
    /// More rows follow: call again with `since` = `nextSince` (the last `publishedAt`).
    pub truncated: bool,
    #[schema(format = DateTime)]
    pub next_since: Option<String>,
    /// Set only when one publication larger than a page was split: pass it as `cursor`.
    pub next_cursor: Option<String>,
}

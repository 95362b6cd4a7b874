//! Data-product shapes: the raw-data manifest (exactly the spec's, no extra properties anywhere)
//! and the structured instrument data behind published COAs.

use super::common::{optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::results as pb;
use serde::Serialize;
use utoipa::ToSchema;

/// The order a manifest belongs to.
#[derive(Serialize, ToSchema)]
// `deny_unknown_fields` makes the schema `additionalProperties: false` (a Serialize-only shape).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestOrder {
    /// Order UUID.
    #[schema(format = Uuid)]
    pub id: String,
    pub order_number: String,
}

/// A COA that released a file.
#[derive(Serialize, ToSchema)]
// `deny_unknown_fields` makes the schema `additionalProperties: false` (a Serialize-only shape).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Release {
    #[schema(format = Uuid)]
    pub coa_id: String,
    pub accession_number: String,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub published_at: Option<DateTime<Utc>>,
}

/// Release-safe provenance of a file: no storage coordinates, no parser payloads.
#[derive(Serialize, ToSchema)]
// `deny_unknown_fields` makes the schema `additionalProperties: false` (a Serialize-only shape).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawFileMetadata {
    /// sha256 the importing client computed (64 lowercase hex), or `null`.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub client_sha256: Option<String>,
    pub parser_version: String,
    pub connector_version: Option<String>,
    pub sample_identifier: Option<String>,
    pub run_identifier: Option<String>,
    pub instrument_name: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub acquired_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub imported_at: DateTime<Utc>,
    /// When the client's sha256 was found equal to the server's; `null` when it was not given or
    /// differs.
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub integrity_verified_at: Option<DateTime<Utc>>,
    /// The published COAs that release the file.
    pub releases: Vec<Release>,
}

/// One released instrument file.
#[derive(Serialize, ToSchema)]
// `deny_unknown_fields` makes the schema `additionalProperties: false` (a Serialize-only shape).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawFile {
    #[schema(format = Uuid)]
    pub import_id: String,
    #[schema(format = Uuid)]
    pub result_set_id: String,
    pub vendor: String,
    pub filename: String,
    pub mime_type: Option<String>,
    #[schema(minimum = 0)]
    pub size_bytes: Option<i64>,
    /// Server-computed sha256 of the bytes `downloadUrl` returns (64 lowercase hex).
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
    /// Signed download URL; expires at the manifest's `expiresAt`. Do not store it.
    #[schema(format = "uri")]
    pub download_url: String,
    /// Signed URL of the vendor's native bundle, or `null`.
    #[schema(format = "uri")]
    pub native_bundle_url: Option<String>,
    pub metadata: RawFileMetadata,
}

/// The released instrument-file manifest of an order.
#[derive(Serialize, ToSchema)]
// `deny_unknown_fields` makes the schema `additionalProperties: false` (a Serialize-only shape).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawDataManifest {
    pub order: ManifestOrder,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub generated_at: DateTime<Utc>,
    /// When every signed URL of the manifest expires: one hour after `generatedAt`.
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: DateTime<Utc>,
    pub files: Vec<RawFile>,
}

single_envelope!(RawDataEnvelope, RawDataData, raw_data: RawDataManifest);

fn releases(releases: Vec<pb::Release>) -> Vec<Release> {
    releases
        .into_iter()
        .map(|release| Release {
            coa_id: release.coa_id,
            accession_number: release.accession_number,
            published_at: optional_time(release.published_at.as_ref()),
        })
        .collect()
}

impl TryFrom<pb::RawDataManifest> for RawDataManifest {
    type Error = ApiError;

    fn try_from(manifest: pb::RawDataManifest) -> Result<Self, ApiError> {
        let files = manifest
            .files
            .into_iter()
            .map(|file| {
                Ok(RawFile {
                    metadata: RawFileMetadata {
                        client_sha256: file.client_sha256,
                        parser_version: file.parser_version,
                        connector_version: file.connector_version,
                        sample_identifier: file.sample_identifier,
                        run_identifier: file.run_identifier,
                        instrument_name: file.instrument_name,
                        acquired_at: optional_time(file.acquired_at.as_ref()),
                        imported_at: required_time(file.imported_at.as_ref(), "importedAt")?,
                        integrity_verified_at: optional_time(file.integrity_verified_at.as_ref()),
                        releases: releases(file.releases),
                    },
                    import_id: file.import_id,
                    result_set_id: file.result_set_id,
                    vendor: file.vendor,
                    filename: file.filename,
                    mime_type: file.mime_type,
                    size_bytes: file.size_bytes,
                    sha256: file.sha256,
                    download_url: file.download_url,
                    native_bundle_url: file.native_bundle_url,
                })
            })
            .collect::<Result<_, ApiError>>()?;
        Ok(RawDataManifest {
            order: ManifestOrder {
                id: manifest.order_id,
                order_number: manifest.order_number,
            },
            generated_at: required_time(manifest.generated_at.as_ref(), "generatedAt")?,
            expires_at: required_time(manifest.expires_at.as_ref(), "expiresAt")?,
            files,
        })
    }
}

/// One structured measurement parsed from an instrument file.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    /// Compound or peak name; an unnamed SRM transition is `Q1=… Q3=…`.
    pub analyte: String,
    /// `chromatographic_peak` or `srm_transition`.
    pub kind: String,
    /// Apex retention time in minutes.
    pub retention_time_min: Option<f64>,
    pub mz: Option<f64>,
    /// SRM/MRM precursor m/z (Q1).
    pub precursor_mz: Option<f64>,
    /// SRM/MRM product m/z (Q3).
    pub product_mz: Option<f64>,
    /// Integrated peak area or the instrument report's response.
    pub response: Option<f64>,
    pub response_unit: Option<String>,
    /// Concentration as the instrument reported it (decimal string).
    pub concentration: Option<String>,
    pub concentration_unit: Option<String>,
    /// Limit of quantitation as reported (decimal string).
    pub loq: Option<String>,
}

/// The file a run's measurements came from.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunFile {
    pub vendor: String,
    pub filename: String,
    pub mime_type: Option<String>,
    pub size_bytes: i64,
    /// Server-computed sha256 (64 lowercase hex).
    pub sha256: String,
    pub client_sha256: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub integrity_verified_at: Option<DateTime<Utc>>,
    /// `mzml`, `andi-netcdf`, `vendor-csv`, or `null` when no open format applies.
    pub format: Option<String>,
    pub parser_version: String,
    /// `parsed`, `failed` (the file is still released; `parseError` says why) or `not_parsed`.
    pub parse_status: String,
    pub parse_error: Option<String>,
    /// Signed download URL (expires at `expiresAt`; do not store it), or `null` when the order
    /// does not publish raw data (`publishRawData: false`).
    pub download_url: Option<String>,
}

/// One instrument run: a released file and the measurements parsed from it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstrumentRun {
    #[schema(format = Uuid)]
    pub import_id: String,
    #[schema(format = Uuid)]
    pub result_set_id: String,
    /// Name of the sample's result set, for example `hplc-purity`.
    pub result_set: String,
    pub accession_number: String,
    /// Registry id of the instrument (`GET /instruments`), when known.
    pub instrument_id: Option<String>,
    pub instrument_name: Option<String>,
    /// Registry id of the method (`GET /methods`), when known.
    pub method_id: Option<String>,
    pub run_identifier: Option<String>,
    pub sample_identifier: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub acquired_at: Option<DateTime<Utc>>,
    pub file: RunFile,
    /// The published COAs that release the file.
    pub releases: Vec<Release>,
    pub measurements: Vec<Measurement>,
}

/// Structured instrument data behind an order's published COAs, or behind one COA.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstrumentData {
    pub order: ManifestOrder,
    /// The COA the data is behind (`GET /results/{reference}/instrument-data`), else `null`.
    pub coa_id: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub generated_at: DateTime<Utc>,
    /// When the download URLs expire; `null` when none are signed.
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<DateTime<Utc>>,
    pub runs: Vec<InstrumentRun>,
}

single_envelope!(InstrumentDataEnvelope, InstrumentDataData, instrument_data: InstrumentData);

impl InstrumentData {
    /// Converts results-svc's answer; `order_number` fills in what results-svc did not know.
    pub fn from_proto(data: pb::InstrumentData, order_number: Option<String>) -> Result<Self, ApiError> {
        let runs = data
            .runs
            .into_iter()
            .map(|run| InstrumentRun {
                import_id: run.import_id,
                result_set_id: run.result_set_id,
                result_set: run.result_set,
                accession_number: run.accession_number,
                instrument_id: run.instrument_id,
                instrument_name: run.instrument_name,
                method_id: run.method_id,
                run_identifier: run.run_identifier,
                sample_identifier: run.sample_identifier,
                acquired_at: optional_time(run.acquired_at.as_ref()),
                file: RunFile {
                    vendor: run.vendor,
                    filename: run.filename,
                    mime_type: run.mime_type,
                    size_bytes: run.size_bytes,
                    sha256: run.sha256,
                    client_sha256: run.client_sha256,
                    integrity_verified_at: optional_time(run.integrity_verified_at.as_ref()),
                    format: run.format,
                    parser_version: run.parser_version,
                    parse_status: run.parse_status,
                    parse_error: run.parse_error,
                    download_url: run.download_url,
                },
                releases: releases(run.releases),
                measurements: run
                    .measurements
                    .into_iter()
                    .map(|m| Measurement {
                        analyte: m.analyte,
                        kind: m.kind,
                        retention_time_min: m.retention_time_min,
                        mz: m.mz,
                        precursor_mz: m.precursor_mz,
                        product_mz: m.product_mz,
                        response: m.response,
                        response_unit: m.response_unit,
                        concentration: m.concentration,
                        concentration_unit: m.concentration_unit,
                        loq: m.loq,
                    })
                    .collect(),
            })
            .collect();
        Ok(InstrumentData {
            order: ManifestOrder {
                id: data.order_id,
                order_number: order_number
                    .filter(|number| !number.is_empty())
                    .unwrap_or(data.order_number),
            },
            coa_id: data.coa_id,
            generated_at: required_time(data.generated_at.as_ref(), "generatedAt")?,
            expires_at: optional_time(data.expires_at.as_ref()),
            runs,
        })
    }
}

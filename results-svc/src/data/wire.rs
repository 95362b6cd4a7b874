//! Conversions between the data products and `lab.results.v1` messages.

use super::repo::{ImportRow, MeasurementRow, ReleaseRow};
use super::{ImportHeader, InstrumentData, Manifest};
use platform::time::{from_timestamp, to_timestamp, to_timestamp_opt};
use proto::results as pb;

impl From<pb::ImportHeader> for ImportHeader {
    fn from(header: pb::ImportHeader) -> Self {
        ImportHeader {
            accession_number: header.accession_number,
            result_set: header.result_set,
            vendor: header.vendor,
            filename: header.filename,
            mime_type: header.mime_type,
            client_sha256: header.client_sha256,
            connector_version: header.connector_version,
            sample_identifier: header.sample_identifier,
            run_identifier: header.run_identifier,
            instrument: header.instrument,
            method: header.method,
            acquired_at: header.acquired_at.as_ref().and_then(from_timestamp),
            native_bundle_filename: header.native_bundle_filename,
            format: header.format,
        }
    }
}

impl From<&ImportRow> for pb::InstrumentImport {
    fn from(row: &ImportRow) -> Self {
        pb::InstrumentImport {
            id: row.id.to_string(),
            result_set_id: row.result_set_id.to_string(),
            result_set: row.result_set.clone(),
            accession_number: row.accession_number.clone(),
            order_id: row.order_id.to_string(),
            vendor: row.vendor.clone(),
            filename: row.filename.clone(),
            mime_type: row.mime_type.clone(),
            size_bytes: row.size_bytes,
            sha256: row.sha256.clone(),
            client_sha256: row.client_sha256.clone(),
            integrity_verified_at: to_timestamp_opt(row.integrity_verified_at),
            format: row.format.clone(),
            parser_version: row.parser_version.clone(),
            connector_version: row.connector_version.clone(),
            sample_identifier: row.sample_identifier.clone(),
            run_identifier: row.run_identifier.clone(),
            instrument_id: row.instrument_id.clone(),
            instrument_name: row.instrument_name.clone(),
            method_id: row.method_id.clone(),
            acquired_at: to_timestamp_opt(row.acquired_at),
            imported_at: Some(to_timestamp(row.imported_at)),
            imported_by: row.imported_by.clone(),
            parse_status: row.parse_status.clone(),
            parse_error: row.parse_error.clone(),
            measurement_count: i32::try_from(row.measurement_count).unwrap_or(i32::MAX),
            has_native_bundle: row.native_bundle_key.is_some(),
        }
    }
}

fn releases(row: &ImportRow) -> Vec<pb::Release> {
    row.releases
        .as_ref()
        .map(|releases| releases.0.iter().map(release).collect())
        .unwrap_or_default()
}

fn release(release: &ReleaseRow) -> pb::Release {
    pb::Release {
        coa_id: release.coa_id.to_string(),
        accession_number: release.accession_number.clone(),
        published_at: to_timestamp_opt(release.published_at),
    }
}

impl From<&MeasurementRow> for pb::Measurement {
    fn from(row: &MeasurementRow) -> Self {
        pb::Measurement {
            analyte: row.analyte.clone(),
            kind: row.kind.clone(),
            retention_time_min: row.retention_time_min,
            mz: row.mz,
            precursor_mz: row.precursor_mz,
            product_mz: row.product_mz,
            response: row.response,
            response_unit: row.response_unit.clone(),
            concentration: row.concentration.clone(),
            concentration_unit: row.concentration_unit.clone(),
            loq: row.loq.clone(),
            position: row.position,
        }
    }
}

/// The manifest of order `order_id` / `order_number`.
pub fn manifest(order_id: String, order_number: String, manifest: &Manifest) -> pb::RawDataManifest {
    pb::RawDataManifest {
        order_id,
        order_number,
        generated_at: Some(to_timestamp(manifest.signing.generated_at)),
        expires_at: Some(to_timestamp(manifest.signing.expires_at)),
        files: manifest
            .files
            .iter()
            .map(|file| {
                let row = &file.import;
                pb::RawFile {
                    import_id: row.id.to_string(),
                    result_set_id: row.result_set_id.to_string(),
                    vendor: row.vendor.clone(),
                    filename: row.filename.clone(),
                    mime_type: row.mime_type.clone(),
                    size_bytes: Some(row.size_bytes),
                    sha256: row.sha256.clone(),
                    download_url: file.download_url.clone(),
                    native_bundle_url: file.native_bundle_url.clone(),
                    client_sha256: row.client_sha256.clone(),
                    parser_version: row.parser_version.clone(),
                    connector_version: row.connector_version.clone(),
                    sample_identifier: row.sample_identifier.clone(),
                    run_identifier: row.run_identifier.clone(),
                    instrument_name: row.instrument_name.clone(),
                    acquired_at: to_timestamp_opt(row.acquired_at),
                    imported_at: Some(to_timestamp(row.imported_at)),
                    integrity_verified_at: to_timestamp_opt(row.integrity_verified_at),
                    releases: releases(row),
                }
            })
            .collect(),
    }
}

/// The instrument data of order `order_number`.
pub fn instrument_data(order_number: String, data: &InstrumentData) -> pb::InstrumentData {
    pb::InstrumentData {
        order_id: data.order_id.to_string(),
        order_number,
        coa_id: data.coa_id.map(|id| id.to_string()),
        generated_at: Some(to_timestamp(
            data.signing
                .map_or_else(platform::time::now, |signing| signing.generated_at),
        )),
        expires_at: data.signing.map(|signing| to_timestamp(signing.expires_at)),
        runs: data
            .runs
            .iter()
            .map(|(row, url, measurements)| pb::InstrumentRun {
                import_id: row.id.to_string(),
                result_set_id: row.result_set_id.to_string(),
                result_set: row.result_set.clone(),
                accession_number: row.accession_number.clone(),
                instrument_id: row.instrument_id.clone(),
                instrument_name: row.instrument_name.clone(),
                method_id: row.method_id.clone(),
                run_identifier: row.run_identifier.clone(),
                sample_identifier: row.sample_identifier.clone(),
                acquired_at: to_timestamp_opt(row.acquired_at),
                vendor: row.vendor.clone(),
                filename: row.filename.clone(),
                mime_type: row.mime_type.clone(),
                size_bytes: row.size_bytes,
                sha256: row.sha256.clone(),
                client_sha256: row.client_sha256.clone(),
                integrity_verified_at: to_timestamp_opt(row.integrity_verified_at),
                format: row.format.clone(),
                parser_version: row.parser_version.clone(),
                parse_status: row.parse_status.clone(),
                parse_error: row.parse_error.clone(),
                download_url: url.clone(),
                releases: releases(row),
                measurements: measurements.iter().map(Into::into).collect(),
            })
            .collect(),
    }
}

//! Raw instrument files (results-svc, lab.analyst imports; any operator lists): `labctl data
//! import` streams a file (and optionally the vendor's native bundle) with its provenance and
//! the client's sha256, which results-svc compares with its own.

use crate::client::{request, status_error, timestamp};
use crate::{Connection, DataCommand};
use anyhow::Context;
use platform::production::sha256_hex;
use proto::results as pb;
use serde_json::{Value, json};

/// Bytes per message of an import stream.
const CHUNK_BYTES: usize = 256 * 1024;

/// The connector version recorded with each import.
pub(crate) const CONNECTOR_VERSION: &str = concat!("labctl/", env!("CARGO_PKG_VERSION"));

pub(crate) fn import_json(import: &pb::InstrumentImport, unchanged: bool) -> Value {
    json!({
        "id": import.id, "resultSetId": import.result_set_id, "resultSet": import.result_set,
        "accessionNumber": import.accession_number, "orderId": import.order_id, "vendor": import.vendor,
        "filename": import.filename, "mimeType": import.mime_type, "sizeBytes": import.size_bytes,
        "sha256": import.sha256, "clientSha256": import.client_sha256,
        "integrityVerifiedAt": timestamp(import.integrity_verified_at.as_ref()), "format": import.format,
        "parserVersion": import.parser_version, "connectorVersion": import.connector_version,
        "sampleIdentifier": import.sample_identifier, "runIdentifier": import.run_identifier,
        "instrumentId": import.instrument_id, "instrumentName": import.instrument_name, "methodId": import.method_id,
        "acquiredAt": timestamp(import.acquired_at.as_ref()), "importedAt": timestamp(import.imported_at.as_ref()),
        "importedBy": import.imported_by, "parseStatus": import.parse_status, "parseError": import.parse_error,
        "measurementCount": import.measurement_count, "hasNativeBundle": import.has_native_bundle,
        "unchanged": unchanged,
    })
}

/// An import as a stream: the header, the file's chunks, then the bundle's.
pub(crate) fn import_stream(
    header: pb::ImportHeader,
    file: Vec<u8>,
    bundle: Option<Vec<u8>>,
) -> impl futures::Stream<Item = pb::ImportChunk> + Send + 'static {
    let mut messages = vec![pb::ImportChunk {
        part: Some(pb::import_chunk::Part::Header(Box::new(header))),
    }];
    messages.extend(file.chunks(CHUNK_BYTES).map(|chunk| pb::ImportChunk {
        part: Some(pb::import_chunk::Part::FileChunk(chunk.to_vec())),
    }));
    if let Some(bundle) = bundle {
        messages.extend(bundle.chunks(CHUNK_BYTES).map(|chunk| pb::ImportChunk {
            part: Some(pb::import_chunk::Part::BundleChunk(chunk.to_vec())),
        }));
    }
    futures::stream::iter(messages)
}

fn file_name(path: &std::path::Path) -> anyhow::Result<String> {
    path.file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{} names no file", path.display()))
}

/// What `labctl data import` sends, from its arguments and the file.
#[allow(clippy::too_many_arguments)]
pub(crate) fn header(
    accession: &str,
    result_set: &str,
    vendor: &str,
    filename: String,
    file: &[u8],
    mime_type: Option<String>,
    client_sha256: Option<String>,
    instrument: Option<String>,
    method: Option<String>,
) -> pb::ImportHeader {
    pb::ImportHeader {
        accession_number: accession.to_owned(),
        result_set: result_set.to_owned(),
        vendor: vendor.to_owned(),
        filename,
        mime_type,
        client_sha256: Some(client_sha256.unwrap_or_else(|| sha256_hex(file))),
        connector_version: Some(CONNECTOR_VERSION.to_owned()),
        instrument,
        method,
        ..pb::ImportHeader::default()
    }
}

pub(crate) async fn execute(
    connection: &Connection,
    token: &str,
    command: DataCommand,
) -> anyhow::Result<Value> {
    let mut client = crate::lab::results_client(connection).await?;
    match command {
        DataCommand::Import {
            file,
            accession,
            result_set,
            vendor,
            mime_type,
            client_sha256,
            instrument,
            method,
            sample_identifier,
            run_identifier,
            acquired_at,
            format,
            native_bundle,
        } => {
            let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let mut header = header(
                &accession,
                &result_set,
                &vendor,
                file_name(&file)?,
                &bytes,
                mime_type,
                client_sha256,
                instrument,
                method,
            );
            header.sample_identifier = sample_identifier;
            header.run_identifier = run_identifier;
            header.format = format;
            header.acquired_at = acquired_at
                .map(|text| {
                    chrono::DateTime::parse_from_rfc3339(&text)
                        .map(|time| platform::time::to_timestamp(time.to_utc()))
                        .with_context(|| format!("--acquired-at {text} is not an RFC 3339 time"))
                })
                .transpose()?;
            let bundle = match native_bundle {
                Some(path) => {
                    header.native_bundle_filename = Some(file_name(&path)?);
                    Some(std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?)
                }
                None => None,
            };
            let answer = client
                .import_instrument_file(request(import_stream(header, bytes, bundle), token))
                .await
                .map_err(status_error)?
                .into_inner();
            let import = answer.import.context("results-svc answered without the import")?;
            Ok(import_json(&import, answer.unchanged))
        }
        DataCommand::Imports { accession } => {
            let answer = client
                .list_imports(request(
                    pb::AccessionRequest {
                        accession_number: accession,
                    },
                    token,
                ))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(Value::Array(
                answer
                    .imports
                    .iter()
                    .map(|import| import_json(import, true))
                    .collect(),
            ))
        }
    }
}

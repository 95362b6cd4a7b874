//! Data products (issue 27): raw instrument files that staff import per result set of a sample,
//! the measurements parsed from the open formats (`crate::formats`), and the customer's reads
//! behind published COAs: the raw-data manifest with signed download URLs and the structured
//! instrument data. The bytes live in the blob store (`platform::blobs`), the provenance and
//! measurements in PostgreSQL.

pub mod export;
pub mod repo;
pub mod wire;

use crate::formats::{self, Format};
use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use platform::blobs::{BlobError, BlobStore};
use platform::error::{ApiError, ErrorCode};
use platform::principal::OperatorRef;
use platform::production::sha256_hex;
use repo::{ImportRow, MeasurementRow, NewImport};
use sqlx::PgPool;
use uuid::Uuid;

/// Largest file (and native bundle) an import takes, in bytes.
pub const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;
/// How long the signed URLs of a manifest last (the spec: one hour, shared by every URL).
pub const URL_LIFETIME_SECONDS: i64 = 3600;

/// What staff say about an imported file (the stream's header).
#[derive(Clone, Debug, Default)]
pub struct ImportHeader {
    pub accession_number: String,
    pub result_set: String,
    pub vendor: String,
    pub filename: String,
    pub mime_type: Option<String>,
    pub client_sha256: Option<String>,
    pub connector_version: Option<String>,
    pub sample_identifier: Option<String>,
    pub run_identifier: Option<String>,
    pub instrument: Option<String>,
    pub method: Option<String>,
    pub acquired_at: Option<DateTime<Utc>>,
    pub native_bundle_filename: Option<String>,
    pub format: Option<String>,
}

/// A file to import: the header, the file's bytes and the native bundle's.
#[derive(Clone, Debug)]
pub struct Upload {
    pub header: ImportHeader,
    pub file: Bytes,
    pub bundle: Option<Bytes>,
}

/// A stored import as staff and customers read it.
pub type Import = ImportRow;

/// Signed URLs of one answer: all expire together.
#[derive(Clone, Copy, Debug)]
pub struct Signing {
    pub generated_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl Signing {
    /// Now (whole seconds, so that the printed times are exact) and one hour later.
    pub fn now() -> Self {
        let now = platform::time::now();
        let generated_at = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
        Self {
            generated_at,
            expires_at: generated_at + Duration::seconds(URL_LIFETIME_SECONDS),
        }
    }
}

/// One released file with its signed URLs.
#[derive(Clone, Debug)]
pub struct SignedFile {
    pub import: Import,
    pub download_url: String,
    pub native_bundle_url: Option<String>,
}

/// The raw-data manifest of an order.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub signing: Signing,
    pub files: Vec<SignedFile>,
}

/// The instrument data behind published COAs: released files, what parsed from each, and the
/// file's signed URL when the order publishes raw data.
#[derive(Clone, Debug)]
pub struct InstrumentData {
    pub order_id: Uuid,
    pub coa_id: Option<Uuid>,
    pub signing: Option<Signing>,
    pub runs: Vec<(Import, Option<String>, Vec<MeasurementRow>)>,
}

/// A stored file opened through a local download link.
#[derive(Clone, Debug)]
pub struct Download {
    pub bytes: Bytes,
    pub filename: String,
    pub mime_type: Option<String>,
}

/// The data-product use cases.
#[derive(Clone)]
pub struct DataService {
    pool: PgPool,
    store: BlobStore,
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message)
}

/// A required text of 1 to `max` characters without control characters.
fn required_text(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max || value.chars().any(char::is_control) {
        return Err(invalid(
            field,
            format!("{field} is 1 to {max} characters without control characters"),
        ));
    }
    Ok(value.to_owned())
}

fn optional_text(field: &str, value: Option<String>, max: usize) -> Result<Option<String>, ApiError> {
    value
        .filter(|value| !value.trim().is_empty())
        .map(|value| required_text(field, &value, max))
        .transpose()
}

/// A file name: 1 to 255 characters, no path separators, not `.` or `..`.
fn file_name(field: &str, value: &str) -> Result<String, ApiError> {
    let name = required_text(field, value, 255)?;
    if name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(invalid(
            field,
            format!("{field} is a file name without a directory"),
        ));
    }
    Ok(name)
}

/// The blob key of an import's file (or bundle): its order and id, then a safe form of its name.
fn blob_key(order_id: Uuid, import_id: Uuid, part: &str, filename: &str) -> String {
    let safe: String = filename
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("raw/{order_id}/{import_id}/{part}/{safe}")
}

fn store_error(error: BlobError) -> ApiError {
    tracing::error!(%error, "blob store");
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the file store is unavailable; nothing was imported, retry",
    )
}

fn signing_error(error: BlobError) -> ApiError {
    tracing::error!(%error, "signing a download URL");
    ApiError::new(
        ErrorCode::RawDataUnavailable,
        "the released files cannot be signed now; retry later",
    )
}

impl DataService {
    pub fn new(pool: PgPool, store: BlobStore) -> Self {
        Self { pool, store }
    }

    /// Imports a file into a result set of a sample: hashes it, parses it where the format is
    /// open, stores the bytes, then the import and its measurements in one transaction. A file
    /// that does not parse is stored with its parse error. The same bytes under the same name
    /// into the same result set answer the stored import, unchanged.
    pub async fn import(&self, operator: &OperatorRef, upload: Upload) -> Result<(Import, bool), ApiError> {
        let Upload { header, file, bundle } = upload;
        let accession = required_text("accessionNumber", &header.accession_number, 64)?;
        let result_set = required_text("resultSet", &header.result_set, 100)?;
        let vendor = required_text("vendor", &header.vendor, 100)?;
        let filename = file_name("filename", &header.filename)?;
        let mime_type = optional_text("mimeType", header.mime_type, 255)?;
        let connector_version = optional_text("connectorVersion", header.connector_version, 100)?;
        let sample_identifier = optional_text("sampleIdentifier", header.sample_identifier, 200)?;
        let run_identifier = optional_text("runIdentifier", header.run_identifier, 200)?;
        let instrument = optional_text("instrument", header.instrument, 100)?;
        let method = optional_text("method", header.method, 100)?;
        let client_sha256 = header
            .client_sha256
            .filter(|hash| !hash.trim().is_empty())
            .map(|hash| hash.trim().to_ascii_lowercase())
            .map(|hash| {
                if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(hash)
                } else {
                    Err(invalid(
                        "clientSha256",
                        "clientSha256 is 64 hexadecimal characters",
                    ))
                }
            })
            .transpose()?;
        let format = match header.format.filter(|name| !name.trim().is_empty()) {
            Some(name) => Some(Format::from_name(name.trim()).ok_or_else(|| {
                invalid(
                    "format",
                    "format is one of mzml, andi-netcdf, vendor-csv (or absent: detected)",
                )
            })?),
            None => None,
        };
        if file.is_empty() {
            return Err(invalid("file", "the file is empty"));
        }
        if file.len() > MAX_FILE_BYTES {
            return Err(invalid(
                "file",
                format!("a file is at most {MAX_FILE_BYTES} bytes"),
            ));
        }
        let bundle_name = match (&bundle, header.native_bundle_filename) {
            (Some(_), Some(name)) => Some(file_name("nativeBundleFilename", &name)?),
            (Some(_), None) => {
                return Err(invalid(
                    "nativeBundleFilename",
                    "a native bundle needs its file name",
                ));
            }
            (None, Some(_)) => return Err(invalid("nativeBundle", "the native bundle's bytes are missing")),
            (None, None) => None,
        };
        let sha256 = sha256_hex(&file);

        let sample = {
            let mut conn = self.pool.acquire().await?;
            if let Some(existing) =
                repo::same_import(&mut conn, &accession, &result_set, &filename, &sha256).await?
            {
                return Ok((existing, true));
            }
            crate::repo::find_sample(&mut conn, &accession)
                .await?
                .ok_or_else(|| {
                    ApiError::new(ErrorCode::NotFound, format!("no received sample {accession}"))
                })?
        };

        // Parsing is CPU work on up to MAX_FILE_BYTES: off the async workers.
        let (parse_bytes, name) = (file.clone(), filename.clone());
        let (format, outcome) = tokio::task::spawn_blocking(move || {
            let format = format.or_else(|| Format::detect(&name, &parse_bytes));
            (format, format.map(|format| formats::parse(format, &parse_bytes)))
        })
        .await
        .map_err(|error| ApiError::new(ErrorCode::Internal, format!("the parser task failed: {error}")))?;

        let id = Uuid::now_v7();
        let now = platform::time::now();
        let (parse_status, parse_error, parsed) = match outcome {
            Some(Ok(parsed)) => ("parsed", None, Some(parsed)),
            Some(Err(error)) => ("failed", Some(error.to_string()), None),
            None => ("not_parsed", None, None),
        };
        let measurements: Vec<MeasurementRow> = parsed
            .as_ref()
            .map(|parsed| {
                parsed
                    .measurements
                    .iter()
                    .enumerate()
                    .map(|(index, m)| MeasurementRow {
                        import_id: id,
                        position: i32::try_from(index + 1).unwrap_or(i32::MAX),
                        analyte: m.analyte.clone(),
                        kind: m.kind.name().to_owned(),
                        retention_time_min: m.retention_time_min,
                        mz: m.mz,
                        precursor_mz: m.precursor_mz,
                        product_mz: m.product_mz,
                        response: m.response,
                        response_unit: m.response_unit.clone(),
                        concentration: m.concentration.clone(),
                        concentration_unit: m.concentration_unit.clone(),
                        loq: m.loq.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let storage_key = blob_key(sample.order_id, id, "file", &filename);
        let bundle_key = bundle_name
            .as_ref()
            .map(|name| blob_key(sample.order_id, id, "native", name));
        let import = NewImport {
            id,
            result_set,
            accession_number: accession.clone(),
            customer_id: sample.customer_id,
            order_id: sample.order_id,
            vendor,
            filename: filename.clone(),
            mime_type,
            size_bytes: i64::try_from(file.len()).unwrap_or(i64::MAX),
            integrity_verified_at: client_sha256
                .as_ref()
                .filter(|hash| **hash == sha256)
                .map(|_| now),
            sha256: sha256.clone(),
            client_sha256,
            format: format.map(|format| format.name().to_owned()),
            parser_version: format
                .map(formats::parser_version)
                .unwrap_or_else(|| "none (no open format applies)".to_owned()),
            connector_version,
            sample_identifier: sample_identifier
                .or_else(|| parsed.as_ref().and_then(|p| p.sample_identifier.clone())),
            run_identifier: run_identifier.or_else(|| parsed.as_ref().and_then(|p| p.run_identifier.clone())),
            instrument_name: parsed
                .as_ref()
                .and_then(|p| p.instrument_name.clone())
                .or_else(|| instrument.clone()),
            instrument_id: instrument,
            method_id: method,
            acquired_at: header
                .acquired_at
                .or_else(|| parsed.as_ref().and_then(|p| p.acquired_at)),
            imported_at: now,
            imported_by: operator.name.clone(),
            imported_by_id: Some(operator.id),
            storage_key: storage_key.clone(),
            native_bundle_size_bytes: bundle
                .as_ref()
                .map(|b| i64::try_from(b.len()).unwrap_or(i64::MAX)),
            native_bundle_filename: bundle_name,
            native_bundle_key: bundle_key.clone(),
            parse_status: parse_status.to_owned(),
            parse_error,
        };

        // The bytes first: a row never names a blob that is not there. A blob whose row never
        // commits is invisible (nothing reads the store without a row).
        self.store.put(&storage_key, file).await.map_err(store_error)?;
        if let (Some(key), Some(bytes)) = (&bundle_key, bundle) {
            self.store.put(key, bytes).await.map_err(store_error)?;
        }
        let mut tx = self.pool.begin().await?;
        let inserted = repo::insert_import(&mut tx, &import, &measurements).await?;
        tx.commit().await?;
        let mut conn = self.pool.acquire().await?;
        let stored = repo::same_import(&mut conn, &accession, &import.result_set, &filename, &sha256)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::Internal, "the import vanished after its commit"))?;
        if !inserted {
            // A concurrent import of the same file won; ours is not referenced.
            let _ = self.store.delete(&storage_key).await;
            if let Some(key) = &bundle_key {
                let _ = self.store.delete(key).await;
            }
        }
        Ok((stored, !inserted))
    }

    /// Starts one page of an export for the customer: the page's parts arrive on the receiver
    /// (the plan first, then the rendered rows), produced by a task of its own.
    pub fn export(
        &self,
        export: export::Export,
        format: export::Format,
        customer_id: Uuid,
        start: export::Start,
        limit: i64,
    ) -> tokio::sync::mpsc::Receiver<Result<export::Part, ApiError>> {
        let (send, receive) = tokio::sync::mpsc::channel(4);
        tokio::spawn(export::run(
            self.pool.clone(),
            export,
            format,
            customer_id,
            start,
            limit,
            send,
        ));
        receive
    }

    /// Every import of an accession, lab-wide (staff).
    pub async fn list_imports(&self, accession: &str) -> Result<Vec<Import>, ApiError> {
        let mut conn = self.pool.acquire().await?;
        Ok(repo::imports_of_accession(&mut conn, accession.trim()).await?)
    }

    async fn sign(&self, key: &str, signing: &Signing) -> Result<String, ApiError> {
        self.store
            .signed_url(key, signing.expires_at)
            .await
            .map(|url| url.to_string())
            .map_err(signing_error)
    }

    /// The raw-data manifest of the customer's order: the files released by its published COAs
    /// with signed URLs. An order without a COA in force is `not_found` (the gateway answers
    /// one generic 404 for every case); files that cannot be signed are `raw_data_unavailable`.
    pub async fn manifest(&self, customer_id: Uuid, order_id: Uuid) -> Result<Manifest, ApiError> {
        let imports = {
            let mut conn = self.pool.acquire().await?;
            if !repo::order_has_published_coa(&mut conn, customer_id, order_id).await? {
                return Err(ApiError::new(ErrorCode::NotFound, "raw data not found"));
            }
            repo::released_imports_of_order(&mut conn, customer_id, order_id).await?
        };
        let signing = Signing::now();
        let mut files = Vec::with_capacity(imports.len());
        for import in imports {
            let download_url = self.sign(&import.storage_key, &signing).await?;
            let native_bundle_url = match &import.native_bundle_key {
                Some(key) => Some(self.sign(key, &signing).await?),
                None => None,
            };
            files.push(SignedFile {
                import,
                download_url,
                native_bundle_url,
            });
        }
        Ok(Manifest { signing, files })
    }

    /// The instrument data behind the published COAs of the customer's order (`coa` absent) or
    /// behind one of its published COAs. Downloads are signed only when `sign_downloads`.
    pub async fn instrument_data(
        &self,
        customer_id: Uuid,
        order_id: Uuid,
        coa: Option<Uuid>,
        sign_downloads: bool,
    ) -> Result<InstrumentData, ApiError> {
        let (imports, measurements) = {
            let mut conn = self.pool.acquire().await?;
            let imports = match coa {
                Some(coa) => repo::imports_released_by(&mut conn, customer_id, coa).await?,
                None => repo::released_imports_of_order(&mut conn, customer_id, order_id).await?,
            };
            let ids: Vec<Uuid> = imports.iter().map(|import| import.id).collect();
            let measurements = repo::measurements_of(&mut conn, &ids).await?;
            (imports, measurements)
        };
        let signing = (sign_downloads && !imports.is_empty()).then(Signing::now);
        // Grouped once by import (the rows arrive in import then position order).
        let mut by_import: std::collections::HashMap<Uuid, Vec<MeasurementRow>> =
            std::collections::HashMap::with_capacity(imports.len());
        for measurement in measurements {
            by_import
                .entry(measurement.import_id)
                .or_default()
                .push(measurement);
        }
        let mut runs = Vec::with_capacity(imports.len());
        for import in imports {
            let url = match &signing {
                Some(signing) => Some(self.sign(&import.storage_key, signing).await?),
                None => None,
            };
            let rows = by_import.remove(&import.id).unwrap_or_default();
            runs.push((import, url, rows));
        }
        Ok(InstrumentData {
            order_id,
            coa_id: coa,
            signing,
            runs,
        })
    }

    /// Opens a stored file behind a local download link: the link's signature and expiry, and
    /// that the file is still released. Every refusal is the same `not_found`.
    pub async fn open_download(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
    ) -> Result<Download, ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "file not found or link expired");
        self.store
            .open_local_link(key, expires, signature, platform::time::now())
            .map_err(|_| not_found())?;
        let (filename, mime_type) = {
            let mut conn = self.pool.acquire().await?;
            repo::released_blob(&mut conn, key).await?.ok_or_else(not_found)?
        };
        let bytes = self.store.get(key).await.map_err(|error| match error {
            BlobError::NotFound => not_found(),
            other => store_error(other),
        })?;
        Ok(Download {
            bytes,
            filename,
            mime_type,
        })
    }
}

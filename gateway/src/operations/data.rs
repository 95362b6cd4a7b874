//! Translation of the data products to gRPC: the order reference resolves at orders-svc
//! (`GetDataRelease`: id, number, publishRawData; the key's own customer only), then
//! results-svc answers the raw-data manifest or the instrument data; and the local-store
//! download link streams the file from results-svc (the link's signature is the authorization).

use super::{missing, service_error};
use crate::caller::Caller;
use crate::dto::data::{InstrumentData, InstrumentDataEnvelope, RawDataEnvelope, RawDataManifest};
use crate::peers::Peers;
use platform::error::{ApiError, ErrorCode};
use platform::grpc::outgoing;
use platform::mesh::RESULTS_SVC;
use proto::results as pb;

/// The one answer of `GET /orders/{reference}/raw-data` for a missing order, another customer's
/// order, an order with raw data disabled and an order without a published COA: the same code
/// and message, so the four cannot be told apart.
pub fn raw_data_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "raw data not found")
}

/// `GET /orders/{reference}/raw-data`: the manifest of the files released by the order's
/// published COAs, with signed URLs that expire together one hour after `generatedAt`.
pub async fn get_raw_data(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<RawDataEnvelope, ApiError> {
    let not_found = |error: ApiError| match error.code {
        ErrorCode::NotFound | ErrorCode::InvalidRequest => raw_data_not_found(),
        _ => error,
    };
    let order = super::data_release(peers, caller, reference)
        .await
        .map_err(not_found)?;
    if !order.publish_raw_data {
        return Err(raw_data_not_found());
    }
    let manifest = peers
        .results()
        .get_raw_data_manifest(outgoing(
            pb::RawDataRequest {
                order_id: order.order_id,
                order_number: order.order_number,
            },
            &caller.token(RESULTS_SVC),
        ))
        .await
        .map_err(|status| not_found(service_error(status)))?
        .into_inner();
    Ok(RawDataManifest::try_from(manifest)?.into())
}

/// `GET /orders/{reference}/instrument-data`: the measurements behind the order's published
/// COAs; file downloads are signed only when the order publishes raw data.
pub async fn get_order_instrument_data(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<InstrumentDataEnvelope, ApiError> {
    let order = super::data_release(peers, caller, reference).await?;
    let data = instrument_data(
        peers,
        caller,
        pb::InstrumentDataRequest {
            order_id: Some(order.order_id),
            coa_reference: None,
            sign_downloads: order.publish_raw_data,
        },
    )
    .await?;
    Ok(InstrumentData::from_proto(data, Some(order.order_number))?.into())
}

/// `GET /results/{reference}/instrument-data`: the measurements behind one published COA.
pub async fn get_result_instrument_data(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<InstrumentDataEnvelope, ApiError> {
    // An order-level reference names the order's one COA (super::results::get_coa).
    let reference = if super::results::names_an_order(&reference) {
        super::results::get_coa(peers, caller, reference).await?.id
    } else {
        reference
    };
    // Unsigned first: the COA names its order, whose publishRawData decides the signing.
    let unsigned = instrument_data(
        peers,
        caller,
        pb::InstrumentDataRequest {
            order_id: None,
            coa_reference: Some(reference.clone()),
            sign_downloads: false,
        },
    )
    .await?;
    let order = super::data_release(peers, caller, unsigned.order_id.clone()).await?;
    let data = if order.publish_raw_data && !unsigned.runs.is_empty() {
        instrument_data(
            peers,
            caller,
            pb::InstrumentDataRequest {
                order_id: None,
                coa_reference: Some(reference),
                sign_downloads: true,
            },
        )
        .await?
    } else {
        unsigned
    };
    Ok(InstrumentData::from_proto(data, Some(order.order_number))?.into())
}

async fn instrument_data(
    peers: &Peers,
    caller: &Caller,
    request: pb::InstrumentDataRequest,
) -> Result<pb::InstrumentData, ApiError> {
    Ok(peers
        .results()
        .get_instrument_data(outgoing(request, &caller.token(RESULTS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner())
}

/// A file behind a local-store download link, streamed as results-svc sends it.
pub struct RawFileDownload {
    pub filename: String,
    pub mime_type: Option<String>,
    pub size_bytes: i64,
    pub body: axum::body::Body,
}

/// `GET /api/v1/files/results/{key}?expires=…&signature=…`: the file's bytes (no key; a bad,
/// altered or expired link is 404). The first message names the file; the body streams the rest.
pub async fn raw_file(
    peers: &Peers,
    key: String,
    expires: i64,
    signature: String,
) -> Result<RawFileDownload, ApiError> {
    use futures::StreamExt;
    let mut request = tonic::Request::new(pb::OpenDownloadRequest {
        key,
        expires,
        signature,
    });
    platform::grpc::inject_trace_context(request.metadata_mut());
    let mut stream = peers
        .results()
        .open_download(request)
        .await
        .map_err(service_error)?
        .into_inner();
    let first = stream
        .message()
        .await
        .map_err(service_error)?
        .ok_or_else(|| missing("file"))?;
    let head = futures::stream::once(futures::future::ready(Ok::<_, tonic::Status>(
        bytes::Bytes::from(first.data),
    )));
    let rest = stream.map(|chunk| chunk.map(|chunk| bytes::Bytes::from(chunk.data)));
    Ok(RawFileDownload {
        filename: first.filename,
        mime_type: first.mime_type,
        size_bytes: first.size_bytes,
        body: axum::body::Body::from_stream(head.chain(rest)),
    })
}

/// Which export.
#[derive(Clone, Copy, Debug)]
pub enum ExportKind {
    Coas,
    InstrumentResults,
}

/// One export page as results-svc streams it: the plan, then rendered rows.
pub struct ExportPage {
    csv: bool,
    head: pb::ExportHead,
    rows: tonic::Streaming<pb::ExportChunk>,
}

/// `GET /export/coas`, `GET /export/instrument-results`: starts the page at results-svc; its
/// rows stream into the answer ([`ExportPage::into_response`], [`ExportPage::into_json`]).
pub async fn export(
    peers: &Peers,
    caller: &Caller,
    kind: ExportKind,
    query: crate::dto::export::ExportQuery,
) -> Result<ExportPage, ApiError> {
    let format = query.format.unwrap_or_default();
    let csv = match format.as_str() {
        "" | "json" => false,
        "csv" => true,
        _ => {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "query.format",
                "format is json or csv",
            ));
        }
    };
    if let Some(limit) = query.limit
        && !(1..=5000).contains(&limit)
    {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "query.limit",
            "limit is 1 to 5000",
        ));
    }
    let request = pb::ExportRequest {
        since: query.since.map(platform::time::to_timestamp),
        cursor: query.cursor,
        format: if csv { "csv" } else { "json" }.to_owned(),
        limit: query.limit.unwrap_or(0),
    };
    let mut results = peers.results();
    let token = caller.token(RESULTS_SVC);
    let mut rows = match kind {
        ExportKind::Coas => results.export_coas(outgoing(request, &token)).await,
        ExportKind::InstrumentResults => results.export_instrument_results(outgoing(request, &token)).await,
    }
    .map_err(service_error)?
    .into_inner();
    let head = match rows.message().await.map_err(service_error)? {
        Some(pb::ExportChunk {
            part: Some(pb::export_chunk::Part::Head(head)),
        }) => head,
        _ => return Err(missing("export plan")),
    };
    Ok(ExportPage { csv, head, rows })
}

impl ExportPage {
    fn next_since(&self) -> Option<String> {
        self.head
            .next_since
            .as_ref()
            .and_then(platform::time::from_timestamp)
            .map(platform::time::rfc3339)
    }

    /// The JSON text after the rows: `],"truncated":…,"nextSince":…,"nextCursor":…}`.
    fn json_tail(&self) -> String {
        format!(
            "],\"truncated\":{},\"nextSince\":{},\"nextCursor\":{}}}",
            self.head.truncated,
            serde_json::to_string(&self.next_since()).unwrap_or_else(|_| "null".into()),
            serde_json::to_string(&self.head.next_cursor).unwrap_or_else(|_| "null".into()),
        )
    }

    /// The REST answer: the page streamed as JSON, or as CSV with the page fields in headers.
    pub fn into_response(self) -> axum::response::Response {
        use axum::response::IntoResponse;
        use futures::StreamExt;
        let (next_since, tail) = (self.next_since(), self.json_tail());
        let rows = self.rows.map(|chunk| match chunk {
            Ok(pb::ExportChunk {
                part: Some(pb::export_chunk::Part::Rows(rows)),
            }) => Ok(bytes::Bytes::from(rows)),
            Ok(_) => Ok(bytes::Bytes::new()),
            Err(status) => Err(status),
        });
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("private, no-store"),
        );
        headers.insert(
            "x-export-truncated",
            http::HeaderValue::from_static(if self.head.truncated { "true" } else { "false" }),
        );
        headers.insert("x-export-row-count", http::HeaderValue::from(self.head.row_count));
        if let Some(since) = next_since.and_then(|since| http::HeaderValue::from_str(&since).ok()) {
            headers.insert("x-export-next-since", since);
        }
        if let Some(cursor) = self
            .head
            .next_cursor
            .as_deref()
            .and_then(|c| http::HeaderValue::from_str(c).ok())
        {
            headers.insert("x-export-next-cursor", cursor);
        }
        if self.csv {
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/csv; charset=utf-8; header=present"),
            );
            return (headers, axum::body::Body::from_stream(rows)).into_response();
        }
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        let body = futures::stream::once(futures::future::ready(Ok(bytes::Bytes::from_static(
            b"{\"data\":[",
        ))))
        .chain(rows)
        .chain(futures::stream::once(futures::future::ready(Ok(
            bytes::Bytes::from(tail),
        ))));
        (headers, axum::body::Body::from_stream(body)).into_response()
    }

    /// The MCP answer: the JSON page as text (a tool answers JSON; CSV is REST's).
    pub async fn into_json(mut self) -> Result<String, ApiError> {
        if self.csv {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "format",
                "the tool answers JSON: leave format out or use json (CSV is for the REST operation)",
            ));
        }
        let mut json = String::from("{\"data\":[");
        while let Some(chunk) = self.rows.message().await.map_err(service_error)? {
            if let Some(pb::export_chunk::Part::Rows(rows)) = chunk.part {
                json.push_str(&String::from_utf8(rows).map_err(|_| missing("UTF-8 rows"))?);
            }
        }
        json.push_str(&self.json_tail());
        Ok(json)
    }
}

//! The shipping routes outside the agent area (whose operations are declared in
//! `crate::operation_table`): the signed label download and the external carrier's tracker
//! webhook (both public: their signatures are the authorization).

use crate::http::AppState;
use crate::http::error::ErrorResponse;
use crate::operations::shipping as operations;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use platform::error::{ApiError, ErrorCode};
use proto::shipping::ReceiveCarrierWebhookRequest;

/// Path of the signed label download.
pub const LABEL_FILE_PATH: &str = "/api/v1/files/labels/{file}";
/// Path of the EasyPost tracker webhooks.
pub const CARRIER_WEBHOOK_PATH: &str = "/api/v1/carriers/easypost/webhooks";

/// Query of a signed label URL.
#[derive(serde::Deserialize)]
pub struct SignedQuery {
    expires: i64,
    signature: String,
}

/// `GET /api/v1/files/labels/{file}?expires=…&signature=…`: the label PDF (no key).
pub async fn download_label(
    State(state): State<AppState>,
    Path(file): Path<String>,
    query: Result<Query<SignedQuery>, QueryRejection>,
) -> Result<Response, ErrorResponse> {
    let Ok(Query(query)) = query else {
        return Err(ApiError::new(ErrorCode::NotFound, "label not found or link expired").into());
    };
    let (pdf, filename) =
        operations::download_label(&state.peers, file, query.expires, query.signature).await?;
    let mut response = pdf.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/pdf"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("inline; filename=\"{filename}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// `POST /api/v1/carriers/easypost/webhooks`: an EasyPost tracker webhook, passed on with its
/// exact body and the values of `X-Hmac-Signature-V2`, `X-Timestamp` and `X-Path`; shipping-svc
/// verifies the signature over all three and the timestamp's tolerance (401 when forged,
/// unsigned, edited or stale). A replayed event id answers 200 with `duplicate: true`.
pub async fn carrier_webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ErrorResponse> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let request = ReceiveCarrierWebhookRequest {
        body: body.to_vec(),
        signature: header("x-hmac-signature-v2"),
        timestamp: header("x-timestamp"),
        path: header("x-path"),
    };
    let answer = operations::carrier_webhook(&state.peers, request).await?;
    let body = serde_json::json!({ "recorded": answer.recorded, "duplicate": answer.duplicate });
    Ok((StatusCode::OK, Json(body)).into_response())
}

//! The results routes outside the agent area (whose operations are declared in
//! `crate::operation_table`): the JWK set of the COA signing keys at
//! `/.well-known/coa-signing-key.json` (documented with its own server, the site root) and the
//! signed COA document link.

use crate::dto::common::ErrorEnvelope;
use crate::dto::results::CoaSigningKeySet;
use crate::http::AppState;
use crate::http::auth;
use crate::http::error::ErrorResponse;
use crate::operations::results as operations;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};

/// The public keys that sign COA contents, as a JWK set.
///
/// A JWK set (RFC 7517) of Ed25519 keys (RFC 8037) by `kid`: the current key, which signs every
/// COA published from now on, first, then the previous keys, which signed COAs published before
/// a key rotation. To verify a COA offline, take the key whose `kid` is the COA's
/// `signingKeyId` and check its `signature` (base64url) over the exact bytes of
/// `signedContent`. Public: no API key; served at the site root, outside the agent area.
#[utoipa::path(get, path = auth::COA_SIGNING_KEY_PATH, tag = "verification", operation_id = "getCoaSigningKeys",
    servers((url = "/", description = "the site root (outside the agent area)")),
    security(()),
    responses(
        (status = 200, description = "the JWK set of the COA signing keys", body = CoaSigningKeySet),
        (status = 429, description = "over the client address's rate (`rate_limited`)", body = ErrorEnvelope),
        (status = 503, description = "results-svc cannot answer now (`unavailable`); retry", body = ErrorEnvelope)))]
pub async fn signing_keys(State(state): State<AppState>) -> Result<Json<CoaSigningKeySet>, ErrorResponse> {
    Ok(Json(operations::signing_keys(&state.peers).await?))
}

/// Query of the signed document link.
#[derive(serde::Deserialize)]
pub struct DocumentLink {
    expires: i64,
    signature: String,
}

/// `GET /api/v1/documents/coa/{coaId}?expires=…&signature=…`: the COA's PDF through the signed
/// link of its result (no key; an expired or altered link is 404).
pub async fn coa_document(
    State(state): State<AppState>,
    Path(coa_id): Path<String>,
    query: Result<Query<DocumentLink>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ErrorResponse> {
    let Ok(Query(link)) = query else {
        return Err(platform::error::ApiError::new(
            platform::error::ErrorCode::NotFound,
            "document not found or link expired",
        )
        .into());
    };
    let (pdf, filename) =
        operations::coa_document(&state.peers, coa_id, link.expires, link.signature).await?;
    Ok((
        [
            (http::header::CONTENT_TYPE, "application/pdf".to_owned()),
            (
                http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
            (http::header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        pdf,
    )
        .into_response())
}

/// Query of a local-store download link. Unknown parameters are refused: any change to the
/// link fails.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLink {
    expires: i64,
    signature: String,
}

/// `GET /api/v1/files/results/{key}?expires=…&signature=…`: a released instrument file through
/// the signed link of a raw-data manifest or of instrument data (no key; an expired or altered
/// link is 404). Links of an S3 store point at the store itself, not here.
pub async fn raw_file(
    State(state): State<AppState>,
    Path(key): Path<String>,
    query: Result<Query<FileLink>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ErrorResponse> {
    let Ok(Query(link)) = query else {
        return Err(platform::error::ApiError::new(
            platform::error::ErrorCode::NotFound,
            "file not found or link expired",
        )
        .into());
    };
    let download = crate::operations::data::raw_file(&state.peers, key, link.expires, link.signature).await?;
    let filename: String = download
        .filename
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok((
        [
            (
                http::header::CONTENT_TYPE,
                download
                    .mime_type
                    .unwrap_or_else(|| "application/octet-stream".to_owned()),
            ),
            (
                http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
            (http::header::CONTENT_LENGTH, download.size_bytes.to_string()),
            (http::header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        download.body,
    )
        .into_response())
}

//! REST handlers of results and of an order's lab views: `GET /results`,
//! `GET /results/{reference}`, `GET /results/{reference}/analytes`,
//! `GET /orders/{reference}/samples`, `/custody`, `/eta`, the public `GET`/`POST /verify` and
//! `/verify/batch`, and the JWK set of the COA signing keys at `/.well-known/coa-signing-key.json`
//! (documented with its own server, the site root).

use crate::caller::Caller;
use crate::client_addr::ClientAddr;
use crate::dto::common::ErrorEnvelope;
use crate::dto::lab::{CustodyEnvelope, EtaEnvelope, OrderSamplesEnvelope};
use crate::dto::results::{
    AnalyteList, CoaEnvelope, CoaList, CoaSigningKeySet, ResultsQuery, VerificationEnvelope,
    VerificationList, VerifyBatchQuery, VerifyBatchRequest, VerifyQuery, VerifyRequest,
};
use crate::http::AppState;
use crate::http::auth;
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, ApiQuery, Reference};
use crate::operations::results as operations;
use axum::Extension;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};

/// Lists the customer's QA-published COAs (published, retracted or superseded), newest
/// publication first. Nothing of a draft, submitted, approved or held COA is ever listed.
#[utoipa::path(get, path = "/results", tag = "results", operation_id = "listResults", params(ResultsQuery),
    responses((status = 200, description = "one page of published COAs", body = CoaList)))]
pub async fn list_results(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ResultsQuery>,
) -> Result<Json<CoaList>, ErrorResponse> {
    Ok(Json(
        operations::list_results(&state.peers, &caller, &state.site_url, query).await?,
    ))
}

/// Reads one published COA with its structured results, by COA id or accession number (the
/// newest published COA of the accession). An unpublished, held or another customer's COA is
/// the same 404 as a missing one; a retracted COA stays readable, marked `retracted`.
#[utoipa::path(get, path = "/results/{reference}", tag = "results", operation_id = "getResult",
    params(("reference" = String, Path, description = "COA id or accession number (ACC-…)")),
    responses((status = 200, description = "the COA", body = CoaEnvelope)))]
pub async fn get_result(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<CoaEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_result(&state.peers, &caller, &state.site_url, reference).await?,
    ))
}

/// The normalized per-analyte rows of one published COA.
#[utoipa::path(get, path = "/results/{reference}/analytes", tag = "results", operation_id = "listAnalytes",
    params(("reference" = String, Path, description = "COA id or accession number (ACC-…)")),
    responses((status = 200, description = "every analyte row of the COA (one page)", body = AnalyteList)))]
pub async fn list_analytes(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<AnalyteList>, ErrorResponse> {
    Ok(Json(
        operations::list_analytes(&state.peers, &caller, reference).await?,
    ))
}

/// The order's sample items: accession numbers, logged units, containers, condition, tests,
/// status history and the ids of their published COAs (given when the key also holds
/// `results:read`).
#[utoipa::path(get, path = "/orders/{reference}/samples", tag = "orders", operation_id = "listOrderSamples",
    params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
    responses((status = 200, description = "the order's samples", body = OrderSamplesEnvelope)))]
pub async fn list_samples(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<OrderSamplesEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::list_samples(&state.peers, &caller, reference).await?,
    ))
}

/// The order's chain of custody (hash-chained entries) and the retention deadline of its
/// retained samples.
#[utoipa::path(get, path = "/orders/{reference}/custody", tag = "orders", operation_id = "getOrderCustody",
    params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
    responses((status = 200, description = "the chain of custody", body = CustodyEnvelope)))]
pub async fn get_custody(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<CustodyEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_custody(&state.peers, &caller, reference).await?,
    ))
}

/// Stage-by-stage progress of the order with a non-binding ETA (start of testing, or receipt,
/// plus the turnaround option's business days).
#[utoipa::path(get, path = "/orders/{reference}/eta", tag = "orders", operation_id = "getOrderEta",
    params(("reference" = String, Path, description = "order UUID, ORD-…, INV-… or ACC-…")),
    responses((status = 200, description = "the order's progress", body = EtaEnvelope)))]
pub async fn get_eta(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<EtaEnvelope>, ErrorResponse> {
    Ok(Json(operations::get_eta(&state.peers, &caller, reference).await?))
}

/// Public authenticity check of one COA by accession number (or COA id): `authentic`,
/// `unverifiable` (its signature does not verify with the key its `signingKeyId` names),
/// `retracted`, `superseded` (with the successor) or `unknown`. Compound, lot number and the
/// signed content are revealed only with the verification code printed on the COA.
#[utoipa::path(get, path = "/verify", tag = "verification", operation_id = "verifyCoa", params(VerifyQuery),
    responses((status = 200, description = "the verdict", body = VerificationEnvelope)))]
pub async fn verify_get(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    ApiQuery(query): ApiQuery<VerifyQuery>,
) -> Result<Json<VerificationEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::verify(
            &state.peers,
            &state.front_door.verify_lookups,
            ClientAddr::of(client),
            query.accession,
            query.code,
        )
        .await?,
    ))
}

/// Public authenticity check of one COA (body form of `GET /verify`).
#[utoipa::path(post, path = "/verify", tag = "verification", operation_id = "verifyCoaPost", request_body = VerifyRequest,
    responses((status = 200, description = "the verdict", body = VerificationEnvelope)))]
pub async fn verify_post(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    ApiJson(body): ApiJson<VerifyRequest>,
) -> Result<Json<VerificationEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::verify(
            &state.peers,
            &state.front_door.verify_lookups,
            ClientAddr::of(client),
            Some(body.accession),
            body.code,
        )
        .await?,
    ))
}

/// Public authenticity check of 1 to 100 accessions (comma-separated); authenticity only.
#[utoipa::path(get, path = "/verify/batch", tag = "verification", operation_id = "verifyCoaBatch", params(VerifyBatchQuery),
    responses((status = 200, description = "one verdict per accession, in request order", body = VerificationList)))]
pub async fn verify_batch_get(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    ApiQuery(query): ApiQuery<VerifyBatchQuery>,
) -> Result<Json<VerificationList>, ErrorResponse> {
    let accessions = query.split();
    Ok(Json(
        operations::verify_batch(
            &state.peers,
            &state.front_door.verify_lookups,
            ClientAddr::of(client),
            accessions,
        )
        .await?,
    ))
}

/// Public authenticity check of 1 to 100 accessions; authenticity only.
#[utoipa::path(post, path = "/verify/batch", tag = "verification", operation_id = "verifyCoaBatchPost",
    request_body = VerifyBatchRequest,
    responses((status = 200, description = "one verdict per accession, in request order", body = VerificationList)))]
pub async fn verify_batch_post(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    ApiJson(body): ApiJson<VerifyBatchRequest>,
) -> Result<Json<VerificationList>, ErrorResponse> {
    Ok(Json(
        operations::verify_batch(
            &state.peers,
            &state.front_door.verify_lookups,
            ClientAddr::of(client),
            body.accessions,
        )
        .await?,
    ))
}

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

//! REST handlers of the catalog area: `GET /catalog`, `POST /quotes`.

use crate::caller::Caller;
use crate::dto::catalog::{CatalogPage, CatalogQuery};
use crate::dto::quotes::{CreateQuoteRequest, QuoteEnvelope};
use crate::http::AppState;
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::operations;
use axum::Json;
use axum::extract::State;
use http::StatusCode;

/// Reads one cursor page of the authoritative catalog.
///
/// The page carries the `catalogRevision` to retain for the order flow; a cursor pins the
/// revision of the page it came from.
#[utoipa::path(get, path = "/catalog", tag = "catalog", operation_id = "listCatalog", params(CatalogQuery),
    responses((status = 200, description = "one page of catalog items", body = CatalogPage)))]
pub async fn list_catalog(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<CatalogQuery>,
) -> Result<Json<CatalogPage>, ErrorResponse> {
    Ok(Json(
        operations::list_catalog(&state.peers, &caller, query).await?,
    ))
}

/// Creates an immutable, server-priced quote that expires (normally after 15 minutes).
#[utoipa::path(post, path = "/quotes", tag = "catalog", operation_id = "createQuote", request_body = CreateQuoteRequest,
    responses((status = 201, description = "the quote", body = QuoteEnvelope)))]
pub async fn create_quote(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateQuoteRequest>,
) -> Result<(StatusCode, Json<QuoteEnvelope>), ErrorResponse> {
    Ok((
        StatusCode::CREATED,
        Json(operations::create_quote(&state.peers, &caller, body).await?),
    ))
}

//! REST handlers of the orders area: `POST /orders`, `GET /orders`, `GET /orders/{reference}`.

use crate::caller::Caller;
use crate::dto::orders::{CreateOrderRequest, OrderEnvelope, OrderList, OrdersQuery};
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, ApiQuery, IdempotencyKey, Reference};
use crate::http::{AppState, replayable_response};
use crate::operations;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

/// Places an order from a quote (`confirm: true`, `Idempotency-Key` required).
///
/// A replay of the same key and body answers exactly like the first response (201, same body)
/// plus `Idempotent-Replayed: true`; the same key with another body is 409 `idempotency_key_reused`.
#[utoipa::path(post, path = "/orders", tag = "orders", operation_id = "createOrder", request_body = CreateOrderRequest,
    responses((status = 201, description = "the order (also for a replay, with Idempotent-Replayed: true)", body = OrderEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn create_order(
    State(state): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<CreateOrderRequest>,
) -> Result<Response, ErrorResponse> {
    let created = operations::create_order(&state.peers, &caller, &key, body).await?;
    Ok(replayable_response(StatusCode::CREATED, created))
}

/// Lists the customer's orders, newest first.
#[utoipa::path(get, path = "/orders", tag = "orders", operation_id = "listOrders", params(OrdersQuery),
    responses((status = 200, description = "one page of orders", body = OrderList)))]
pub async fn list_orders(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<OrdersQuery>,
) -> Result<Json<OrderList>, ErrorResponse> {
    Ok(Json(operations::list_orders(&state.peers, &caller, query).await?))
}

/// Reads one order (status, status history, lines, charges, payment block).
#[utoipa::path(get, path = "/orders/{reference}", tag = "orders", operation_id = "getOrder",
    params(("reference" = String, Path, description = "order UUID, order number (ORD-…), invoice number (INV-…), accession number (ACC-…) or tracking number")),
    responses((status = 200, description = "the order", body = OrderEnvelope)))]
pub async fn get_order(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Response, ErrorResponse> {
    let document = operations::get_order(&state.peers, &caller, reference).await?;
    Ok((
        [(http::header::CONTENT_TYPE, "application/json")],
        document.into_json(),
    )
        .into_response())
}

//! REST handlers of the shipping area: shipments, labels, door pickups; and, outside the agent
//! area, the signed label download and the external carrier's tracker webhook (both public:
//! their signatures are the authorization).

use crate::caller::Caller;
use crate::dto::shipping::{
    LabelEnvelope, PickupEnvelope, PickupOptionsEnvelope, PickupRequest, ShipmentEnvelope, ShipmentList,
    ShipmentsQuery,
};
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, ApiQuery, IdempotencyKey, Reference};
use crate::http::{AppState, replayable_response};
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

/// Lists the customer's shipments (labels and tracking), newest first.
#[utoipa::path(get, path = "/shipments", tag = "shipping", operation_id = "listShipments", params(ShipmentsQuery),
    responses((status = 200, description = "one page of shipments", body = ShipmentList)))]
pub async fn list_shipments(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ShipmentsQuery>,
) -> Result<Json<ShipmentList>, ErrorResponse> {
    Ok(Json(
        operations::list_shipments(&state.peers, &caller, query).await?,
    ))
}

/// Reads one shipment with its tracking number, carrier and service codes, normalized status and
/// carrier event history.
#[utoipa::path(get, path = "/shipments/{reference}", tag = "shipping", operation_id = "getShipment",
    params(("reference" = String, Path, description = "shipment UUID, tracking number, order UUID or order number")),
    responses((status = 200, description = "the shipment", body = ShipmentEnvelope)))]
pub async fn get_shipment(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<ShipmentEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_shipment(&state.peers, &caller, reference).await?,
    ))
}

/// Reads the prepaid inbound label: a signed, expiring URL of the 4×6 in PDF, the tracking
/// number and URL, the ship-to address and the packing steps.
#[utoipa::path(get, path = "/shipments/{reference}/label", tag = "shipping", operation_id = "getShipmentLabel",
    params(("reference" = String, Path, description = "shipment UUID, tracking number, order UUID or order number")),
    responses((status = 200, description = "the label", body = LabelEnvelope)))]
pub async fn get_label(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<LabelEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_label(&state.peers, &caller, reference).await?,
    ))
}

/// Lists door-pickup options of a paid order: dates, windows, the price and a signed
/// `quoteToken` (expires after 15 minutes). An unpaid order is 409 `order_not_paid`; a shipment
/// that has a pickup is 409 `pickup_already_requested`.
#[utoipa::path(get, path = "/orders/{reference}/pickup", tag = "shipping", operation_id = "getPickupOptions",
    params(("reference" = String, Path, description = "order UUID, order number or tracking number")),
    responses((status = 200, description = "the pickup options", body = PickupOptionsEnvelope)))]
pub async fn pickup_options(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<PickupOptionsEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::pickup_options(&state.peers, &caller, reference).await?,
    ))
}

/// Requests a door pickup (`confirm: true`, `Idempotency-Key` required) on one of the offered
/// dates and windows with the options' `quoteToken`. The price must fit the key's spending
/// envelope (403 `spend_limit_exceeded`). The answer's `payUrl` is the site's hosted checkout
/// page for the pickup (single use, amount-locked, valid until `payExpiresAt`); once paid the
/// pickup is booked with the carrier and `shipment.updated` (status `pickup_booked`) carries the
/// confirmation number. A link that expires unpaid ends the pickup (`payment_expired`) and a new
/// one may be requested. Refusals: 400 `pickup_quote_invalid` (tampered or foreign token), 409
/// `pickup_quote_expired`, 400 `pickup_date_unavailable` (past, over or not offered), 409
/// `order_not_paid`, 409 `pickup_already_requested`.
#[utoipa::path(post, path = "/orders/{reference}/pickup", tag = "shipping", operation_id = "requestPickup",
    params(("reference" = String, Path, description = "order UUID, order number or tracking number")),
    request_body = PickupRequest,
    responses((status = 201, description = "the requested pickup (also for a replay, with Idempotent-Replayed: true)", body = PickupEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn request_pickup(
    State(state): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    Reference(reference): Reference,
    ApiJson(body): ApiJson<PickupRequest>,
) -> Result<Response, ErrorResponse> {
    let requested = operations::request_pickup(&state.peers, &caller, &key, reference, body).await?;
    Ok(replayable_response(StatusCode::CREATED, requested))
}

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

//! REST handlers of payment preparation (`POST /payments/prepare`) and of the calling key's
//! spend envelope (`GET /spend-envelope`).

use crate::caller::Caller;
use crate::dto::billing::{PreparePaymentRequest, PreparedPaymentEnvelope, SpendEnvelopeEnvelope};
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, IdempotencyKey};
use crate::http::{AppState, replayable_response};
use crate::operations::checkout as operations;
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use http::StatusCode;

/// Prepares the payment of an order: how to pay it now.
///
/// Needs `payments:write` and `Idempotency-Key`. The body names the order by its UUID, order
/// number or invoice number (`orderReference`); another customer's order is 404 `not_found`.
/// `state` is `paid` (nothing to pay: the answer carries the paid invoice), `void`, or
/// `awaiting_payment`: on the card rail `checkout` is the link to use now (the current one
/// while it can be paid, else a fresh single-use session locked to the amount due and lasting
/// 15 minutes); on the bank rail `bankInstructions` carry the remittance details. Replaying the
/// same request with the same key answers the stored answer with `Idempotent-Replayed: true`.
#[utoipa::path(post, path = "/payments/prepare", tag = "billing", operation_id = "preparePayment",
    request_body = PreparePaymentRequest,
    responses((status = 200, description = "how to pay the order now", body = PreparedPaymentEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn prepare_payment(
    State(state): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<PreparePaymentRequest>,
) -> Result<Response, ErrorResponse> {
    let prepared = operations::prepare_payment(&state.peers, &caller, &key, body).await?;
    Ok(replayable_response(StatusCode::OK, prepared))
}

/// Reads the calling key's spend envelope: its per-order, daily and monthly caps (UTC calendar:
/// the day starts at 00:00 UTC, the month on the first at 00:00 UTC), what it committed today and
/// this month, and the remainders. Spend is committed when an order is created and released when
/// the order is cancelled or its card payment expires unpaid. An order over a cap is 403
/// `spend_limit_exceeded` with `details.cap` and the remainders. Needs `payments:read` (our
/// addition).
#[utoipa::path(get, path = "/spend-envelope", tag = "billing", operation_id = "getSpendEnvelope",
    responses((status = 200, description = "the key's envelope and remainders", body = SpendEnvelopeEnvelope)))]
pub async fn spend_envelope(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<SpendEnvelopeEnvelope>, ErrorResponse> {
    Ok(Json(operations::spend_envelope(&state.peers, &caller).await?))
}

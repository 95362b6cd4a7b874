//! REST handlers of payment preparation (`POST /payments/prepare`), of the stablecoin rail
//! (`GET /payments/stablecoin/{reference}`, `POST /payments/stablecoin/submit`) and of the
//! calling key's spend envelope (`GET /spend-envelope`).

use crate::caller::Caller;
use crate::dto::billing::{PreparePaymentRequest, PreparedPaymentEnvelope, SpendEnvelopeEnvelope};
use crate::dto::stablecoin::{StablecoinPaymentEnvelope, SubmitStablecoinRequest};
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiJson, IdempotencyKey, Reference};
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

/// Reads the stablecoin payment request of an order (our addition; the twin of MCP
/// `svc.payment.stablecoin.request`): the token, the treasury address to send to, the exact
/// amount (`amount.atomic`, `amount.decimal` with exactly six decimals, `amount.referenceAtomic`)
/// with its no-rounding notice, the expected payer, the expiry, the state (`awaiting_transfer`,
/// `confirming`, `confirmed`, `expired`), the observed transfer and, once confirmed, the
/// settlement proof. `reference` is the order UUID, order number or invoice number; another
/// customer's order is 404 `not_found`; an order on another rail is 404 `not_found`. Needs
/// `payments:read`. An expired request is renewed by `POST /payments/prepare`.
#[utoipa::path(get, path = "/payments/stablecoin/{reference}", tag = "billing",
    operation_id = "getStablecoinPayment",
    params(("reference" = String, Path, description = "order UUID, order number (ORD-…) or invoice number (INV-…)")),
    responses((status = 200, description = "the stablecoin payment request", body = StablecoinPaymentEnvelope)))]
pub async fn get_stablecoin_payment(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<StablecoinPaymentEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_stablecoin_payment(&state.peers, &caller, reference).await?,
    ))
}

/// Submits the hash of a stablecoin transfer for read-only verification. The service never
/// signs or broadcasts: the payer sends the transfer from their self-custodied wallet, then
/// submits `{ "reference": "<order UUID, ORD-… or INV-…>", "transactionHash": "0x<64 hex>" }`.
///
/// The receipt is read from two independent providers that must agree; a log counts only when
/// its contract is the token, its sender the expected payer, its recipient the treasury and its
/// value the exact atomic amount. A match answers the request in `confirming` (events
/// `payment.observed`, `payment.confirming`); it becomes `confirmed` (the invoice and the order
/// paid, `payment.confirmed`) once the finalized-log scanner and both providers see it at or
/// below the `finalized` block with the same block hash. Refusals: 409
/// `transfer_amount_mismatch` (`details.reason` `underpaid`/`overpaid`, `details.receivedAtomic`),
/// `transfer_wrong_sender`, `transfer_wrong_token`, `transfer_not_found`,
/// `transaction_reverted`, `transfer_already_applied`, `payment_request_expired` (a late
/// transfer, recorded for staff), `conflict` (already paid by another transfer); 404
/// `transaction_not_found` (unknown or not yet mined hash) and `not_found` (no such order of
/// yours); 503 `chain_unavailable` with `Retry-After` (a provider is down, they disagree, or
/// one serves another chain id: `details.reason`; nothing recorded, retry). Needs `payments:write` and `Idempotency-Key`; 503 answers are not
/// stored under the key.
#[utoipa::path(post, path = "/payments/stablecoin/submit", tag = "billing",
    operation_id = "submitStablecoinTransaction",
    request_body = SubmitStablecoinRequest,
    responses((status = 200, description = "the payment request after verification", body = StablecoinPaymentEnvelope,
        headers(("Idempotent-Replayed" = String, description = "`true` when this is a stored replay")))))]
pub async fn submit_stablecoin_transaction(
    State(state): State<AppState>,
    caller: Caller,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<SubmitStablecoinRequest>,
) -> Result<Response, ErrorResponse> {
    let submitted = operations::submit_stablecoin_transaction(&state.peers, &caller, &key, body).await?;
    Ok(replayable_response(StatusCode::OK, submitted))
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

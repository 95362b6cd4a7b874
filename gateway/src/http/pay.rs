//! The site's hosted checkout page (`{site_url}/pay/{sessionId}`), outside the agent API, and
//! the processors' webhook entry (`/api/processor-webhooks/{processor}`).
//!
//! The session id in the URL is the capability (as with Stripe Checkout): the page needs no API
//! key, and the front door lets these routes through as public (its per-address limit still
//! applies). The page shows the order, its lines and the locked total; with the sandbox
//! processor the payer types a card (or picks a saved one) here, and the form goes to
//! payments-svc over gRPC without being logged; with a PSP the page sends the payer to the
//! PSP's own hosted page, so card details never reach us. Answers are `no-store`, never framed,
//! and send no `Referer` (the URL is a secret).

use super::AppState;
use super::pay_html::{self, Banner};
use crate::operations::checkout as operations;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use platform::error::{ApiError, ErrorCode};
use proto::payments as pb;
use serde::Deserialize;

/// Route of the pay page.
pub const PAY_PAGE: &str = "/pay/{session_id}";
/// Route of the authentication step.
pub const PAY_CONFIRM: &str = "/pay/{session_id}/confirm";
/// Route of processor webhooks.
pub const PROCESSOR_WEBHOOK: &str = "/api/processor-webhooks/{processor}";
/// Largest form or webhook body accepted, in bytes.
const MAX_BODY: usize = 64 * 1024;

/// The pay form as posted (`application/x-www-form-urlencoded`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct PayForm {
    card_number: Option<String>,
    exp_month: Option<String>,
    exp_year: Option<String>,
    cvc: Option<String>,
    save_card: Option<String>,
    saved_card: Option<String>,
}

/// The confirm form.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ConfirmForm {
    action: Option<String>,
}

/// `GET /pay/{sessionId}`.
pub async fn show(State(state): State<AppState>, Path(session_id): Path<String>) -> Response {
    match operations::checkout_page(&state.peers, &state.tokens, session_id).await {
        Ok(page) => html(StatusCode::OK, pay_html::render(&page, None, &state.lab)),
        Err(error) => error_page(&error),
    }
}

/// `POST /pay/{sessionId}`: one payment attempt.
pub async fn pay(State(state): State<AppState>, Path(session_id): Path<String>, body: Bytes) -> Response {
    let form: PayForm = match parse_form(&body) {
        Ok(form) => form,
        Err(error) => return error_page(&error),
    };
    let request = match pay_request(session_id.clone(), form) {
        Ok(request) => request,
        Err(error) => return with_page(&state, session_id, &error).await,
    };
    match operations::pay_checkout(&state.peers, &state.tokens, request).await {
        Ok(answer) => outcome_page(answer, &state.lab),
        Err(error) if error.code == ErrorCode::InvalidRequest => with_page(&state, session_id, &error).await,
        Err(error) => error_page(&error),
    }
}

/// `POST /pay/{sessionId}/confirm`: the payer completes (or cancels) the authentication step.
pub async fn confirm(State(state): State<AppState>, Path(session_id): Path<String>, body: Bytes) -> Response {
    let form: ConfirmForm = match parse_form(&body) {
        Ok(form) => form,
        Err(error) => return error_page(&error),
    };
    let request = pb::ConfirmCheckoutRequest {
        session_id,
        approve: form.action.as_deref() == Some("approve"),
    };
    match operations::confirm_checkout(&state.peers, &state.tokens, request).await {
        Ok(answer) => outcome_page(answer, &state.lab),
        Err(error) => error_page(&error),
    }
}

/// `POST /api/processor-webhooks/{processor}`: passes the exact raw body and the signature
/// header to payments-svc, which verifies and applies it. 200 `{"received": true, "outcome"}`;
/// a forged or replayed signature is 400 `invalid_signature`.
pub async fn processor_webhook(
    State(state): State<AppState>,
    Path(processor): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if body.len() > MAX_BODY {
        return super::error::ErrorResponse(ApiError::new(ErrorCode::InvalidBody, "the body is too large"))
            .into_response();
    }
    let signature = headers
        .get("stripe-signature")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let request = pb::HandleProcessorWebhookRequest {
        processor,
        payload: body.to_vec(),
        signature,
    };
    match operations::processor_webhook(&state.peers, &state.tokens, request).await {
        Ok(outcome) => {
            axum::Json(serde_json::json!({ "received": true, "outcome": outcome })).into_response()
        }
        Err(error) => super::error::ErrorResponse(error).into_response(),
    }
}

pub(super) fn parse_form<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, ApiError> {
    if body.len() > MAX_BODY {
        return Err(ApiError::new(ErrorCode::InvalidBody, "the form is too large"));
    }
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(body)
        .map_err(|_| ApiError::new(ErrorCode::InvalidBody, "the form could not be read"))?;
    if let Some((name, _)) = form.iter().find(|(_, value)| value.chars().any(char::is_control)) {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            name,
            "the field holds a control character",
        ));
    }
    serde_urlencoded::from_bytes(body)
        .map_err(|_| ApiError::new(ErrorCode::InvalidBody, "the form could not be read"))
}

fn pay_request(session_id: String, form: PayForm) -> Result<pb::PayCheckoutRequest, ApiError> {
    let text = |value: Option<String>| {
        value
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    if let Some(token) = text(form.saved_card) {
        return Ok(pb::PayCheckoutRequest {
            session_id,
            card: None,
            saved_card_token: Some(token),
            save_card: false,
        });
    }
    let number = |value: Option<String>, field: &str| -> Result<i32, ApiError> {
        text(value)
            .and_then(|value| value.parse::<i32>().ok())
            .ok_or_else(|| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    field,
                    "enter the card's expiry as numbers",
                )
            })
    };
    let exp_month = number(form.exp_month, "card.expMonth")?;
    let mut exp_year = number(form.exp_year, "card.expYear")?;
    if (0..100).contains(&exp_year) {
        exp_year += 2000;
    }
    Ok(pb::PayCheckoutRequest {
        session_id,
        card: Some(pb::CardInput {
            number: text(form.card_number).unwrap_or_default(),
            exp_month,
            exp_year,
            cvc: text(form.cvc).unwrap_or_default(),
        }),
        saved_card_token: None,
        save_card: form.save_card.is_some(),
    })
}

/// The page again with the refusal of the typed input.
async fn with_page(state: &AppState, session_id: String, error: &ApiError) -> Response {
    match operations::checkout_page(&state.peers, &state.tokens, session_id).await {
        Ok(page) => html(
            StatusCode::BAD_REQUEST,
            pay_html::render(&page, Some(Banner::error("invalid", &error.message)), &state.lab),
        ),
        Err(error) => error_page(&error),
    }
}

fn outcome_page(answer: pb::PayCheckoutResponse, lab: &platform::lab::LabIdentity) -> Response {
    let Some(page) = answer.page else {
        return error_page(&ApiError::internal("a payment answer without its page"));
    };
    let banner = match answer.outcome.as_str() {
        "paid" | "already_paid" => Banner::success(&answer.outcome, &answer.message),
        "requires_confirmation" => Banner::info(&answer.outcome, &answer.message),
        _ => Banner::error(&answer.outcome, &answer.message),
    };
    let status = match answer.outcome.as_str() {
        "declined" => StatusCode::PAYMENT_REQUIRED,
        "expired" => StatusCode::GONE,
        _ => StatusCode::OK,
    };
    html(status, pay_html::render(&page, Some(banner), lab))
}

pub(super) fn error_page(error: &ApiError) -> Response {
    let status = StatusCode::from_u16(error.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = match error.code {
        ErrorCode::NotFound => "This checkout link does not exist.",
        ErrorCode::Internal | ErrorCode::ServiceUnavailable => {
            "The payment page is unavailable right now. Please try again in a moment."
        }
        _ => error.message.as_str(),
    };
    html(status, pay_html::message_page(message))
}

pub(super) fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    response
}

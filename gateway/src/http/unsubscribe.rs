//! The one-click unsubscribe link of COA emails (`{site_url}/api/v1/unsubscribe/{token}`,
//! docs/notifications.md), outside the agent API: no key, the signed token is the capability.
//!
//! - `POST` with the form body `List-Unsubscribe=One-Click` (RFC 8058: what mail clients send
//!   for the `List-Unsubscribe-Post` header, and what the page's button sends) withdraws the
//!   consent the token names, once; a repeat answers the same page.
//! - `GET` only shows a small page whose button makes that POST: mail scanners and link
//!   previews fetch links, so a GET never withdraws anything.
//!
//! A tampered, foreign or expired token is 404 and changes nothing. Pages are static text (no
//! part of the request is echoed), `no-store`, never framed and send no `Referer`.

use super::AppState;
use super::pay::html;
use crate::operations::notifications as operations;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use http::StatusCode;
use platform::error::{ApiError, ErrorCode};

/// Route of the unsubscribe link.
pub const UNSUBSCRIBE_PATH: &str = "/api/v1/unsubscribe/{token}";
/// The one body RFC 8058 defines for the one-click POST.
const ONE_CLICK: &str = "List-Unsubscribe=One-Click";

/// `GET /api/v1/unsubscribe/{token}`: the confirmation page (changes nothing).
pub async fn show(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    match operations::check_unsubscribe(&state.peers, token).await {
        Ok(true) => html(StatusCode::OK, page(DONE)),
        Ok(false) => html(StatusCode::OK, page(CONFIRM)),
        Err(error) => error_page(&error),
    }
}

/// `POST /api/v1/unsubscribe/{token}` with `List-Unsubscribe=One-Click`: withdraws the consent.
pub async fn unsubscribe(State(state): State<AppState>, Path(token): Path<String>, body: Bytes) -> Response {
    let one_click = std::str::from_utf8(&body)
        .ok()
        .is_some_and(|form| form.split('&').any(|pair| pair.trim() == ONE_CLICK));
    if !one_click {
        return error_page(&ApiError::new(
            ErrorCode::InvalidRequest,
            "the body must be List-Unsubscribe=One-Click",
        ));
    }
    match operations::unsubscribe(&state.peers, token).await {
        Ok(_) => html(StatusCode::OK, page(DONE)),
        Err(error) => error_page(&error),
    }
}

const CONFIRM: &str = "<h1>Unsubscribe</h1>\
    <p>Stop receiving certificates of analysis by email from this sender?</p>\
    <form method=\"post\"><input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\
    <button type=\"submit\">Unsubscribe</button></form>";
const DONE: &str = "<h1>Unsubscribed</h1>\
    <p>You will receive no more certificates of analysis by email from this sender.</p>";

fn error_page(error: &ApiError) -> Response {
    let (status, text) = match error.code {
        ErrorCode::NotFound => (
            StatusCode::NOT_FOUND,
            "This unsubscribe link is not valid or has expired. Reply to the email to ask the sender to stop.",
        ),
        ErrorCode::InvalidRequest => (
            StatusCode::BAD_REQUEST,
            "Use the button of the unsubscribe page, or your mail program's unsubscribe action.",
        ),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Unsubscribing is unavailable right now. Please try again in a moment.",
        ),
    };
    html(status, page(&format!("<h1>Unsubscribe</h1><p>{text}</p>")))
}

fn page(content: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Unsubscribe</title><style>body{{font-family:sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}}</style>\
         </head><body>{content}</body></html>"
    )
}

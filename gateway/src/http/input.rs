//! The input guard of every agent route: applies `platform::input`'s character rules to the
//! request before any handler (and so before any service call) sees it, answering 400
//! `invalid_request` whose `details.field` names where the flaw is:
//! - `path.<name>`: every path parameter, strictly percent-decoded (a `%` without two hex digits,
//!   bytes that are not UTF-8 or any control character are refused);
//! - `query.<name>`: every query parameter value, decoded the same way (`+` is a space); a
//!   flawed parameter name is `query`;
//! - `body.<path>`: every string of a JSON body, property names included, under the rule of
//!   its property (free text such as `notes` keeps TAB, LF and CR).
//!
//! A body that is not JSON or does not parse is left to the extractors, which refuse it with
//! `invalid_body`. Headers are checked where they are read: `Idempotency-Key` by its extractor
//! (visible ASCII only), `Authorization` by the key parser (401 like any malformed key).

use crate::http::error::ErrorResponse;
use crate::http::extract::is_json;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use platform::error::{ApiError, ErrorCode};
use platform::input::{Flaw, TextRule, check_json, flaw_in_bytes, refused};

/// Largest body the guard reads; the same as axum's default limit for the extractors.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The middleware; install with `route_layer` so that the matched path is known.
pub async fn guard(matched: Option<MatchedPath>, request: Request, next: Next) -> Response {
    let template = matched.as_ref().map(MatchedPath::as_str).unwrap_or_default();
    let checked = check_path(template, request.uri().path())
        .and_then(|()| check_query(request.uri().query().unwrap_or_default()));
    if let Err(error) = checked {
        return ErrorResponse(error).into_response();
    }
    if !is_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => return ErrorResponse(too_large()).into_response(),
    };
    if let Err(error) = check_body(&bytes) {
        return ErrorResponse(error).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Checks each `{name}` segment of the route `template` against the same segment of `path`.
/// Segments are paired from the end: a nested router sees its path without the nest prefix.
pub fn check_path(template: &str, path: &str) -> Result<(), ApiError> {
    let names = template.split('/').rev();
    for (name, raw) in names.zip(path.split('/').rev()) {
        let Some(name) = name.strip_prefix('{').and_then(|name| name.strip_suffix('}')) else {
            continue;
        };
        let field = format!("path.{name}");
        let decoded = percent_decode(raw, false).map_err(|flaw| refused(&field, flaw))?;
        if let Some(flaw) = flaw_in_bytes(TextRule::Line, &decoded) {
            return Err(refused(&field, flaw));
        }
    }
    Ok(())
}

/// Checks every `name=value` pair of a raw query string.
pub fn check_query(query: &str) -> Result<(), ApiError> {
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        // A flawed name is not echoed: the refusal names the query as a whole.
        let name = percent_decode(raw_name, true).map_err(|flaw| refused("query", flaw))?;
        if let Some(flaw) = flaw_in_bytes(TextRule::Line, &name) {
            return Err(refused("query", flaw));
        }
        let name = String::from_utf8_lossy(&name);
        let field = format!("query.{name}");
        let value = percent_decode(raw_value, true).map_err(|flaw| refused(&field, flaw))?;
        if let Some(flaw) = flaw_in_bytes(TextRule::Line, &value) {
            return Err(refused(&field, flaw));
        }
    }
    Ok(())
}

/// Checks every string of a JSON body; a body that does not parse is left to the extractor.
pub fn check_body(bytes: &Bytes) -> Result<(), ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(document) => check_json("body", &document),
        Err(_) => Ok(()),
    }
}

/// Strict percent-decoding: `%` must be followed by two hex digits (the `percent-encoding`
/// crate decodes, and would pass a stray `%` through, so the form is checked first); `+` is a
/// space in queries.
pub fn percent_decode(raw: &str, plus_is_space: bool) -> Result<Vec<u8>, Flaw> {
    let bytes = raw.as_bytes();
    let well_formed = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'%')
        .all(|(at, _)| {
            bytes
                .get(at + 1..at + 3)
                .is_some_and(|digits| digits.iter().all(u8::is_ascii_hexdigit))
        });
    if !well_formed {
        return Err(Flaw::InvalidEncoding);
    }
    let spaced;
    let raw = if plus_is_space && raw.contains('+') {
        spaced = raw.replace('+', " ");
        spaced.as_str()
    } else {
        raw
    };
    Ok(percent_encoding::percent_decode_str(raw).collect())
}

fn too_large() -> ApiError {
    let reason = "the body is larger than 2 MiB";
    ApiError::new(ErrorCode::InvalidBody, format!("invalid body: {reason}"))
        .with_details(serde_json::json!({ "path": "", "reason": reason }))
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;

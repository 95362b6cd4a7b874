//! Renders [`ApiError`] as the REST error envelope `{ "error": { "code", "message", "details"? } }`
//! with the code's HTTP status, `Retry-After` when `details.retryAfterSeconds` is set and a
//! `WWW-Authenticate` challenge naming the required scopes on `insufficient_scope`, and answers unknown routes (404 `not_found`), wrong methods (405 `invalid_request`) and panics
//! (500 `internal_error`) in the same envelope.

use crate::dto::common::ErrorEnvelope;
use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode, Uri, header};
use platform::error::{ApiError, ErrorCode};

/// An error on its way to the client; handlers return `Result<_, ErrorResponse>`.
#[derive(Debug)]
pub struct ErrorResponse(pub ApiError);

impl From<ApiError> for ErrorResponse {
    fn from(error: ApiError) -> Self {
        Self(error)
    }
}

impl From<tonic::Status> for ErrorResponse {
    fn from(status: tonic::Status) -> Self {
        Self(crate::operations::service_error(status))
    }
}

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        let error = self.0;
        let status =
            StatusCode::from_u16(error.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_client_error() {
            tracing::debug!(code = error.code.as_str(), message = %error.message, "request refused");
        }
        let retry_after = error.retry_after_seconds();
        let challenge = scope_challenge(&error);
        let mut response = (status, Json(ErrorEnvelope::from(&error))).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Some(challenge) = challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// `Bearer realm="lab", error="insufficient_scope", scope="<required…>"` (RFC 6750) for an
/// `insufficient_scope` error whose details list the required scopes.
fn scope_challenge(error: &ApiError) -> Option<String> {
    if error.code != ErrorCode::InsufficientScope {
        return None;
    }
    let required = error.details.as_ref()?.get("required")?.as_array()?;
    let scopes: Vec<&str> = required.iter().filter_map(serde_json::Value::as_str).collect();
    Some(format!(
        "Bearer realm=\"lab\", error=\"insufficient_scope\", scope=\"{}\"",
        scopes.join(" ")
    ))
}

/// Fallback of unknown paths: 404 `not_found`.
pub async fn not_found(method: Method, uri: Uri) -> ErrorResponse {
    ApiError::new(
        ErrorCode::NotFound,
        format!("no operation {method} {}", uri.path()),
    )
    .into()
}

/// Fallback of known paths called with a method they do not support: HTTP 405 with code
/// `invalid_request` (the error table has no 405 code) and `details.method`; axum adds `Allow`.
pub async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let error = ApiError::new(
        ErrorCode::InvalidRequest,
        format!("method {method} is not allowed on {}", uri.path()),
    )
    .with_details(serde_json::json!({ "method": method.as_str() }));
    let mut response = ErrorResponse(error).into_response();
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// Answer of a handler that panicked: 500 `internal_error` (the panic is logged).
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ErrorResponse(ApiError::internal(format!("handler panicked: {detail}"))).into_response()
}

//! Layers around every response: the request id (the caller's `X-Request-Id` when it is a sane
//! token of at most 128 characters, else a new UUID, echoed on every response), a trace span
//! per request that continues an incoming W3C `traceparent`, a panic catcher, the concurrency
//! limit (beyond it 503 `overloaded` at once, never a queue) and the request time limit (504
//! `timeout`), both in the error envelope; and the HTTP metrics of every answer
//! (`platform::metrics`: `http_server_requests_total`, `http_server_request_duration_seconds`).

use crate::http::error::ErrorResponse;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::HeaderName;
use platform::error::{ApiError, ErrorCode};
use std::time::Duration;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

/// The request id header.
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// Longest request id taken from a caller.
const MAX_REQUEST_ID_LEN: usize = 128;

/// True when a caller's request id can be echoed and logged as it is.
pub fn is_sane_request_id(value: &[u8]) -> bool {
    !value.is_empty()
        && value.len() <= MAX_REQUEST_ID_LEN
        && value
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.:".contains(byte))
}

/// Drops an incoming request id that is not sane, so that a new one is minted.
pub fn sanitize_request_id(mut request: Request) -> Request {
    let values = request.headers().get_all(&X_REQUEST_ID);
    let mut iter = values.iter();
    let keep =
        matches!((iter.next(), iter.next()), (Some(value), None) if is_sane_request_id(value.as_bytes()));
    if !keep {
        request.headers_mut().remove(&X_REQUEST_ID);
    }
    request
}

/// Sets the request id when absent.
pub fn set_request_id() -> SetRequestIdLayer<MakeRequestUuid> {
    SetRequestIdLayer::new(X_REQUEST_ID.clone(), MakeRequestUuid)
}

/// Copies the request id onto the response.
pub fn propagate_request_id() -> PropagateRequestIdLayer {
    PropagateRequestIdLayer::new(X_REQUEST_ID.clone())
}

/// The span of one request, a child of the caller's trace when `traceparent` is present: an
/// HTTP server span per the OpenTelemetry conventions, named `{method} {http.route}` once
/// [`record_metrics`] knows the route, with the request id as
/// `http.request.header.x-request-id` (how an operator finds a request's trace) and the
/// caller's key and customer once authenticated.
pub fn request_span(request: &Request) -> tracing::Span {
    let request_id = request
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let span = tracing::info_span!(
        "http.request",
        otel.name = %request.method(),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %request.method(),
        http.route = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        url.path = %loggable_path(request.uri().path()),
        url.scheme = "http",
        "http.request.header.x-request-id" = request_id,
        lab.api_key.id = tracing::field::Empty,
        lab.customer.id = tracing::field::Empty,
    );
    if platform::telemetry::exporting() {
        platform::telemetry::continue_from_headers(&span, request.headers());
    }
    span
}

/// The request path as spans and logs may show it: the hosted pay page's session id is the
/// capability to pay (`/pay/{sessionId}`), so it never leaves the request.
pub fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    match path.strip_prefix("/pay/") {
        Some(rest) => {
            let after = rest.find('/').map_or("", |slash| &rest[slash..]);
            std::borrow::Cow::Owned(format!("/pay/{{sessionId}}{after}"))
        }
        None => std::borrow::Cow::Borrowed(path),
    }
}

#[cfg(test)]
mod loggable_path_tests {
    use super::loggable_path;

    #[test]
    fn a_pay_page_path_is_logged_without_its_session_id() {
        assert_eq!(loggable_path("/pay/AbC123secret"), "/pay/{sessionId}");
        assert_eq!(
            loggable_path("/pay/AbC123secret/confirm"),
            "/pay/{sessionId}/confirm"
        );
        assert_eq!(
            loggable_path("/api/v1/agent/orders/ORD-1"),
            "/api/v1/agent/orders/ORD-1"
        );
    }
}

/// While spans are not exported, runs the request passing on its W3C trace context (the
/// caller's `traceparent` when it is a valid one, else a new root), so that the calls, events
/// and webhooks it causes share one trace id (`platform::telemetry::passed_on`). While spans
/// are exported, [`request_span`] continues or starts the trace instead.
pub async fn pass_trace_context(request: Request, next: Next) -> Response {
    if !platform::telemetry::passes_context() {
        return next.run(request).await;
    }
    let (traceparent, tracestate) = platform::telemetry::incoming_context(request.headers());
    platform::telemetry::passed_on(traceparent, tracestate, next.run(request)).await
}

/// Drops the `Allow` header axum adds on known paths unless the answer is a 405, so that a
/// refusal (401) does not reveal which methods a path has.
pub async fn allow_only_on_405(mut response: Response) -> Response {
    if response.status() != http::StatusCode::METHOD_NOT_ALLOWED {
        response.headers_mut().remove(http::header::ALLOW);
    }
    response
}

/// The label of a route or method outside the known set (a 404, an unusual method), so that
/// callers cannot grow the label set.
const OTHER: &str = "_OTHER";

/// Records the answer's status and duration under the request's route template (the matched
/// path, never the concrete path with its ids) and method, and the route and status on the
/// request's span (`request_span`, the current one here).
pub async fn record_metrics(request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or(OTHER, axum::extract::MatchedPath::as_str)
        .to_owned();
    let method = match *request.method() {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::HEAD => "HEAD",
        http::Method::OPTIONS => "OPTIONS",
        _ => OTHER,
    };
    let span = tracing::Span::current();
    if route != OTHER {
        span.record("http.route", route.as_str());
        // The conventional name (`{method} {route}`) matters only to an exported span.
        if platform::telemetry::exporting() {
            platform::telemetry::rename(&span, format!("{} {route}", request.method()));
        }
    }
    let response = next.run(request).await;
    span.record("http.response.status_code", response.status().as_u16());
    if response.status().is_server_error() {
        span.record("otel.status_code", "error");
    }
    let metrics = platform::metrics::metrics();
    let operation = platform::metrics::HttpRouteLabels {
        http_request_method: method.to_owned(),
        http_route: route,
    };
    metrics
        .http_server_duration
        .get_or_create(&operation)
        .observe(started.elapsed().as_secs_f64());
    metrics
        .http_server_requests
        .get_or_create(&platform::metrics::HttpLabels {
            http_request_method: operation.http_request_method,
            http_route: operation.http_route,
            http_response_status_code: response.status().as_u16(),
        })
        .inc();
    response
}

/// Answers a request that exceeds the time limit with 504 `timeout` (the work it started is
/// abandoned; an idempotent retry with the same key is safe).
pub async fn time_limit(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(?limit, "request timed out");
            let message = format!(
                "the request took longer than {} ms; it may still complete: retry with the same Idempotency-Key",
                limit.as_millis()
            );
            ErrorResponse(ApiError::new(ErrorCode::Timeout, message)).into_response()
        }
    }
}

/// Answer of a request shed by the concurrency limit: 503 `overloaded` with `Retry-After: 1`.
pub async fn overloaded(_: tower::BoxError) -> Response {
    let error = ApiError::new(
        ErrorCode::Overloaded,
        "the gateway has as many requests in flight as it takes; retry shortly",
    )
    .with_details(serde_json::json!({ "retryAfterSeconds": 1 }));
    ErrorResponse(error).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_short_plain_tokens() {
        assert!(is_sane_request_id(b"req-123_abc.def:9"));
        assert!(is_sane_request_id(&[b'a'; 128]));
        assert!(!is_sane_request_id(&[b'a'; 129]));
        assert!(!is_sane_request_id(b""));
        assert!(!is_sane_request_id(b"has space"));
        assert!(!is_sane_request_id(b"<script>"));
    }
}

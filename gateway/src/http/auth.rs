//! The guard of every `/api/v1/agent` route, in this order: find the route in the scope table
//! (an unlisted route is an internal error, never an open door), authenticate the bearer key
//! (401 `unauthenticated` with `WWW-Authenticate`), take a rate-limit token (429), check the
//! scopes (403 `insufficient_scope`), then hand the handler a [`Caller`] with a minted
//! principal token. All of it happens before any service is called.

use crate::authenticator::{AuthError, Refusal};
use crate::caller::Caller;
use crate::http::AppState;
use crate::http::error::ErrorResponse;
use crate::scopes::{self, Access};
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};
use platform::error::{ApiError, ErrorCode};
use std::net::SocketAddr;

/// Path prefix of the agent REST area.
pub const AGENT_PREFIX: &str = "/api/v1/agent";

/// The middleware; install with `route_layer` so that the matched path is known.
pub async fn guard(
    State(state): State<AppState>,
    matched: Option<MatchedPath>,
    mut request: Request,
    next: Next,
) -> Response {
    let template = matched.as_ref().map(MatchedPath::as_str).unwrap_or_default();
    let relative = template.strip_prefix(AGENT_PREFIX).unwrap_or(template);
    let Some(operation) = scopes::operation(request.method(), relative) else {
        let cause = format!(
            "route {} {template} is missing from the scope table",
            request.method()
        );
        return ErrorResponse(ApiError::internal(cause)).into_response();
    };
    let required = match operation.access {
        Access::Scopes(required) => required,
        Access::Public => return public(&state, request, next).await,
    };
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().unwrap_or_default());
    let principal = match state.authenticator.authenticate(authorization).await {
        Ok(principal) => principal,
        Err(AuthError::Refused(refusal)) => return unauthenticated(refusal),
        Err(AuthError::Unavailable(error)) => return ErrorResponse(error).into_response(),
    };
    let span = tracing::Span::current();
    span.record("key_id", principal.subject.as_str());
    if let Some(customer_id) = principal.customer_id {
        span.record("customer_id", customer_id.to_string());
    }
    if let Err(error) = state.rate_limiter.check(&principal.subject) {
        return ErrorResponse(error).into_response();
    }
    if let Err(error) = scopes::check(required, &principal.scopes) {
        // The error response adds the insufficient_scope challenge naming `required`.
        return ErrorResponse(error).into_response();
    }
    request
        .extensions_mut()
        .insert(Caller::new(principal, state.tokens.clone()));
    next.run(request).await
}

/// A public operation: no key, rate-limited per client IP.
async fn public(state: &AppState, request: Request, next: Next) -> Response {
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let bucket = format!("ip:{}", client.map(|ip| ip.to_string()).unwrap_or_default());
    if let Err(error) = state.rate_limiter.check(&bucket) {
        return ErrorResponse(error).into_response();
    }
    next.run(request).await
}

/// 401 `unauthenticated`; the challenge names `invalid_token` unless no credential was sent.
fn unauthenticated(refusal: Refusal) -> Response {
    let (message, challenge) = match refusal {
        Refusal::Missing => (
            "an API key is required: send Authorization: Bearer <key>",
            "Bearer realm=\"lab\"",
        ),
        Refusal::Invalid => (
            "the API key is malformed, unknown or revoked",
            "Bearer realm=\"lab\", error=\"invalid_token\"",
        ),
    };
    with_challenge(
        ErrorResponse(ApiError::new(ErrorCode::Unauthenticated, message)).into_response(),
        challenge,
    )
}

fn with_challenge(mut response: Response, challenge: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

//! The front door: a layer around every route *and* the fallbacks, so it runs before a request
//! reaches a handler, a 404 or a 405. In this order:
//!
//! 1. the client address (peer, or `X-Forwarded-For` from a trusted proxy) takes a token of its
//!    `per-address` limit (429);
//! 2. public addresses pass: `/api/ready`, `/api/v1/openapi.json`, the hosted pay page
//!    (`/pay/…`), processor webhooks and the operations the scope table marks public (`/verify`);
//! 3. everything else needs a valid key, whether or not the path exists — so an anonymous caller
//!    cannot map the API (401 `unauthenticated` with `WWW-Authenticate`); a key-store lookup is
//!    charged to the address's `key-lookups` budget (429 before the store is asked);
//! 4. the key takes a token of its `per-key` limit, shared by every replica (429);
//! 5. a routed operation checks its scopes (403 `insufficient_scope`) and hands the handler a
//!    [`Caller`] with a minted principal token; an unknown path or method of an authenticated
//!    caller goes on to the 404 / 405 fallback.
//!
//! Answers to authenticated requests carry `RateLimit-Policy` and `RateLimit` of their key, and
//! those to a sandbox customer's key `X-SVC-Environment: sandbox` (docs/sandbox.md). A
//! sandbox-only operation (`scopes::SANDBOX_ONLY`) answers any other key 404 `not_found` before
//! its scopes are checked, as a path that does not exist.

use crate::authenticator::{AuthError, Refusal};
use crate::caller::Caller;
use crate::client_addr::{TrustedProxies, limit_key};
use crate::http::AppState;
use crate::http::error::ErrorResponse;
use crate::http::rate_limit;
use crate::limits::local::LocalLimiter;
use crate::limits::shared::SharedLimiter;
use crate::scopes::{self, Access};
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, header};
use platform::error::{ApiError, ErrorCode};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// Path prefix of the agent REST area.
pub const AGENT_PREFIX: &str = "/api/v1/agent";
/// Routes outside the agent area that need no key: readiness, the OpenAPI document, the COA
/// signing key and COA documents (their signed link authorizes), the site's hosted checkout (its
/// session id is the capability), the one-click unsubscribe link of COA emails (its signed token
/// is the capability), and the signed label download, the carrier's webhook and the processors'
/// webhooks (their signatures are the authentication).
pub const PUBLIC_PATHS: &[&str] = &[
    "/api/ready",
    "/api/v1/openapi.json",
    COA_SIGNING_KEY_PATH,
    crate::http::shipping::LABEL_FILE_PATH,
    crate::http::shipping::CARRIER_WEBHOOK_PATH,
    COA_DOCUMENT_PATH,
    RAW_FILE_PATH,
    crate::http::pay::PAY_PAGE,
    crate::http::pay::PAY_CONFIRM,
    crate::http::pay_stablecoin::PAY_STABLECOIN,
    crate::http::pay::PROCESSOR_WEBHOOK,
    crate::http::unsubscribe::UNSUBSCRIBE_PATH,
];
/// Where a COA's PDF is downloaded through the signed link of its result (the link authorizes).
pub const COA_DOCUMENT_PATH: &str = "/api/v1/documents/coa/{coa_id}";
/// Where a released instrument file of the local blob store is downloaded through a signed link
/// (the link authorizes; `platform::blobs`).
pub const RAW_FILE_PATH: &str = "/api/v1/files/results/{*key}";
/// Where the public key that signs COA contents is published (a JWK set).
pub const COA_SIGNING_KEY_PATH: &str = "/.well-known/coa-signing-key.json";

/// The limits of the front door.
pub struct FrontDoor {
    pub trusted_proxies: TrustedProxies,
    /// Every request, per client address (this replica).
    pub per_address: LocalLimiter<IpAddr>,
    /// Every authenticated request, per key (all replicas).
    pub per_key: SharedLimiter,
    /// Every accession looked up by public verification, all clients (all replicas); charged by
    /// the verify operations, which know how many accessions a request names.
    pub verify_lookups: crate::limits::ceiling::LookupCeiling,
}

/// What a request asks for, as far as the front door is concerned.
enum Target {
    Public,
    /// A routed operation that needs these scopes.
    Operation(&'static [&'static str]),
    /// No operation: an unknown path or method (404 / 405 for an authenticated caller).
    Unknown,
}

/// What the front door reads of the application state, behind one `Arc` so that a request clones
/// a pointer, not the whole state.
pub struct Guard {
    front_door: Arc<FrontDoor>,
    authenticator: crate::authenticator::Authenticator,
    tokens: platform::tokens::TokenIssuer,
}

impl Guard {
    /// The front door of `state`.
    pub fn of(state: &AppState) -> Arc<Self> {
        Arc::new(Self {
            front_door: Arc::clone(&state.front_door),
            authenticator: state.authenticator.clone(),
            tokens: state.tokens.clone(),
        })
    }
}

/// The header that marks every answer to a sandbox customer's key.
pub static X_SVC_ENVIRONMENT: http::HeaderName = http::HeaderName::from_static("x-svc-environment");

/// The middleware; install with `Router::layer` after the routes and fallbacks.
pub async fn guard(
    State(state): State<Arc<Guard>>,
    matched: Option<MatchedPath>,
    mut request: Request,
    next: Next,
) -> Response {
    let client = client_of(&state, &request);
    request
        .extensions_mut()
        .insert(crate::client_addr::ClientAddr(client));
    let front_door = &state.front_door;
    let per_address = front_door.per_address.check(limit_key(client));
    if !per_address.is_allowed() {
        return rate_limit::limited(
            front_door.per_address.policy(),
            per_address,
            "too many requests from this address",
        );
    }
    let target = target(
        request.method(),
        matched.as_ref().map(MatchedPath::as_str),
        request.uri().path(),
    );
    let required = match target {
        Target::Public => return next.run(request).await,
        Target::Operation(required) => Some(required),
        Target::Unknown => None,
    };
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().unwrap_or_default());
    let record = match state.authenticator.authenticate(authorization, client).await {
        Ok(record) => record,
        Err(AuthError::Refused(refusal)) => return unauthenticated(refusal),
        Err(AuthError::Limited(decision)) => {
            return rate_limit::limited(
                state.authenticator.lookup_policy(),
                decision,
                "too many unknown API keys from this address",
            );
        }
        Err(AuthError::Unavailable(error)) => return ErrorResponse(error).into_response(),
    };
    let sandbox = record.principal.sandbox;
    let sandbox_only = matched
        .as_ref()
        .and_then(|path| path.as_str().strip_prefix(AGENT_PREFIX))
        .is_some_and(|path| scopes::sandbox_only(request.method().as_str(), path));
    if sandbox_only && !sandbox {
        // The fallback's very answer, rate-limit headers included: nothing tells it apart.
        let mut response = crate::http::error::not_found(request.method().clone(), request.uri().clone())
            .await
            .into_response();
        let per_key = state.front_door.per_key.check(record.key.id).await;
        rate_limit::set_headers(response.headers_mut(), state.front_door.per_key.policy(), per_key);
        return response;
    }
    let mut response = authorized(&state, record, required, request, next).await;
    if sandbox {
        response
            .headers_mut()
            .insert(X_SVC_ENVIRONMENT.clone(), HeaderValue::from_static("sandbox"));
    }
    response
}

/// Steps 4 and 5 for an authenticated key.
async fn authorized(
    state: &Guard,
    record: Arc<crate::key_cache::KeyRecord>,
    required: Option<&'static [&'static str]>,
    mut request: Request,
    next: Next,
) -> Response {
    let front_door = &state.front_door;
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.record("lab.api_key.id", record.principal.subject.as_str());
        if let Some(customer_id) = record.principal.customer_id {
            span.record("lab.customer.id", customer_id.to_string());
        }
    }
    let per_key = front_door.per_key.check(record.key.id).await;
    if !per_key.is_allowed() {
        return rate_limit::limited(
            front_door.per_key.policy(),
            per_key,
            "too many requests for this API key",
        );
    }
    if let Some(required) = required {
        if let Err(error) = scopes::check(required, &record.principal.scopes) {
            // The error response adds the insufficient_scope challenge naming `required`.
            let mut response = ErrorResponse(error).into_response();
            rate_limit::set_headers(response.headers_mut(), front_door.per_key.policy(), per_key);
            return response;
        }
        let caller = Caller::new(Arc::clone(&record.principal), state.tokens.clone())
            .with_request_id(request.headers().get(&crate::http::layers::X_REQUEST_ID));
        // A request that changes something acts for its customer through a delegation the
        // services it calls pass on (MCP decides per tool, `crate::mcp`).
        let delegated = !matches!(*request.method(), http::Method::GET | http::Method::HEAD)
            && request.uri().path() != crate::http::MCP_PATH;
        let delegation = if delegated { caller.delegation() } else { None };
        request.extensions_mut().insert(caller);
        if let Some(delegation) = delegation {
            let mut response = platform::delegation::acting_for(delegation, next.run(request)).await;
            rate_limit::set_headers(response.headers_mut(), front_door.per_key.policy(), per_key);
            return response;
        }
    }
    let mut response = next.run(request).await;
    rate_limit::set_headers(response.headers_mut(), front_door.per_key.policy(), per_key);
    response
}

/// In place of [`guard`] in the front-door benchmark only: every request acts as `caller`.
pub async fn fixed_caller(State(caller): State<Caller>, mut request: Request, next: Next) -> Response {
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// The client address of a request (unspecified when the server gave no peer address).
fn client_of(state: &Guard, request: &Request) -> IpAddr {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
    state.front_door.trusted_proxies.client(peer, request.headers())
}

/// What `method` on the route `matched` (none: the fallback) at `path` asks for. A public
/// operation of the scope table that is not routed yet stays public (its answer is a 404).
fn target(method: &Method, matched: Option<&str>, path: &str) -> Target {
    let Some(template) = matched else {
        let public = path
            .strip_prefix(AGENT_PREFIX)
            .and_then(|relative| scopes::operation(method, relative))
            .is_some_and(|operation| operation.access == Access::Public);
        return if public { Target::Public } else { Target::Unknown };
    };
    if PUBLIC_PATHS.contains(&template) {
        return Target::Public;
    }
    if template == super::MCP_PATH {
        // POST needs a key (the tools check their scopes); other methods are 405 for anyone.
        return if method == Method::POST {
            Target::Operation(&[])
        } else {
            Target::Public
        };
    }
    let Some(relative) = template.strip_prefix(AGENT_PREFIX) else {
        return Target::Unknown;
    };
    match scopes::operation(method, relative).map(|operation| operation.access) {
        Some(Access::Public) => Target::Public,
        Some(Access::Scopes(required)) => Target::Operation(required),
        None => Target::Unknown,
    }
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
    let mut response = ErrorResponse(ApiError::new(ErrorCode::Unauthenticated, message)).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

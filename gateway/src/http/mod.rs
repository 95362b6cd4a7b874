//! The REST application: the agent area's routes ([`api`], generated from the operation table
//! `crate::operation_table`) and the routes outside it, the front door (limits and
//! authentication, [`auth`]) around every route and the 404 / 405 fallbacks, the input guard
//! (`platform::input`'s character rules) on the agent routes inside it, the request-id, trace,
//! concurrency-limit and time-limit layers around everything, readiness and the OpenAPI document.
//! Other front ends (the MCP endpoint) hand their routes to [`assemble`], which puts them behind
//! the same front door; `crate::app` builds the whole application.

pub mod api;
pub mod auth;
pub mod error;
pub mod extract;
pub mod input;
pub mod layers;
pub mod openapi;
pub mod pay;
pub mod pay_html;
pub mod pay_stablecoin;
pub mod rate_limit;
pub mod ready;
pub mod results;
pub mod shipping;
pub mod unsubscribe;

use crate::authenticator::Authenticator;
use crate::operations::Replayable;
use crate::peers::Peers;
use axum::error_handling::HandleErrorLayer;
use axum::extract::Request;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{Route, get};
use axum::{Json, Router};
use http::{HeaderValue, StatusCode};
use platform::tokens::TokenIssuer;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceBuilder;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::util::BoxCloneSyncServiceLayer;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnFailure, DefaultOnResponse, TraceLayer};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub peers: Peers,
    pub authenticator: Authenticator,
    /// Mints the principal tokens of outgoing calls (the gateway's own key).
    pub tokens: TokenIssuer,
    pub front_door: Arc<auth::FrontDoor>,
    pub readiness: Arc<ready::Readiness>,
    /// Longest time a request may take (504 `timeout` beyond).
    pub request_timeout: Duration,
    /// Requests in flight at once (503 `overloaded` beyond).
    pub max_concurrent_requests: usize,
    /// Where the MCP endpoint may be called from.
    pub mcp: Arc<crate::config::McpSettings>,
    /// The configured public site root (`https://lab.example.com`): absolute links (COA
    /// documents) are built from it, never from the request's `Host` or `X-Forwarded-*`.
    pub site_url: Arc<str>,
    /// The laboratory named on the pay page.
    pub lab: Arc<platform::lab::LabIdentity>,
}

/// Response header set when the answer is the stored result of an earlier identical request.
pub const IDEMPOTENT_REPLAYED_HEADER: &str = "idempotent-replayed";

/// Answers an idempotent mutation: the same status and body for the first answer and for a
/// replay, plus `Idempotent-Replayed: true` on a replay.
pub fn replayable_response<T: serde::Serialize>(status: StatusCode, outcome: Replayable<T>) -> Response {
    let mut response = (status, Json(outcome.body)).into_response();
    if outcome.replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED_HEADER, HeaderValue::from_static("true"));
    }
    response
}

/// The routed agent area and its OpenAPI document (paths relative to `/api/v1/agent`): one route
/// per declaration of `crate::operation_table`.
pub fn agent_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, document) = api::routes(OpenApiRouter::with_openapi(openapi::base())).split_for_parts();
    (router, openapi::finish(document))
}

/// The documented routes outside the agent area and their OpenAPI paths (each operation names
/// its own server, the site root): the JWK set of the COA signing keys.
pub fn site_root_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::new()
        .routes(routes!(results::signing_keys))
        .split_for_parts()
}

/// Path of the MCP endpoint (`{site_url}/api/mcp`); the front door lets a key call it and
/// `crate::mcp` serves it.
pub const MCP_PATH: &str = "/api/mcp";

/// The layer in the place of the front door (`crate::app` puts the real one or, for the
/// front-door benchmark, a fixed caller).
pub type FrontDoorLayer = BoxCloneSyncServiceLayer<Route, Request, Response, Infallible>;

/// The front door: limits and authentication ([`auth`]).
pub fn front_door(state: &AppState) -> FrontDoorLayer {
    BoxCloneSyncServiceLayer::new(from_fn_with_state(auth::Guard::of(state), auth::guard))
}

/// In the front door's place, every request acting as `caller` (benchmarks only).
pub fn fixed_caller(caller: crate::caller::Caller) -> FrontDoorLayer {
    BoxCloneSyncServiceLayer::new(from_fn_with_state(caller, auth::fixed_caller))
}

/// Builds the application: the REST routes and `more` (another front end's routes), all behind
/// `front_door` and the layers around everything.
pub fn assemble(state: AppState, front_door: FrontDoorLayer, more: axum::Router<AppState>) -> Router {
    let (agent, mut document) = agent_routes();
    let (site_root, site_root_document) = site_root_routes();
    document.merge(site_root_document);
    let document = Arc::new(
        document
            .to_json()
            .unwrap_or_else(|error| format!("{{\"error\":\"{error}\"}}")),
    );
    // Inside the front door (authentication comes first), the input rules, then the handler.
    let agent = agent.route_layer(axum::middleware::from_fn(input::guard));
    let openapi_json = move || {
        let document = Arc::clone(&document);
        async move {
            (
                [(http::header::CONTENT_TYPE, "application/json")],
                document.as_str().to_owned(),
            )
                .into_response()
        }
    };
    let layers = ServiceBuilder::new()
        .map_request(layers::sanitize_request_id)
        .layer(layers::set_request_id())
        .layer(layers::propagate_request_id())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(layers::request_span)
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO))
                // Internal errors are logged with their cause where they arise; a 503 is a warning.
                .on_failure(DefaultOnFailure::new().level(tracing::Level::WARN)),
        )
        .layer(axum::middleware::from_fn(layers::pass_trace_context))
        .layer(axum::middleware::from_fn(layers::record_metrics))
        .layer(CatchPanicLayer::custom(error::panic_response))
        .layer(HandleErrorLayer::new(layers::overloaded))
        .layer(LoadShedLayer::new())
        .layer(GlobalConcurrencyLimitLayer::new(state.max_concurrent_requests))
        .layer(from_fn_with_state(state.request_timeout, layers::time_limit));
    let routed = Router::new()
        .nest(auth::AGENT_PREFIX, agent)
        .route("/api/ready", get(ready::ready))
        .route(pay::PAY_PAGE, get(pay::show).post(pay::pay))
        .route(pay::PAY_CONFIRM, axum::routing::post(pay::confirm))
        .route(
            pay_stablecoin::PAY_STABLECOIN,
            axum::routing::post(pay_stablecoin::submit),
        )
        .route(
            pay::PROCESSOR_WEBHOOK,
            axum::routing::post(pay::processor_webhook),
        )
        .route("/api/v1/openapi.json", get(openapi_json))
        .route(shipping::LABEL_FILE_PATH, get(shipping::download_label))
        .route(
            shipping::CARRIER_WEBHOOK_PATH,
            axum::routing::post(shipping::carrier_webhook),
        )
        .merge(site_root)
        .route(auth::COA_DOCUMENT_PATH, get(results::coa_document))
        .route(auth::RAW_FILE_PATH, get(results::raw_file))
        .route(
            unsubscribe::UNSUBSCRIBE_PATH,
            get(unsubscribe::show).post(unsubscribe::unsubscribe),
        )
        .merge(more)
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        // Around the fallbacks too: an anonymous caller meets 401 before it learns what exists.
        .layer(front_door)
        .layer(layers)
        .with_state(state);
    // axum adds `Allow` to every answer of a known path called with another method, even a 401:
    // only a 405 (authenticated callers) keeps it.
    Router::new()
        .fallback_service(routed)
        .layer(axum::middleware::map_response(layers::allow_only_on_405))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routed_operation_is_in_the_scope_table_and_documented_with_its_scope() {
        let (_, document) = agent_routes();
        let json: serde_json::Value = serde_json::from_str(&document.to_json().unwrap()).unwrap();
        assert_eq!(json["openapi"], "3.1.0");
        let paths = json["paths"].as_object().unwrap();
        let mut count = 0;
        let mut public = 0;
        for (path, item) in paths {
            for (method, operation) in item.as_object().unwrap() {
                let method = http::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                let entry = crate::scopes::operation(&method, path).expect("in the scope table");
                let crate::scopes::Access::Scopes(required) = entry.access else {
                    assert!(path.starts_with("/verify"), "{path} is public");
                    assert!(operation["security"][0].as_object().unwrap().is_empty());
                    public += 1;
                    continue;
                };
                let description = operation["description"].as_str().unwrap();
                assert!(
                    required.iter().all(|scope| description.contains(scope)),
                    "{description}"
                );
                assert_eq!(operation["security"][0]["bearerAuth"][0], required[0]);
                assert!(operation["responses"]["401"].is_object());
                count += 1;
            }
        }
        assert_eq!((count, public), (48, 4));
        let create_order = &json["paths"]["/orders"]["post"];
        assert_eq!(create_order["parameters"][0]["name"], "Idempotency-Key");
        assert_eq!(create_order["parameters"][0]["in"], "header");
        for (path, method) in [
            ("/webhooks", "post"),
            ("/webhooks/{endpointId}", "delete"),
            ("/webhooks/{endpointId}/rotate-secret", "post"),
            ("/webhooks/{endpointId}/test", "post"),
        ] {
            let parameters = json["paths"][path][method]["parameters"].as_array().unwrap();
            assert!(
                parameters
                    .iter()
                    .any(|p| p["name"] == "Idempotency-Key" && p["required"] == true),
                "{method} {path}"
            );
        }
        let deliveries = &json["paths"]["/webhooks/{endpointId}/deliveries"]["get"];
        assert!(
            deliveries["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["name"] != "Idempotency-Key")
        );
    }

    #[test]
    fn the_coa_signing_key_set_is_documented_public_at_the_site_root() {
        let (_, document) = site_root_routes();
        let json: serde_json::Value = serde_json::from_str(&document.to_json().unwrap()).unwrap();
        let paths = json["paths"].as_object().unwrap();
        assert_eq!(paths.keys().collect::<Vec<_>>(), [auth::COA_SIGNING_KEY_PATH]);
        let operation = &json["paths"][auth::COA_SIGNING_KEY_PATH]["get"];
        assert_eq!(operation["servers"][0]["url"], "/", "{operation}");
        assert_eq!(operation["security"], serde_json::json!([{}]), "{operation}");
        let schema = &json["components"]["schemas"]["CoaSigningKeySet"];
        assert!(schema["properties"]["keys"].is_object(), "{schema}");
        let jwk = &json["components"]["schemas"]["CoaPublicJwk"]["properties"];
        for member in ["kty", "crv", "kid", "use", "alg", "x"] {
            assert!(jwk[member].is_object(), "{member}: {jwk}");
        }
    }
}

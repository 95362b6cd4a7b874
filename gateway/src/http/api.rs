//! The REST handlers of the agent area and their router, generated from the operations' one
//! declaration in `crate::operation_table`: each handler carries its `#[utoipa::path]` attribute
//! (so the OpenAPI document describes exactly what is routed), extracts its inputs in the
//! declared order and calls the operation function of `crate::operations*` that the MCP tool
//! calls too.

use crate::client_addr::ClientAddr;
use crate::http::error::ErrorResponse;
use crate::http::{AppState, replayable_response};
use crate::operation_table::prelude::*;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::{HeaderValue, StatusCode, header};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The handlers and the router of the declarations of `crate::operation_table`.
macro_rules! handlers {
    ($({ route: $method:ident $path:literal, tool: $tool:tt, scope: $scope:tt, rest: $rest:tt, call: $call:tt, })*) => {
        $(handlers!(@handler $method $path $rest $call);)*

        /// `router` with every operation's route and OpenAPI path.
        pub fn routes(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
            router $(.routes(handlers!(@route $rest)))*
        }
    };
    (@route { $(#[doc = $doc:tt])* handler: $handler:ident, $($other:tt)* }) => { routes!($handler) };
    (@handler $method:ident $path:tt {
        $(#[doc = $doc:tt])*
        handler: $handler:ident,
        openapi: ($($openapi:tt)*),
    } {
        answer: $answer:ident $(($status:ident))?,
        run: |$cx:ident $(, $arg:ident: $ty:ty)*| $run:expr,
    }) => {
        $(#[doc = $doc])*
        #[utoipa::path($method, path = $path, $($openapi)*)]
        pub async fn $handler(
            State(state): State<AppState>,
            client: Option<Extension<ClientAddr>>,
            $($arg: $ty),*
        ) -> Result<Response, ErrorResponse> {
            let $cx = rest_context(&state, client);
            $(let $arg = <$ty as Input>::rest($arg);)*
            let answer = $run.await?;
            Ok(handlers!(@answer $answer $(($status))?, answer))
        }
    };
    (@answer json, $answer:ident) => { Json($answer).into_response() };
    (@answer created, $answer:ident) => { (StatusCode::CREATED, Json($answer)).into_response() };
    (@answer replayable($status:ident), $answer:ident) => {
        replayable_response(StatusCode::$status, $answer)
    };
    // A preview (200) or a creation (201, replayable).
    (@answer staged, $answer:ident) => {
        replayable_response(
            if $answer.created { StatusCode::CREATED } else { StatusCode::OK },
            $answer.outcome,
        )
    };
    (@answer secret($status:ident), $answer:ident) => {
        no_store(replayable_response(StatusCode::$status, $answer))
    };
    // An export page, streamed as JSON or CSV.
    (@answer export, $answer:ident) => { $answer.into_response() };
    // The order as orders-svc rendered it, passed through without re-serializing.
    (@answer order, $answer:ident) => {
        ([(header::CONTENT_TYPE, "application/json")], $answer.into_json()).into_response()
    };
}

crate::operation_table::operation_table!(handlers);

/// Marks an answer that carries a signing secret as not storable by caches.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The context of a REST request.
pub fn rest_context(state: &AppState, client: Option<Extension<ClientAddr>>) -> Context<'_> {
    Context {
        peers: &state.peers,
        site: &state.site_url,
        verify_lookups: &state.front_door.verify_lookups,
        client: ClientAddr::of(client),
    }
}

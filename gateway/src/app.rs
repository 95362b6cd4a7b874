//! The whole HTTP application: the REST front end (`crate::http`) with the MCP endpoint
//! (`crate::mcp`) mounted behind the same front door.

use crate::http::{self, AppState};
use axum::Router;
use axum::routing::post;

/// The MCP endpoint's route.
fn mcp_routes() -> Router<AppState> {
    Router::new().route(crate::mcp::PATH, post(crate::mcp::endpoint))
}

/// Builds the application with the front door (limits and authentication).
pub fn app(state: AppState) -> Router {
    let front_door = http::front_door(&state);
    http::assemble(state, front_door, mcp_routes())
}

/// The same application with neither authentication nor limits: every request acts as
/// `caller`. Only the front-door benchmark (`examples/front_door_bench.rs`) uses it, to measure
/// what the front door costs; no setting leads here.
#[doc(hidden)]
pub fn app_without_front_door_for_benchmarks(state: AppState, caller: crate::caller::Caller) -> Router {
    http::assemble(state, http::fixed_caller(caller), mcp_routes())
}

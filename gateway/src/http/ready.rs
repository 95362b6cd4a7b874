//! `GET /api/ready` (no key): 200 `{"status":"ready"}` when the gateway's database and Redis
//! answer and every peer's gRPC health reports SERVING; otherwise 503
//! `{"status":"not_ready","failing":[…]}` naming `storage` (database or Redis) and/or the peers
//! (`catalog-svc`, `orders-svc`, `payments-svc`, `webhooks-svc`).

use crate::http::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

/// The readiness handler.
pub async fn ready(State(state): State<AppState>) -> Response {
    let storage = platform::health::dependencies_ready(&state.pool, &state.redis);
    let peers = state.peers.unhealthy(state.peer_health_timeout);
    let (storage_ready, unhealthy_peers) = tokio::join!(storage, peers);
    let mut failing: Vec<&str> = Vec::new();
    if !storage_ready {
        failing.push("storage");
    }
    failing.extend(unhealthy_peers);
    if failing.is_empty() {
        (StatusCode::OK, Json(json!({ "status": "ready" }))).into_response()
    } else {
        tracing::warn!(?failing, "not ready");
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "not_ready", "failing": failing })),
        )
            .into_response()
    }
}

//! `GET /api/ready` (no key): 200 `{"status":"ready"}` while the gateway's own dependency
//! (Redis: shared rate limits and revocations; the gateway has no database) answers, 503 `{"status":"not_ready"}` otherwise or once the gateway
//! is draining. It names nothing internal and never asks a peer service: a peer that is down
//! fails only the calls that need it (503 `service_unavailable`), not the whole API. Per-peer
//! health is on the internal gRPC listener (`lab.gateway.v1.OperationsService/CheckPeers`,
//! `labctl health`).
//!
//! The probe result is cached for [`PROBE_CACHE`]; one request refreshes it while the others
//! answer the last result, so a flood of probes costs at most one Redis round trip a second.

use crate::http::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a probe result is reused.
pub const PROBE_CACHE: Duration = Duration::from_secs(1);

/// The gateway's readiness: cached dependency probe plus the draining flag.
pub struct Readiness {
    redis: redis::Client,
    last: Mutex<Option<(Instant, bool)>>,
    refreshing: AtomicBool,
    draining: AtomicBool,
}

impl Readiness {
    pub fn new(redis: redis::Client) -> Self {
        Self {
            redis,
            last: Mutex::new(None),
            refreshing: AtomicBool::new(false),
            draining: AtomicBool::new(false),
        }
    }

    /// Marks the gateway as draining: from now on it reports not ready.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// True while Redis answered the last probe and the gateway is not draining.
    pub async fn is_ready(&self) -> bool {
        if self.draining.load(Ordering::Acquire) {
            return false;
        }
        let now = Instant::now();
        let last = *self.lock();
        if let Some((at, ready)) = last
            && now.duration_since(at) < PROBE_CACHE
        {
            return ready;
        }
        // One request probes; the others answer the last result (or wait for the first one).
        let refresher = !self.refreshing.swap(true, Ordering::AcqRel);
        if !refresher && let Some((_, ready)) = last {
            return ready;
        }
        // Released even when the request goes away mid-probe.
        let _refreshing = refresher.then(|| Refreshing(&self.refreshing));
        let ready = platform::health::redis_ready(&self.redis).await;
        *self.lock() = Some((Instant::now(), ready));
        if !ready {
            tracing::warn!("not ready: the gateway's Redis does not answer");
        }
        ready
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Instant, bool)>> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct Refreshing<'a>(&'a AtomicBool);

impl Drop for Refreshing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The readiness handler.
pub async fn ready(State(state): State<AppState>) -> Response {
    if state.readiness.is_ready().await {
        (StatusCode::OK, Json(json!({ "status": "ready" }))).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "not_ready" })),
        )
            .into_response()
    }
}

//! labd process: the whole mesh on loopback, until SIGTERM or SIGINT.
//!
//! Settings: `DATABASE_URL`, `REDIS_URL`, `LABD_HTTP_ADDR` (default 127.0.0.1:8080) and
//! `LABD_GRPC_BASE_PORT` (default 50050: gateway identity 50050, catalog 50051, orders 50052,
//! payments 50053, shipping 50054, results 50055, webhooks 50056), `LABD_METRICS_ADDR` (Prometheus
//! metrics of the whole process, default 127.0.0.1:9464, `off` for none), plus every service's own
//! settings (see docs/operations.md). Outside development mode (`LAB_DEV_MODE=1`) it needs
//! real keys and secrets like any deployment.

/// The allocator of the labd binary (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init("labd");
    let settings = labd::MeshSettings::from_env()?;
    let development = settings.gateway.common.dev_mode;
    let mesh = labd::start(settings).await?;
    tracing::info!(http = %mesh.http_addr, "labd ready: REST on http://{}/api/v1/agent", mesh.http_addr);
    if development {
        tracing::warn!(
            "labd runs in DEVELOPMENT MODE (LAB_DEV_MODE=1): published keys and secrets are accepted"
        );
    }
    let shutdown = platform::shutdown::signal_token();
    shutdown.cancelled().await;
    mesh.stop().await;
    tracing::info!("labd stopped");
    Ok(())
}

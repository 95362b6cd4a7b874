//! webhooks-svc process: telemetry, settings, build, serve until SIGTERM or SIGINT.

use webhooks_svc::SERVICE_NAME;

/// The allocator of the binary (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init(SERVICE_NAME);
    webhooks_svc::run_from_env().await
}

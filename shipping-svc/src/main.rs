//! shipping-svc process: telemetry, settings, build, serve until SIGTERM or SIGINT.

use shipping_svc::SERVICE_NAME;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init(SERVICE_NAME);
    shipping_svc::run_from_env().await
}

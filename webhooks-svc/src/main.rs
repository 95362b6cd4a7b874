//! webhooks-svc process: telemetry, settings, build, serve until SIGTERM or SIGINT.

use webhooks_svc::SERVICE_NAME;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init(SERVICE_NAME);
    webhooks_svc::run_from_env().await
}

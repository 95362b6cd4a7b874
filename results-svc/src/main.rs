//! results-svc process: telemetry, settings, build, serve until SIGTERM or SIGINT.

use results_svc::SERVICE_NAME;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init(SERVICE_NAME);
    results_svc::run_from_env().await
}

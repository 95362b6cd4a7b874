//! payments-svc process: telemetry, settings, build, serve until SIGTERM or SIGINT.

use payments_svc::{Application, SERVICE_NAME, Settings};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init(SERVICE_NAME);
    let settings = Settings::from_env()?;
    let application = Application::build(settings).await?;
    let shutdown = platform::shutdown::signal_token();
    // Prometheus metrics on the internal port (docs/operations.md, "Metrics").
    platform::metrics::MetricsEndpoint::start_from_env("PAYMENTS", "127.0.0.1:51053", &shutdown).await?;
    let outcome = application.run_until_stopped(shutdown).await;
    if let Err(error) = &outcome {
        tracing::error!(%error, "{SERVICE_NAME} stopped with an error");
    } else {
        tracing::info!("{SERVICE_NAME} stopped");
    }
    outcome
}

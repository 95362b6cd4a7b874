//! gRPC health that reports serving only while the database (for a process that has one) and
//! Redis answer.

use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

/// How often dependencies are probed.
const PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// Probes the database and Redis once; true when both answer.
pub async fn dependencies_ready(pool: &sqlx::PgPool, redis: &redis::Client) -> bool {
    let database = tokio::time::timeout(Duration::from_secs(2), sqlx::query("SELECT 1").execute(pool)).await;
    matches!(database, Ok(Ok(_))) && redis_ready(redis).await
}

/// Probes Redis once; true when it answers (the gateway, which has no database).
pub async fn redis_ready(redis: &redis::Client) -> bool {
    let ping = async {
        let mut connection = redis.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut connection).await
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), ping).await,
        Ok(Ok(_))
    )
}

/// Keeps the health status of `services` (and the overall "" entry) in step with the
/// dependencies (`pool`, when the process has a database, and Redis) until `shutdown` fires, then
/// reports not serving.
pub fn spawn_health_probe(
    reporter: HealthReporter,
    services: Vec<&'static str>,
    pool: Option<sqlx::PgPool>,
    redis: redis::Client,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = None;
        loop {
            let ready = match &pool {
                Some(pool) => dependencies_ready(pool, &redis).await,
                None => redis_ready(&redis).await,
            };
            if last != Some(ready) {
                let status = if ready {
                    ServingStatus::Serving
                } else {
                    ServingStatus::NotServing
                };
                for service in services.iter().copied().chain(std::iter::once("")) {
                    reporter.set_service_status(service, status).await;
                }
                if !ready {
                    tracing::warn!("dependencies unavailable, reporting not serving");
                }
                last = Some(ready);
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(PROBE_INTERVAL) => {}
            }
        }
        for service in services.iter().copied().chain(std::iter::once("")) {
            reporter
                .set_service_status(service, ServingStatus::NotServing)
                .await;
        }
    })
}

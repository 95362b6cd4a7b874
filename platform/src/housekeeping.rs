//! Periodic pruning of the platform tables of a service schema: idempotency replay records after
//! [`IDEMPOTENCY_RETENTION_HOURS`], processed-event ids after [`PROCESSED_EVENTS_RETENTION_DAYS`].

use sqlx::{AssertSqlSafe, PgPool};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long an idempotent request can be replayed (and its key is bound).
pub const IDEMPOTENCY_RETENTION_HOURS: i32 = 24;
/// How long processed event ids are remembered; far longer than any redelivery window.
pub const PROCESSED_EVENTS_RETENTION_DAYS: i32 = 14;
const INTERVAL: Duration = Duration::from_secs(600);

/// Deletes expired rows once.
pub async fn prune_once(pool: &PgPool, schema: &str) -> Result<(), sqlx::Error> {
    let idempotency = format!(
        "DELETE FROM {schema}.idempotency_keys WHERE state = 'completed' \
         AND created_at < now() - make_interval(hours => $1)"
    );
    sqlx::query(AssertSqlSafe(idempotency))
        .bind(IDEMPOTENCY_RETENTION_HOURS)
        .execute(pool)
        .await?;
    let processed = format!(
        "DELETE FROM {schema}.processed_events WHERE processed_at < now() - make_interval(days => $1)"
    );
    sqlx::query(AssertSqlSafe(processed))
        .bind(PROCESSED_EVENTS_RETENTION_DAYS)
        .execute(pool)
        .await?;
    Ok(())
}

/// Prunes every ten minutes until `shutdown` fires.
pub fn spawn(pool: PgPool, schema: &'static str, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(error) = prune_once(&pool, schema).await {
                tracing::warn!(schema, %error, "housekeeping failed");
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(INTERVAL) => {}
            }
        }
    })
}

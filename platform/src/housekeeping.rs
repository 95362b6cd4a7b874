//! Periodic pruning of the platform tables of a service schema: idempotency replay records
//! [`IDEMPOTENCY_RETENTION_HOURS`] after the first request, idempotency claims abandoned without
//! an outcome once their lease ended that long ago, processed-event ids after
//! [`PROCESSED_EVENTS_RETENTION_DAYS`]; and trimming of the service's own event stream (the one
//! its relay writes): entries older than [`STREAM_RETENTION_DAYS`] that every consumer group has
//! read and acknowledged (the relay trims acknowledged entries of any age when the stream
//! reaches its cap, [`trim_acknowledged`]).
//!
//! The stream keeps entries for less time than consumers remember processed event ids, so a
//! consumer group re-created from the start of the stream (`0`) meets only events it would
//! deduplicate.

use sqlx::{AssertSqlSafe, PgPool};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long an idempotent request can be replayed (and its key is bound); also how long after
/// its lease ended an abandoned `in_progress` claim (its worker died and no retry came) is kept.
pub const IDEMPOTENCY_RETENTION_HOURS: i32 = 24;
/// How long processed event ids are remembered; far longer than any redelivery window.
pub const PROCESSED_EVENTS_RETENTION_DAYS: i32 = 14;
/// How long stream entries are kept at least (shorter than [`PROCESSED_EVENTS_RETENTION_DAYS`]).
pub const STREAM_RETENTION_DAYS: u64 = 7;
const INTERVAL: Duration = Duration::from_secs(600);

/// A stream entry id as (milliseconds, sequence).
fn parse_entry_id(id: &str) -> Option<(u64, u64)> {
    let (millis, sequence) = id.split_once('-').unwrap_or((id, "0"));
    Some((millis.parse().ok()?, sequence.parse().ok()?))
}

/// Removes the entries of `stream` older than `retention` that every consumer group has
/// acknowledged: nothing at or after the oldest entry still pending in a group, nor after the
/// last entry a group has read (a group that has not read an entry yet keeps it). Returns how
/// many entries were removed; a stream that does not exist is not an error.
pub async fn trim_stream(
    redis: &mut redis::aio::MultiplexedConnection,
    stream: &str,
    retention: Duration,
) -> redis::RedisResult<u64> {
    trim(redis, stream, retention, false).await
}

/// Removes every entry of `stream` that every consumer group has acknowledged, whatever its
/// age (what [`trim_stream`] keeps for the retention window); a stream without any group is
/// left alone, since a group created later would still read it. The relay calls this when the
/// stream reaches its cap.
pub async fn trim_acknowledged(
    redis: &mut redis::aio::MultiplexedConnection,
    stream: &str,
) -> redis::RedisResult<u64> {
    trim(redis, stream, Duration::ZERO, true).await
}

async fn trim(
    redis: &mut redis::aio::MultiplexedConnection,
    stream: &str,
    retention: Duration,
    only_with_groups: bool,
) -> redis::RedisResult<u64> {
    use redis::AsyncCommands;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let cutoff = u64::try_from(now.saturating_sub(retention).as_millis()).unwrap_or(u64::MAX);
    let mut floor = (cutoff, 0);
    let groups: redis::streams::StreamInfoGroupsReply = match redis.xinfo_groups(stream).await {
        Ok(groups) => groups,
        Err(error) if error.to_string().contains("no such key") => return Ok(0),
        Err(error) => return Err(error),
    };
    if only_with_groups && groups.groups.is_empty() {
        return Ok(0);
    }
    for group in &groups.groups {
        let mut keep_from = parse_entry_id(&group.last_delivered_id).unwrap_or((0, 0));
        if group.pending > 0 {
            let pending: redis::streams::StreamPendingCountReply =
                redis.xpending_count(stream, &group.name, "-", "+", 1).await?;
            if let Some(oldest) = pending.ids.first().and_then(|entry| parse_entry_id(&entry.id)) {
                keep_from = keep_from.min(oldest);
            }
        }
        floor = floor.min(keep_from);
    }
    let trimmed: u64 = redis::cmd("XTRIM")
        .arg(stream)
        .arg("MINID")
        .arg(format!("{}-{}", floor.0, floor.1))
        .query_async(redis)
        .await?;
    Ok(trimmed)
}

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
    prune_abandoned_claims(pool, schema).await?;
    let processed = format!(
        "DELETE FROM {schema}.processed_events WHERE processed_at < now() - make_interval(days => $1)"
    );
    sqlx::query(AssertSqlSafe(processed))
        .bind(PROCESSED_EVENTS_RETENTION_DAYS)
        .execute(pool)
        .await?;
    Ok(())
}

/// Deletes `in_progress` idempotency claims whose lease ended more than
/// [`IDEMPOTENCY_RETENTION_HOURS`] ago: their worker died or gave up and no retry came to take
/// them over. A claim with a recovery point stood for a half-done operation, so its removal is
/// a warning naming the operation (an operator may want to look); the rest are counted at info.
pub async fn prune_abandoned_claims(pool: &PgPool, schema: &str) -> Result<u64, sqlx::Error> {
    let abandoned = format!(
        "DELETE FROM {schema}.idempotency_keys WHERE state = 'in_progress' \
         AND locked_until < now() - make_interval(hours => $1) \
         RETURNING operation, customer_id, recovery IS NOT NULL AS had_recovery"
    );
    let rows: Vec<(String, uuid::Uuid, bool)> = sqlx::query_as(AssertSqlSafe(abandoned))
        .bind(IDEMPOTENCY_RETENTION_HOURS)
        .fetch_all(pool)
        .await?;
    for (operation, customer_id, _) in rows.iter().filter(|(_, _, had_recovery)| *had_recovery) {
        tracing::warn!(schema, operation, %customer_id, "pruned an abandoned idempotency claim that had saved a recovery point");
    }
    if !rows.is_empty() {
        tracing::info!(schema, count = rows.len(), "pruned abandoned idempotency claims");
    }
    Ok(rows.len() as u64)
}

/// Prunes every ten minutes until `shutdown` fires; also trims `stream` (the service's own)
/// in `redis`, when given.
pub fn spawn(
    pool: PgPool,
    schema: &'static str,
    stream: Option<(redis::Client, String)>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(error) = prune_once(&pool, schema).await {
                tracing::warn!(schema, %error, "housekeeping failed");
            }
            if let Some((client, stream)) = &stream {
                let retention = Duration::from_secs(STREAM_RETENTION_DAYS * 86_400);
                let trimmed = match client.get_multiplexed_async_connection().await {
                    Ok(mut redis) => trim_stream(&mut redis, stream, retention).await,
                    Err(error) => Err(error),
                };
                match trimmed {
                    Ok(0) => {}
                    Ok(count) => tracing::info!(stream, count, "trimmed acknowledged stream entries"),
                    Err(error) => tracing::warn!(stream, %error, "trimming the stream failed"),
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(INTERVAL) => {}
            }
        }
    })
}

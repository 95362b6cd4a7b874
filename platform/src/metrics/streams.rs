//! Stream metrics of a consumer group and an outbox: what a consumer group has not yet received
//! (lag) or acknowledged (pending), the length of its dead-letter streams, and the backlog of a
//! service's outbox — each read when Prometheus scrapes.

use super::{
    ConsumedLabels, GroupLabels, Registration, RejectedLabels, ServiceLabels, StreamLabels, metrics,
    on_scrape,
};
use crate::streams;
use redis::AsyncCommands;
use redis::aio::ConnectionManager;
use redis::streams::StreamInfoGroupsReply;
use sqlx::{AssertSqlSafe, PgPool};
use std::sync::Arc;
use tokio::sync::OnceCell;

/// Counts `count` events of `stream` handled by `group` with `outcome` (`applied`, `retry`,
/// `dead_lettered`).
pub fn consumed(stream: &str, group: &str, outcome: &'static str, count: u64) {
    if count == 0 {
        return;
    }
    metrics()
        .events_consumed
        .get_or_create(&ConsumedLabels {
            stream: stream.to_owned(),
            group: group.to_owned(),
            outcome,
        })
        .inc_by(count);
}

/// Every reason an entry's signature is refused for (`crate::event_signing::Rejection::reason`).
pub const REJECTION_REASONS: [&str; 4] = ["unsigned", "unknown_key", "bad_signature", "wrong_signer"];

/// Starts `group`'s rejection counters of `streams` at zero, so that the first refused entry
/// is an increase an alert sees (a counter born at 1 shows none).
pub fn start_rejection_counters(group: &str, streams: &[String]) {
    for stream in streams {
        for reason in REJECTION_REASONS {
            metrics()
                .events_rejected
                .get_or_create(&RejectedLabels {
                    stream: stream.clone(),
                    group: group.to_owned(),
                    reason,
                })
                .inc_by(0);
        }
    }
}

/// Counts an entry of `stream` that `group` refused for its signature (`reason`).
pub fn rejected(stream: &str, group: &str, reason: &'static str) {
    metrics()
        .events_rejected
        .get_or_create(&RejectedLabels {
            stream: stream.to_owned(),
            group: group.to_owned(),
            reason,
        })
        .inc();
}

/// Reports `group`'s pending entries and lag on each of `streams`, and the length of their
/// dead-letter streams, at each scrape while the registration lives.
pub fn watch_group(redis_url: &str, group: &str, streams: &[String]) -> Option<Registration> {
    let Ok(client) = crate::db::redis_client(redis_url) else {
        return None;
    };
    let connection: Arc<OnceCell<ConnectionManager>> = Arc::new(OnceCell::new());
    let group = group.to_owned();
    let streams = streams.to_vec();
    Some(on_scrape(move || {
        let (client, connection) = (client.clone(), connection.clone());
        let (group, streams) = (group.clone(), streams.clone());
        Box::pin(async move {
            let Ok(redis) = connection
                .get_or_try_init(|| ConnectionManager::new(client))
                .await
            else {
                return;
            };
            let mut redis = redis.clone();
            for stream in &streams {
                let labels = GroupLabels {
                    stream: stream.clone(),
                    group: group.clone(),
                };
                let info: redis::RedisResult<StreamInfoGroupsReply> = redis.xinfo_groups(stream).await;
                if let Some(state) = info
                    .ok()
                    .and_then(|info| info.groups.into_iter().find(|found| found.name == group))
                {
                    let metrics = metrics();
                    metrics
                        .consumer_pending
                        .get_or_create(&labels)
                        .set(i64::try_from(state.pending).unwrap_or(i64::MAX));
                    metrics
                        .consumer_lag
                        .get_or_create(&labels)
                        .set(state.lag.map_or(-1, |lag| i64::try_from(lag).unwrap_or(i64::MAX)));
                }
                let dead = streams::dead_letter_stream(stream);
                if let Ok(length) = redis.xlen::<_, u64>(&dead).await {
                    metrics()
                        .dead_letter_entries
                        .get_or_create(&StreamLabels { stream: dead })
                        .set(i64::try_from(length).unwrap_or(i64::MAX));
                }
            }
        })
    }))
}

/// Reports the size of `pool` and the backlog of the outbox in `schema` at each scrape while
/// the registration lives.
pub fn watch_service(service: &'static str, schema: &'static str, pool: PgPool) -> Registration {
    let backlog = format!(
        "SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at))::float8, 0) \
         FROM {schema}.outbox WHERE published_at IS NULL"
    );
    on_scrape(move || {
        let (pool, backlog) = (pool.clone(), backlog.clone());
        Box::pin(async move {
            super::record_pool(service, &pool);
            let read: Result<(i64, f64), sqlx::Error> =
                sqlx::query_as(AssertSqlSafe(backlog)).fetch_one(&pool).await;
            if let Ok((events, oldest)) = read {
                let labels = ServiceLabels {
                    service: service.to_owned(),
                };
                let metrics = metrics();
                metrics.outbox_backlog.get_or_create(&labels).set(events);
                metrics.outbox_oldest_age.get_or_create(&labels).set(oldest);
            }
        })
    })
}

/// Records events published from `service`'s outbox, each with its commit-to-publish lag.
pub fn published(service: &str, lags_seconds: &[f64]) {
    let labels = ServiceLabels {
        service: service.to_owned(),
    };
    let metrics = metrics();
    metrics
        .outbox_published
        .get_or_create(&labels)
        .inc_by(lags_seconds.len() as u64);
    let histogram = metrics.outbox_publish_lag.get_or_create(&labels);
    for lag in lags_seconds {
        histogram.observe(lag.max(0.0));
    }
}

//! Helpers of the event-guarantee tests that drive `platform`'s relay and consumer directly: a
//! schema with the event tables, a handler that counts what it applies, stream inspection, and
//! a check that a condition keeps holding over a window.

use platform::consumer::{EventHandler, HandlerError, first_delivery};
use prost::Message;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use sqlx::PgPool;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Schema of the event tables these tests create.
pub const SCHEMA: &str = "eventtest";

/// A fresh database with `eventtest.outbox`, `processed_events` and `effects` (one row per
/// applied event id, counting applications).
pub async fn pool_with_event_tables() -> PgPool {
    let url = platform::testing::fresh_database().await;
    let pool = PgPool::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "CREATE SCHEMA eventtest;
         CREATE TABLE eventtest.outbox (id BIGSERIAL PRIMARY KEY, event_id UUID NOT NULL UNIQUE,
           event_type TEXT NOT NULL, envelope BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
           published_at TIMESTAMPTZ);
         CREATE TABLE eventtest.processed_events (consumer TEXT NOT NULL, event_id UUID NOT NULL,
           processed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id));
         CREATE TABLE eventtest.effects (event_id UUID PRIMARY KEY, applied INT NOT NULL);",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool
}

/// An `order.created` envelope with a fresh id, claiming `source`.
pub fn envelope_from(source: &str) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "order.created".into(),
        source: source.into(),
        ..Default::default()
    }
}

/// Applies an event by counting it in `effects`, idempotently; counts invocations and the size
/// of every batch it was handed.
pub struct CountingHandler {
    pub pool: PgPool,
    pub invocations: AtomicUsize,
    pub batches: std::sync::Mutex<Vec<usize>>,
}

impl CountingHandler {
    pub fn new(pool: &PgPool) -> Self {
        Self {
            pool: pool.clone(),
            invocations: AtomicUsize::new(0),
            batches: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// How many distinct events were applied.
    pub async fn applied(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM eventtest.effects")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}

impl EventHandler for CountingHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        self.invocations.fetch_add(1, Ordering::SeqCst);
        let mut tx = self.pool.begin().await?;
        if first_delivery(&mut tx, SCHEMA, "counting", &event.id).await? {
            let id = Uuid::parse_str(&event.id).map_err(|error| HandlerError::Permanent(error.into()))?;
            sqlx::query(
                "INSERT INTO eventtest.effects (event_id, applied) VALUES ($1, 1)
                 ON CONFLICT (event_id) DO UPDATE SET applied = eventtest.effects.applied + 1",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn handle_batch(&self, batch: &[platform::consumer::Consumed]) -> Vec<Result<(), HandlerError>> {
        self.batches.lock().unwrap().push(batch.len());
        let mut outcomes = Vec::with_capacity(batch.len());
        for consumed in batch {
            outcomes.push(self.handle(&consumed.envelope).await);
        }
        outcomes
    }
}

/// A connection to the test Redis.
pub async fn redis_connection() -> MultiplexedConnection {
    redis::Client::open(platform::testing::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Appends `envelope` to `stream` as a relay would; returns the entry id.
pub async fn xadd(redis: &mut MultiplexedConnection, stream: &str, envelope: &EventEnvelope) -> String {
    redis
        .xadd(
            stream,
            "*",
            &[(platform::streams::ENVELOPE_FIELD, envelope.encode_to_vec())],
        )
        .await
        .unwrap()
}

/// Entries of `group` on `stream` delivered and not yet acknowledged (0 before the group exists).
pub async fn pending_count(redis: &mut MultiplexedConnection, stream: &str, group: &str) -> usize {
    let reply: redis::RedisResult<redis::streams::StreamPendingReply> = redis.xpending(stream, group).await;
    match reply {
        Ok(reply) => reply.count(),
        Err(error) if error.to_string().contains("NOGROUP") => 0,
        Err(error) => panic!("XPENDING failed: {error}"),
    }
}

/// Every entry of a dead-letter stream as (original id, group, reason).
pub async fn dead_letters(redis: &mut MultiplexedConnection, dead: &str) -> Vec<(String, String, String)> {
    let range: redis::streams::StreamRangeReply = redis.xrange_all(dead).await.unwrap();
    range
        .ids
        .iter()
        .map(|entry| {
            let field = |name: &str| entry.get::<String>(name).unwrap_or_default();
            (field("original_id"), field("group"), field("reason"))
        })
        .collect()
}

/// Checks `probe` again and again for `window` and panics naming `what` as soon as it fails:
/// "nothing more happens" without a blind sleep.
pub async fn holds_for<F, Fut>(what: &str, window: Duration, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < window {
        assert!(
            probe().await,
            "{what} stopped holding after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

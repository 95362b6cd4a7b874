//! The event guarantees of the platform, exercised against real PostgreSQL and Redis processes:
//! the outbox survives a Redis outage, a consumer that dies between its commit and `XACK`
//! never applies an event twice, and a batch handler settles every entry of a read on its own.

use platform::consumer::{ConsumerSettings, EventHandler, HandlerError, StreamConsumer, first_delivery};
use platform::outbox::{NewEvent, Outbox, OutboxRelay};
use platform::testing::{fresh_database, unique_stream_prefix, wait_for};
use prost::Message;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use redis::AsyncCommands;
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const SCHEMA: &str = "relaytest";

async fn pool_with_event_tables() -> PgPool {
    let url = fresh_database().await;
    let pool = PgPool::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "CREATE SCHEMA relaytest;
         CREATE TABLE relaytest.outbox (id BIGSERIAL PRIMARY KEY, event_id UUID NOT NULL UNIQUE,
           event_type TEXT NOT NULL, envelope BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
           published_at TIMESTAMPTZ);
         CREATE TABLE relaytest.processed_events (consumer TEXT NOT NULL, event_id UUID NOT NULL,
           processed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id));
         CREATE TABLE relaytest.effects (event_id UUID PRIMARY KEY, applied INT NOT NULL);",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool
}

fn status_changed(order: &str) -> NewEvent {
    NewEvent {
        event_type: "order.status_changed",
        customer_id: Uuid::new_v4(),
        subject_id: order.to_owned(),
        data: Data::OrderStatusChanged(proto::orders::OrderStatusChanged {
            order_id: order.to_owned(),
            order_number: "ORD-2026-000001".into(),
            from_status: "invoice_sent".into(),
            to_status: "paid".into(),
            changed_at: "2026-11-22T00:00:00Z".into(),
            reason: "payment.confirmed".into(),
        }),
    }
}

/// A Redis server process of this test, on its own port, killed when dropped.
struct RedisProcess(std::process::Child);

impl RedisProcess {
    fn start(port: u16) -> Self {
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (the README's test command installs it)");
        Self(child)
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn unpublished(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM relaytest.outbox WHERE published_at IS NULL")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn outbox_rows_written_while_redis_is_down_reach_the_stream_once_it_is_back() {
    let pool = pool_with_event_tables().await;
    let port = free_port();
    let redis_url = format!("redis://127.0.0.1:{port}");
    let prefix = unique_stream_prefix();
    let outbox = Outbox::new(SCHEMA, "orders-svc");
    let shutdown = CancellationToken::new();
    let relay = OutboxRelay::new(pool.clone(), outbox, &redis_url, &prefix, "orders");
    let relay = tokio::spawn(relay.run(shutdown.clone()));

    let mut written = Vec::new();
    let mut tx = pool.begin().await.unwrap();
    for n in 0..3 {
        written.push(
            outbox
                .enqueue(&mut tx, status_changed(&format!("order-{n}")))
                .await
                .unwrap(),
        );
    }
    tx.commit().await.unwrap();

    // Redis is down: the relay keeps trying and the rows stay unpublished.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(unpublished(&pool).await, 3);

    let _redis = RedisProcess::start(port);
    let stream = platform::streams::stream_name(&prefix, "orders");
    let client = redis::Client::open(redis_url.as_str()).unwrap();
    let entries: Vec<EventEnvelope> = wait_for("the events on the stream", Duration::from_secs(20), || {
        let client = client.clone();
        let stream = stream.clone();
        async move {
            let mut connection = client.get_multiplexed_async_connection().await.ok()?;
            let range: redis::streams::StreamRangeReply = connection.xrange_all(&stream).await.ok()?;
            let envelopes: Vec<EventEnvelope> = range
                .ids
                .iter()
                .filter_map(|entry| match entry.map.get("envelope") {
                    Some(redis::Value::BulkString(bytes)) => EventEnvelope::decode(bytes.as_slice()).ok(),
                    _ => None,
                })
                .collect();
            (envelopes.len() == 3).then_some(envelopes)
        }
    })
    .await;
    let relayed: Vec<String> = entries.iter().map(|envelope| envelope.id.clone()).collect();
    let expected: Vec<String> = written.iter().map(Uuid::to_string).collect();
    assert_eq!(relayed, expected, "every event arrives once, in commit order");
    assert!(
        entries
            .iter()
            .all(|envelope| envelope.r#type == "order.status_changed" && envelope.source == "orders-svc")
    );
    wait_for("rows marked published", Duration::from_secs(5), || async {
        (unpublished(&pool).await == 0).then_some(())
    })
    .await;

    shutdown.cancel();
    relay.await.unwrap();
}

/// Applies an event by counting it in `effects`, idempotently; counts every invocation.
struct CountingHandler {
    pool: PgPool,
    invocations: AtomicUsize,
}

impl EventHandler for CountingHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        self.invocations.fetch_add(1, Ordering::SeqCst);
        let mut tx = self.pool.begin().await?;
        if first_delivery(&mut tx, SCHEMA, "counting", &event.id).await? {
            let id = Uuid::parse_str(&event.id).map_err(|error| HandlerError::Permanent(error.into()))?;
            sqlx::query(
                "INSERT INTO relaytest.effects (event_id, applied) VALUES ($1, 1)
                 ON CONFLICT (event_id) DO UPDATE SET applied = relaytest.effects.applied + 1",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

async fn pending_count(redis_url: &str, stream: &str, group: &str) -> usize {
    let mut connection = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let reply: redis::streams::StreamPendingReply = connection.xpending(stream, group).await.unwrap();
    reply.count()
}

#[tokio::test]
async fn a_consumer_that_dies_after_its_commit_but_before_xack_does_not_apply_the_event_twice() {
    let pool = pool_with_event_tables().await;
    let redis_url = platform::testing::redis_url();
    let stream = platform::streams::stream_name(&unique_stream_prefix(), "orders");
    let event_id = Uuid::now_v7();
    let envelope = EventEnvelope {
        source: "orders-svc".into(),
        id: event_id.to_string(),
        r#type: "order.status_changed".into(),
        ..Default::default()
    };
    let mut connection = redis::Client::open(redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: String = connection
        .xadd(&stream, "*", &[("envelope", envelope.encode_to_vec())])
        .await
        .unwrap();

    let handler = Arc::new(CountingHandler {
        pool: pool.clone(),
        invocations: AtomicUsize::new(0),
    });
    let mut dying = ConsumerSettings::new("crash-test", vec![stream.clone()]);
    dying.acknowledge = false;
    dying.reclaim_idle = Duration::from_secs(3600);
    let first_life = CancellationToken::new();
    let first = tokio::spawn(StreamConsumer::new(&redis_url, dying, handler.clone()).run(first_life.clone()));
    let applied = || async {
        sqlx::query_scalar::<_, i32>("SELECT applied FROM relaytest.effects WHERE event_id = $1")
            .bind(event_id)
            .fetch_optional(&pool)
            .await
            .unwrap()
    };
    wait_for("the first consumer to commit", Duration::from_secs(10), applied).await;
    first_life.cancel();
    first.await.unwrap();
    assert_eq!(
        pending_count(&redis_url, &stream, "crash-test").await,
        1,
        "the entry is still pending"
    );

    let mut survivor = ConsumerSettings::new("crash-test", vec![stream.clone()]);
    survivor.reclaim_idle = Duration::from_millis(200);
    let second_life = CancellationToken::new();
    let second =
        tokio::spawn(StreamConsumer::new(&redis_url, survivor, handler.clone()).run(second_life.clone()));
    wait_for(
        "the survivor to reclaim and acknowledge",
        Duration::from_secs(10),
        || async { (pending_count(&redis_url, &stream, "crash-test").await == 0).then_some(()) },
    )
    .await;
    second_life.cancel();
    second.await.unwrap();

    assert_eq!(
        handler.invocations.load(Ordering::SeqCst),
        2,
        "the event was delivered twice"
    );
    assert_eq!(applied().await, Some(1), "but applied once");
}

#[tokio::test]
async fn an_undecodable_entry_or_an_event_without_a_uuid_goes_to_the_dead_letter_stream_untouched() {
    let pool = pool_with_event_tables().await;
    let redis_url = platform::testing::redis_url();
    let stream = platform::streams::stream_name(&unique_stream_prefix(), "orders");
    let mut connection = redis::Client::open(redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let bad_id = EventEnvelope {
        source: "orders-svc".into(),
        id: "not-a-uuid".into(),
        r#type: "order.created".into(),
        ..Default::default()
    };
    let _: String = connection
        .xadd(&stream, "*", &[("envelope", bad_id.encode_to_vec())])
        .await
        .unwrap();
    let _: String = connection
        .xadd(&stream, "*", &[("envelope", b"\xff\xff garbage".to_vec())])
        .await
        .unwrap();

    let handler = Arc::new(CountingHandler {
        pool: pool.clone(),
        invocations: AtomicUsize::new(0),
    });
    let settings = ConsumerSettings::new("dead-letter-test", vec![stream.clone()]);
    let token = CancellationToken::new();
    let consumer =
        tokio::spawn(StreamConsumer::new(&redis_url, settings, handler.clone()).run(token.clone()));
    let dead = platform::streams::dead_letter_stream(&stream);
    let client = redis::Client::open(redis_url.as_str()).unwrap();
    wait_for(
        "both entries in the dead-letter stream",
        Duration::from_secs(10),
        || {
            let client = client.clone();
            let dead = dead.clone();
            async move {
                let mut connection = client.get_multiplexed_async_connection().await.ok()?;
                let length: usize = connection.xlen(&dead).await.ok()?;
                (length == 2).then_some(())
            }
        },
    )
    .await;
    wait_for("nothing left pending", Duration::from_secs(10), || async {
        (pending_count(&redis_url, &stream, "dead-letter-test").await == 0).then_some(())
    })
    .await;
    token.cancel();
    consumer.await.unwrap();
    assert_eq!(
        handler.invocations.load(Ordering::SeqCst),
        0,
        "no handler saw an unusable event"
    );
}

/// Applies a whole read in one transaction; `fail.once` events fail the first time (retry),
/// `fail.always` events can never be applied (permanent). Records the size of every batch.
struct BatchHandler {
    pool: PgPool,
    batches: std::sync::Mutex<Vec<usize>>,
    failed_once: std::sync::Mutex<Vec<String>>,
}

impl EventHandler for BatchHandler {
    async fn handle(&self, _event: &EventEnvelope) -> Result<(), HandlerError> {
        unreachable!("the consumer hands whole reads to handle_batch")
    }

    async fn handle_batch(&self, batch: &[platform::consumer::Consumed]) -> Vec<Result<(), HandlerError>> {
        self.batches.lock().unwrap().push(batch.len());
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut tx = self.pool.begin().await.unwrap();
        for consumed in batch {
            let event = &consumed.envelope;
            if event.r#type == "fail.always" {
                outcomes.push(Err(HandlerError::Permanent(anyhow::anyhow!("never applicable"))));
                continue;
            }
            if event.r#type == "fail.once" {
                let mut failed = self.failed_once.lock().unwrap();
                if !failed.contains(&event.id) {
                    failed.push(event.id.clone());
                    outcomes.push(Err(HandlerError::Retry(anyhow::anyhow!("passing failure"))));
                    continue;
                }
            }
            if first_delivery(&mut tx, SCHEMA, "batch", &event.id).await.unwrap() {
                sqlx::query(
                    "INSERT INTO relaytest.effects (event_id, applied) VALUES ($1, 1)
                     ON CONFLICT (event_id) DO UPDATE SET applied = relaytest.effects.applied + 1",
                )
                .bind(Uuid::parse_str(&event.id).unwrap())
                .execute(&mut *tx)
                .await
                .unwrap();
            }
            outcomes.push(Ok(()));
        }
        tx.commit().await.unwrap();
        outcomes
    }
}

#[tokio::test]
async fn a_batch_handler_gets_a_whole_read_and_each_entry_is_acknowledged_retried_or_dead_lettered_on_its_own()
 {
    let pool = pool_with_event_tables().await;
    let redis_url = platform::testing::redis_url();
    let stream = platform::streams::stream_name(&unique_stream_prefix(), "orders");
    let event = |event_type: &str| EventEnvelope {
        source: "orders-svc".into(),
        id: Uuid::now_v7().to_string(),
        r#type: event_type.into(),
        ..Default::default()
    };
    let (first, second, flaky, broken) = (
        event("order.created"),
        event("order.created"),
        event("fail.once"),
        event("fail.always"),
    );
    // Six entries (one event published twice) written at once, before the consumer reads.
    let entries = [&first, &second, &flaky, &first, &broken, &event("order.created")];
    let mut pipeline = redis::pipe();
    pipeline.atomic();
    for entry in entries {
        pipeline
            .xadd(&stream, "*", &[("envelope", entry.encode_to_vec())])
            .ignore();
    }
    let mut connection = redis::Client::open(redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (): () = pipeline.query_async(&mut connection).await.unwrap();
    let (): () = connection
        .xgroup_create(&stream, "batch-test", "0")
        .await
        .unwrap();

    let handler = Arc::new(BatchHandler {
        pool: pool.clone(),
        batches: std::sync::Mutex::new(Vec::new()),
        failed_once: std::sync::Mutex::new(Vec::new()),
    });
    let mut settings = ConsumerSettings::new("batch-test", vec![stream.clone()]);
    settings.reclaim_idle = Duration::from_millis(300);
    let token = CancellationToken::new();
    let consumer =
        tokio::spawn(StreamConsumer::new(&redis_url, settings, handler.clone()).run(token.clone()));
    wait_for("every entry settled", Duration::from_secs(10), || async {
        (pending_count(&redis_url, &stream, "batch-test").await == 0
            && !handler.failed_once.lock().unwrap().is_empty())
        .then_some(())
    })
    .await;
    token.cancel();
    consumer.await.unwrap();

    let batches = handler.batches.lock().unwrap().clone();
    assert_eq!(
        batches[0], 6,
        "the first read reached the handler whole: {batches:?}"
    );
    assert_eq!(
        batches[1..],
        [1],
        "only the entry that failed passingly came back, once: {batches:?}"
    );
    let applied: Vec<(Uuid, i32)> =
        sqlx::query_as("SELECT event_id, applied FROM relaytest.effects ORDER BY event_id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        applied.len(),
        4,
        "first, second, flaky and the last one: {applied:?}"
    );
    assert!(
        applied.iter().all(|(_, count)| *count == 1),
        "each applied once: {applied:?}"
    );
    assert!(!applied.iter().any(|(id, _)| id.to_string() == broken.id));
    let dead: redis::streams::StreamRangeReply = connection
        .xrange_all(platform::streams::dead_letter_stream(&stream))
        .await
        .unwrap();
    assert_eq!(dead.ids.len(), 1, "only the broken event is dead-lettered");
    let reason: String = dead.ids[0].get("reason").unwrap();
    assert_eq!(reason, "never applicable");
}

/// Never applies anything: every event fails passingly.
struct FailingHandler;

impl EventHandler for FailingHandler {
    async fn handle(&self, _event: &EventEnvelope) -> Result<(), HandlerError> {
        Err(HandlerError::Retry(anyhow::anyhow!("always failing")))
    }
}

#[tokio::test]
async fn an_entry_that_exhausts_its_deliveries_is_dead_lettered_once_even_with_several_consumers_reclaiming()
{
    let redis_url = platform::testing::redis_url();
    let stream = platform::streams::stream_name(&unique_stream_prefix(), "orders");
    let envelope = EventEnvelope {
        source: "orders-svc".into(),
        id: Uuid::now_v7().to_string(),
        r#type: "order.created".into(),
        ..Default::default()
    };
    let mut connection = redis::Client::open(redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: String = connection
        .xadd(&stream, "*", &[("envelope", envelope.encode_to_vec())])
        .await
        .unwrap();
    let (): () = connection
        .xgroup_create(&stream, "exhaust-test", "0")
        .await
        .unwrap();

    let token = CancellationToken::new();
    let handler = Arc::new(FailingHandler);
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let mut settings = ConsumerSettings::new("exhaust-test", vec![stream.clone()])
                .with_timing(Duration::from_millis(100), Duration::from_millis(20));
            settings.max_deliveries = 3;
            tokio::spawn(StreamConsumer::new(&redis_url, settings, handler.clone()).run(token.clone()))
        })
        .collect();
    let dead = platform::streams::dead_letter_stream(&stream);
    let client = redis::Client::open(redis_url.as_str()).unwrap();
    wait_for("the entry dead-lettered", Duration::from_secs(20), || {
        let (client, dead, redis_url, stream) =
            (client.clone(), dead.clone(), redis_url.clone(), stream.clone());
        async move {
            let mut connection = client.get_multiplexed_async_connection().await.ok()?;
            let length: usize = connection.xlen(&dead).await.ok()?;
            (length >= 1 && pending_count(&redis_url, &stream, "exhaust-test").await == 0).then_some(())
        }
    })
    .await;
    // Give every consumer a few more reclaim rounds to (wrongly) dead-letter it again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    token.cancel();
    for consumer in consumers {
        consumer.await.unwrap();
    }
    let length: usize = connection.xlen(&dead).await.unwrap();
    assert_eq!(length, 1, "dead-lettered exactly once");
}

#[tokio::test]
async fn trimming_a_stream_removes_only_old_entries_that_every_group_has_acknowledged() {
    let redis_url = platform::testing::redis_url();
    let stream = platform::streams::stream_name(&unique_stream_prefix(), "orders");
    let mut redis = redis::Client::open(redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert_eq!(
        platform::housekeeping::trim_stream(&mut redis, &stream, Duration::ZERO)
            .await
            .unwrap(),
        0,
        "a stream that does not exist is left alone"
    );
    let mut ids = Vec::new();
    for index in 0..5 {
        let id: String = redis.xadd(&stream, "*", &[("n", index)]).await.unwrap();
        ids.push(id);
    }
    // One group read and acknowledged everything; another read three and acknowledged one.
    for group in ["done", "behind"] {
        let (): () = redis.xgroup_create(&stream, group, "0").await.unwrap();
    }
    let all = read_new(&mut redis, &stream, "done", None).await;
    let _: i64 = redis.xack(&stream, "done", &all).await.unwrap();
    let first_three = read_new(&mut redis, &stream, "behind", Some(3)).await;
    let _: i64 = redis.xack(&stream, "behind", &first_three[..1]).await.unwrap();

    let trimmed = platform::housekeeping::trim_stream(&mut redis, &stream, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(trimmed, 0, "entries younger than the retention stay");
    let trimmed = platform::housekeeping::trim_stream(&mut redis, &stream, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(trimmed, 1, "only the entry both groups acknowledged goes");
    let left: redis::streams::StreamRangeReply = redis.xrange_all(&stream).await.unwrap();
    let left: Vec<String> = left.ids.into_iter().map(|entry| entry.id).collect();
    assert_eq!(left, ids[1..], "pending and unread entries are kept");

    // Once the late group catches up, the rest can go.
    let rest = read_new(&mut redis, &stream, "behind", None).await;
    let mut pending = first_three[1..].to_vec();
    pending.extend(rest);
    let _: i64 = redis.xack(&stream, "behind", &pending).await.unwrap();
    let trimmed = platform::housekeeping::trim_stream(&mut redis, &stream, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(trimmed, 3, "everything but the last entry read goes");
    let length: usize = redis.xlen(&stream).await.unwrap();
    assert_eq!(length, 1);
}

/// Reads the entries `group` has not read yet (at most `count`); returns their ids.
async fn read_new(
    redis: &mut redis::aio::MultiplexedConnection,
    stream: &str,
    group: &str,
    count: Option<usize>,
) -> Vec<String> {
    let mut options = redis::streams::StreamReadOptions::default().group(group, "reader");
    if let Some(count) = count {
        options = options.count(count);
    }
    let reply: redis::streams::StreamReadReply =
        redis.xread_options(&[stream], &[">"], &options).await.unwrap();
    reply.keys[0].ids.iter().map(|entry| entry.id.clone()).collect()
}

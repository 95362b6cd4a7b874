//! The consumer delivers at least once without double effects: a consumer that dies between its
//! commit and `XACK` leaves the entry pending, a survivor reclaims it, and the handler's
//! processed-event record keeps the effect single; a batch handler gets a whole read and each
//! entry of it is acknowledged, retried or dead-lettered on its own.

use crate::support::*;
use platform::consumer::{
    Consumed, ConsumerSettings, EventHandler, HandlerError, StreamConsumer, first_delivery,
};
use prost::Message;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::test]
async fn a_consumer_that_dies_after_its_commit_but_before_xack_does_not_apply_the_event_twice() {
    let pool = pool_with_event_tables().await;
    let redis_url = platform::testing::redis_url();
    let stream = orders_stream();
    let event_id = Uuid::now_v7();
    let envelope = EventEnvelope {
        source: "orders-svc".into(),
        id: event_id.to_string(),
        r#type: "order.status_changed".into(),
        ..Default::default()
    };
    let mut connection = redis_connection().await;
    xadd(&mut connection, &stream, &envelope).await;

    let handler = Arc::new(CountingHandler::new(&pool));
    let mut dying = ConsumerSettings::new("crash-test", vec![stream.clone()]);
    dying.acknowledge = false;
    dying.reclaim_idle = Duration::from_secs(3600);
    let first_life = CancellationToken::new();
    let first = tokio::spawn(
        StreamConsumer::new(&redis_url, dying, handler.clone(), EventVerifier::development())
            .run(first_life.clone()),
    );
    let applied = || handler.applications_of(event_id);
    wait_for("the first consumer to commit", Duration::from_secs(10), applied).await;
    first_life.cancel();
    first.await.unwrap();
    assert_eq!(
        pending_count(&mut connection, &stream, "crash-test").await,
        1,
        "the entry is still pending"
    );

    let mut survivor = ConsumerSettings::new("crash-test", vec![stream.clone()]);
    survivor.reclaim_idle = Duration::from_millis(200);
    let second_life = CancellationToken::new();
    let second = tokio::spawn(
        StreamConsumer::new(
            &redis_url,
            survivor,
            handler.clone(),
            EventVerifier::development(),
        )
        .run(second_life.clone()),
    );
    wait_for(
        "the survivor to reclaim and acknowledge",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            (pending_count(&mut redis, &stream, "crash-test").await == 0).then_some(())
        },
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

/// Applies a whole read in one transaction; `fail.once` events fail the first time (retry),
/// `fail.always` events can never be applied (permanent). Records the size of every batch.
struct BatchHandler {
    pool: sqlx::PgPool,
    batches: Mutex<Vec<usize>>,
    failed_once: Mutex<Vec<String>>,
}

impl EventHandler for BatchHandler {
    async fn handle(&self, _event: &EventEnvelope) -> Result<(), HandlerError> {
        unreachable!("the consumer hands whole reads to handle_batch")
    }

    async fn handle_batch(&self, batch: &[Consumed]) -> Vec<Result<(), HandlerError>> {
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
                apply(&mut tx, Uuid::parse_str(&event.id).unwrap()).await.unwrap();
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
    let stream = orders_stream();
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
            .xadd(
                &stream,
                "*",
                &platform::testing::events::signed_fields(&stream, entry.encode_to_vec(), "orders-svc"),
            )
            .ignore();
    }
    let mut connection = redis_connection().await;
    let (): () = pipeline.query_async(&mut connection).await.unwrap();
    let (): () = connection
        .xgroup_create(&stream, "batch-test", "0")
        .await
        .unwrap();

    let handler = Arc::new(BatchHandler {
        pool: pool.clone(),
        batches: Mutex::new(Vec::new()),
        failed_once: Mutex::new(Vec::new()),
    });
    let mut settings = ConsumerSettings::new("batch-test", vec![stream.clone()]);
    settings.reclaim_idle = Duration::from_millis(300);
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(
            &redis_url,
            settings,
            handler.clone(),
            EventVerifier::development(),
        )
        .run(token.clone()),
    );
    wait_for("every entry settled", Duration::from_secs(10), || async {
        let mut redis = redis_connection().await;
        (pending_count(&mut redis, &stream, "batch-test").await == 0
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
        sqlx::query_as("SELECT event_id, applied FROM eventtest.effects ORDER BY event_id")
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
    let dead = dead_letters(&mut connection, &platform::streams::dead_letter_stream(&stream)).await;
    assert_eq!(dead.len(), 1, "only the broken event is dead-lettered");
    assert_eq!(dead[0].reason, "never applicable");
}

//! Dead letters: an entry that can never be applied (undecodable, no event id) goes to the
//! dead-letter stream untouched; one that exhausts its deliveries is dead-lettered exactly once
//! even with several consumers reclaiming; and at a dead-letter stream's cap an unusable entry
//! stays pending, unapplied, until the dead-letter stream has room (a cap never loses an event).

use crate::support::*;
use platform::consumer::{ConsumerSettings, EventHandler, HandlerError, StreamConsumer};
use platform::streams::ENVELOPE_FIELD;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::test]
async fn an_undecodable_entry_or_an_event_without_a_uuid_goes_to_the_dead_letter_stream_untouched() {
    let pool = pool_with_event_tables().await;
    let redis_url = platform::testing::redis_url();
    let stream = orders_stream();
    let mut connection = redis_connection().await;
    let bad_id = EventEnvelope {
        source: "orders-svc".into(),
        id: "not-a-uuid".into(),
        r#type: "order.created".into(),
        ..Default::default()
    };
    xadd(&mut connection, &stream, &bad_id).await;
    // Signed by the stream's owner, so that it is the decoding that refuses it.
    let garbage =
        platform::testing::events::signed_fields(&stream, b"\xff\xff garbage".to_vec(), "orders-svc");
    let _: String = connection.xadd(&stream, "*", &garbage).await.unwrap();

    let handler = Arc::new(CountingHandler::new(&pool));
    let settings = ConsumerSettings::new("dead-letter-test", vec![stream.clone()]);
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
    let dead = platform::streams::dead_letter_stream(&stream);
    wait_for(
        "both entries in the dead-letter stream",
        Duration::from_secs(10),
        || async {
            let mut connection = redis_connection().await;
            let length: usize = connection.xlen(&dead).await.ok()?;
            (length == 2).then_some(())
        },
    )
    .await;
    wait_for("nothing left pending", Duration::from_secs(10), || async {
        let mut connection = redis_connection().await;
        (pending_count(&mut connection, &stream, "dead-letter-test").await == 0).then_some(())
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
    let stream = orders_stream();
    let envelope = EventEnvelope {
        source: "orders-svc".into(),
        id: Uuid::now_v7().to_string(),
        r#type: "order.created".into(),
        ..Default::default()
    };
    let mut connection = redis_connection().await;
    xadd(&mut connection, &stream, &envelope).await;
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
            tokio::spawn(
                StreamConsumer::new(
                    &redis_url,
                    settings,
                    handler.clone(),
                    EventVerifier::development(),
                )
                .run(token.clone()),
            )
        })
        .collect();
    let dead = platform::streams::dead_letter_stream(&stream);
    let dead_count = || async {
        let mut connection = redis_connection().await;
        let length: usize = connection.xlen(&dead).await.unwrap();
        length
    };
    wait_for("the entry dead-lettered", Duration::from_secs(20), || async {
        let mut connection = redis_connection().await;
        (dead_count().await >= 1 && pending_count(&mut connection, &stream, "exhaust-test").await == 0)
            .then_some(())
    })
    .await;
    // Every consumer gets a few more reclaim rounds to (wrongly) dead-letter it again.
    nothing_more_arrives(
        "a second dead letter of the same entry",
        Duration::from_millis(500),
        dead_count,
    )
    .await;
    token.cancel();
    for consumer in consumers {
        consumer.await.unwrap();
    }
    let length: usize = connection.xlen(&dead).await.unwrap();
    assert_eq!(length, 1, "dead-lettered exactly once");
}

#[tokio::test]
async fn an_entry_bound_for_a_full_dead_letter_stream_stays_pending_until_it_has_room() {
    let pool = pool_with_event_tables().await;
    let stream = orders_stream();
    let dead = platform::streams::dead_letter_stream(&stream);
    let mut redis = redis_connection().await;
    for n in 0..2 {
        let _: String = redis.xadd(&dead, "*", &[("earlier", n)]).await.unwrap();
    }
    let undecodable: String = redis
        .xadd(&stream, "*", &[(ENVELOPE_FIELD, b"\xff garbage".to_vec())])
        .await
        .unwrap();

    let handler = Arc::new(CountingHandler::new(&pool));
    let mut settings = ConsumerSettings::new("full-dlq", vec![stream.clone()])
        .with_timing(Duration::from_millis(200), Duration::from_millis(50));
    settings.caps.dead_letter_max_len = 2;
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(
            &platform::testing::redis_url(),
            settings,
            handler.clone(),
            EventVerifier::development(),
        )
        .run(token.clone()),
    );
    wait_for("the entry delivered", Duration::from_secs(10), || async {
        let mut redis = redis_connection().await;
        (pending_count(&mut redis, &stream, "full-dlq").await == 1).then_some(())
    })
    .await;
    // Several reclaim rounds: the entry is neither dropped nor acknowledged, the cap holds.
    holds_for(
        "the entry pending and the dead letters capped",
        Duration::from_secs(1),
        || async {
            let mut redis = redis_connection().await;
            pending_count(&mut redis, &stream, "full-dlq").await == 1
                && dead_letters(&mut redis, &dead).await.len() == 2
        },
    )
    .await;

    // An operator handles the earlier dead letters: the waiting entry moves at the next round.
    let _: i64 = redis.del(&dead).await.unwrap();
    let letters = wait_for("the entry dead-lettered", Duration::from_secs(10), || async {
        let mut redis = redis_connection().await;
        let letters = dead_letters(&mut redis, &dead).await;
        (letters.len() == 1 && pending_count(&mut redis, &stream, "full-dlq").await == 0).then_some(letters)
    })
    .await;
    token.cancel();
    consumer.await.unwrap();
    assert_eq!(letters[0].original_id, undecodable);
    assert_eq!(handler.applied().await, 0);
}

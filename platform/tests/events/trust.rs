//! Events are trusted only from their owner: an entry whose envelope claims a `source` other
//! than the service that owns the stream (or none) is dead-lettered, never applied and never
//! retried. (A forged `payment.confirmed` across the whole mesh is `tests/`'s business flow.)

use crate::support::*;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::test]
async fn an_event_claiming_a_source_that_does_not_own_its_stream_is_dead_lettered_and_never_applied() {
    let pool = pool_with_event_tables().await;
    let stream = orders_stream();
    let mut redis = redis_connection().await;
    let forged = envelope_from("payments-svc");
    let unsigned = envelope_from("");
    let genuine = envelope_from("orders-svc");
    let forged_entry = xadd(&mut redis, &stream, &forged).await;
    let unsigned_entry = xadd(&mut redis, &stream, &unsigned).await;
    xadd(&mut redis, &stream, &genuine).await;

    let handler = Arc::new(CountingHandler::new(&pool));
    let mut settings = ConsumerSettings::new("trust-test", vec![stream.clone()])
        .with_timing(Duration::from_millis(200), Duration::from_millis(50));
    settings.max_deliveries = 2;
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(&platform::testing::redis_url(), settings, handler.clone()).run(token.clone()),
    );
    let dead = platform::streams::dead_letter_stream(&stream);
    let letters = wait_for(
        "both untrusted entries dead-lettered",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            let letters = dead_letters(&mut redis, &dead).await;
            (letters.len() == 2).then_some(letters)
        },
    )
    .await;
    wait_for("the genuine event applied", Duration::from_secs(10), || async {
        (handler.applied().await == 1).then_some(())
    })
    .await;
    // Several reclaim rounds pass: nothing is retried, nothing else is dead-lettered.
    holds_for(
        "nothing pending and two dead letters",
        Duration::from_millis(800),
        || async {
            let mut redis = redis_connection().await;
            pending_count(&mut redis, &stream, "trust-test").await == 0
                && dead_letters(&mut redis, &dead).await.len() == 2
        },
    )
    .await;
    token.cancel();
    consumer.await.unwrap();

    assert_eq!(letters[0].original_id, forged_entry);
    assert_eq!(letters[1].original_id, unsigned_entry);
    assert!(letters.iter().all(|letter| letter.group == "trust-test"));
    assert!(letters[0].reason.contains("\"payments-svc\""), "{:?}", letters[0]);
    assert!(letters[0].reason.contains("orders-svc"), "{:?}", letters[0]);
    assert_eq!(
        handler.invocations.load(Ordering::SeqCst),
        1,
        "the handler saw only the genuine event"
    );
    let applied: Vec<Uuid> = sqlx::query_scalar("SELECT event_id FROM eventtest.effects")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(applied, [Uuid::parse_str(&genuine.id).unwrap()]);
}

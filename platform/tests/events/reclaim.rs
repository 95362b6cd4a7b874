//! Reclaiming reaches every stale pending entry: a consumer that takes over from a dead one
//! pages through the whole pending list in one round, not only its first `batch` entries.

use crate::support::*;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use redis::AsyncCommands;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const GROUP: &str = "page-test";
const ENTRIES: usize = 23;
const PAGE: usize = 5;

#[tokio::test]
async fn one_reclaim_round_settles_every_stale_pending_entry_even_beyond_one_page() {
    let pool = pool_with_event_tables().await;
    let stream = orders_stream();
    let mut redis = redis_connection().await;
    for _ in 0..ENTRIES {
        xadd(&mut redis, &stream, &envelope_from("orders-svc")).await;
    }
    // A consumer read everything and died before acknowledging; its entries look an hour old.
    let (): () = redis.xgroup_create(&stream, GROUP, "0").await.unwrap();
    let options = redis::streams::StreamReadOptions::default().group(GROUP, "dead-consumer");
    let read: redis::streams::StreamReadReply =
        redis.xread_options(&[&stream], &[">"], &options).await.unwrap();
    let ids: Vec<String> = read.keys[0].ids.iter().map(|entry| entry.id.clone()).collect();
    assert_eq!(ids.len(), ENTRIES);
    let _: redis::Value = redis::cmd("XCLAIM")
        .arg(&stream)
        .arg(GROUP)
        .arg("dead-consumer")
        .arg(0)
        .arg(&ids)
        .arg("IDLE")
        .arg(3_600_000)
        .arg("JUSTID")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(pending_count(&mut redis, &stream, GROUP).await, ENTRIES);

    // The survivor reclaims at start and then only every 30 s: within the test's patience only
    // its first round can have settled them, five entries per page.
    let handler = Arc::new(CountingHandler::new(&pool));
    let mut settings = ConsumerSettings::new(GROUP, vec![stream.clone()])
        .with_timing(Duration::from_secs(60), Duration::from_millis(100));
    settings.batch = PAGE;
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
    wait_for(
        "every stale entry applied and acknowledged",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            (handler.applied().await == ENTRIES as i64
                && pending_count(&mut redis, &stream, GROUP).await == 0)
                .then_some(())
        },
    )
    .await;
    token.cancel();
    consumer.await.unwrap();
    let batches = handler.batches.lock().unwrap().clone();
    assert_eq!(batches, [5, 5, 5, 5, 3], "page by page, each page one batch");
}

//! The outbox relay: rows committed while Redis is down reach the stream once it is back, in
//! commit order, once; at a domain stream's cap the relay pauses and the rows wait in the outbox
//! until consumers catch up, so a cap never loses an event.

use crate::support::*;
use platform::outbox::{Outbox, OutboxRelay};
use platform::streams::StreamCaps;
use redis::AsyncCommands;
use std::collections::HashSet;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::test]
async fn outbox_rows_written_while_redis_is_down_reach_the_stream_once_it_is_back() {
    let pool = pool_with_event_tables().await;
    let port = free_port();
    let redis_url = format!("redis://127.0.0.1:{port}");
    let prefix = unique_stream_prefix();
    let outbox = Outbox::new(SCHEMA, "orders-svc");
    let shutdown = CancellationToken::new();
    let relay = OutboxRelay::new(
        pool.clone(),
        outbox,
        &redis_url,
        &prefix,
        "orders",
        Some(EventSigner::development("orders-svc")),
    );
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
    holds_for(
        "every row unpublished while Redis is down",
        Duration::from_millis(800),
        || async { unpublished(&pool, SCHEMA).await == 3 },
    )
    .await;
    assert_eq!(unpublished(&pool, SCHEMA).await, 3);

    let _redis = RedisProcess::start(port);
    let stream = platform::streams::stream_name(&prefix, "orders");
    let client = redis::Client::open(redis_url.as_str()).unwrap();
    let entries = wait_for("the events on the stream", Duration::from_secs(20), || {
        let client = client.clone();
        let stream = stream.clone();
        async move {
            let mut connection = client.get_multiplexed_async_connection().await.ok()?;
            let envelopes = stream_envelopes(&mut connection, &stream).await.ok()?;
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
        (unpublished(&pool, SCHEMA).await == 0).then_some(())
    })
    .await;

    shutdown.cancel();
    relay.await.unwrap();
}

async fn stream_ids(redis: &mut redis::aio::MultiplexedConnection, stream: &str) -> Vec<String> {
    let range: redis::streams::StreamRangeReply = redis.xrange_all(stream).await.unwrap();
    range.ids.into_iter().map(|entry| entry.id).collect()
}

#[tokio::test]
async fn the_relay_pauses_at_the_stream_cap_and_publishes_the_waiting_rows_once_consumers_catch_up() {
    let pool = pool_with_event_tables().await;
    let prefix = unique_stream_prefix();
    let stream = platform::streams::stream_name(&prefix, platform::streams::ORDERS);
    let mut redis = redis_connection().await;
    let (): () = redis.xgroup_create_mkstream(&stream, "slow", "0").await.unwrap();
    let outbox = Outbox::new(SCHEMA, "orders-svc");
    let mut tx = pool.begin().await.unwrap();
    for n in 0..8 {
        outbox.enqueue(&mut tx, order_created(n)).await.unwrap();
    }
    tx.commit().await.unwrap();

    let caps = StreamCaps {
        domain_max_len: 5,
        ..StreamCaps::default()
    };
    let relay = OutboxRelay::new(
        pool.clone(),
        outbox,
        &platform::testing::redis_url(),
        &prefix,
        "orders",
        Some(EventSigner::development("orders-svc")),
    )
    .with_caps(caps);
    let token = CancellationToken::new();
    let relay = tokio::spawn(relay.run(token.clone()));
    // The relay marks rows published after its XADD: wait for both before watching them hold.
    wait_for(
        "the stream filled to its cap with three rows waiting",
        Duration::from_secs(10),
        || async {
            let mut redis = redis_connection().await;
            let full = stream_ids(&mut redis, &stream).await.len() == 5;
            (full && unpublished(&pool, SCHEMA).await == 3).then_some(())
        },
    )
    .await;
    holds_for(
        "the cap holding with three rows waiting",
        Duration::from_secs(1),
        || async {
            let mut redis = redis_connection().await;
            stream_ids(&mut redis, &stream).await.len() == 5 && unpublished(&pool, SCHEMA).await == 3
        },
    )
    .await;

    // The group reads and acknowledges all five: the relay trims them and publishes the rest.
    let options = redis::streams::StreamReadOptions::default().group("slow", "reader");
    let read: redis::streams::StreamReadReply =
        redis.xread_options(&[&stream], &[">"], &options).await.unwrap();
    let first: Vec<String> = read.keys[0].ids.iter().map(|entry| entry.id.clone()).collect();
    let _: i64 = redis.xack(&stream, "slow", &first).await.unwrap();
    wait_for("every row published", Duration::from_secs(10), || async {
        (unpublished(&pool, SCHEMA).await == 0).then_some(())
    })
    .await;
    token.cancel();
    relay.await.unwrap();

    let left = stream_ids(&mut redis, &stream).await;
    assert!(left.len() <= 5, "the cap held: {left:?}");
    let read: redis::streams::StreamReadReply =
        redis.xread_options(&[&stream], &[">"], &options).await.unwrap();
    let mut seen: Vec<String> = first.clone();
    seen.extend(read.keys[0].ids.iter().map(|entry| entry.id.clone()));
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(
        (seen.len(), unique.len()),
        (8, 8),
        "the group got all eight events once"
    );
}

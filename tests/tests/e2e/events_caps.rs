//! Stream caps never lose an event: at a domain stream's cap the relay pauses and the rows wait
//! in the outbox until consumers catch up; at a dead-letter stream's cap unusable entries stay
//! pending, unapplied, until the dead-letter stream has room.

use crate::events_support::*;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::{NewEvent, Outbox, OutboxRelay};
use platform::streams::StreamCaps;
use platform::testing::{unique_stream_prefix, wait_for};
use proto::events::event_envelope::Data;
use redis::AsyncCommands;
use sqlx::PgPool;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

fn order_created(n: usize) -> NewEvent {
    NewEvent {
        event_type: "order.created",
        customer_id: Uuid::new_v4(),
        subject_id: format!("order-{n}"),
        data: Data::OrderCreated(proto::orders::OrderCreated {
            order_id: format!("order-{n}"),
            ..Default::default()
        }),
    }
}

async fn unpublished(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM eventtest.outbox WHERE published_at IS NULL")
        .fetch_one(pool)
        .await
        .unwrap()
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
            (full && unpublished(&pool).await == 3).then_some(())
        },
    )
    .await;
    holds_for(
        "the cap holding with three rows waiting",
        Duration::from_secs(1),
        || async {
            let mut redis = redis_connection().await;
            stream_ids(&mut redis, &stream).await.len() == 5 && unpublished(&pool).await == 3
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
        (unpublished(&pool).await == 0).then_some(())
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

#[tokio::test]
async fn an_entry_bound_for_a_full_dead_letter_stream_stays_pending_until_it_has_room() {
    let pool = pool_with_event_tables().await;
    let stream = platform::streams::stream_name(&unique_stream_prefix(), platform::streams::ORDERS);
    let dead = platform::streams::dead_letter_stream(&stream);
    let mut redis = redis_connection().await;
    for n in 0..2 {
        let _: String = redis.xadd(&dead, "*", &[("earlier", n)]).await.unwrap();
    }
    let undecodable: String = redis
        .xadd(
            &stream,
            "*",
            &[(platform::streams::ENVELOPE_FIELD, b"\xff garbage".to_vec())],
        )
        .await
        .unwrap();

    let handler = Arc::new(CountingHandler::new(&pool));
    let mut settings = ConsumerSettings::new("full-dlq", vec![stream.clone()])
        .with_timing(Duration::from_millis(200), Duration::from_millis(50));
    settings.caps.dead_letter_max_len = 2;
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(&platform::testing::redis_url(), settings, handler.clone()).run(token.clone()),
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
    assert_eq!(letters[0].0, undecodable);
    assert_eq!(handler.applied().await, 0);
}

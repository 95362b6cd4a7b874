//! Trimming: a stream loses only old entries that every consumer group has acknowledged;
//! pending and unread entries are kept however old they are.

use crate::support::*;
use redis::AsyncCommands;
use std::time::Duration;

#[tokio::test]
async fn trimming_a_stream_removes_only_old_entries_that_every_group_has_acknowledged() {
    let stream = orders_stream();
    let mut redis = redis_connection().await;
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
    // With no retention the cut is "now" in milliseconds: let the clock pass the entries'
    // millisecond (the whole setup can run within one, and an entry of that millisecond is not
    // older than now).
    tokio::time::sleep(Duration::from_millis(5)).await;
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

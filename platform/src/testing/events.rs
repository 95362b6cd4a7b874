//! Reading what the event machinery wrote, for tests: a schema's outbox, a stream's entries, a
//! group's pending count and a dead-letter stream.

use crate::event_signing::{EventSigner, KID_FIELD, SIGNATURE_FIELD};
use crate::streams::ENVELOPE_FIELD;
use prost::Message;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use sqlx::{AssertSqlSafe, PgPool};

/// Every event in `schema`'s outbox, oldest first.
pub async fn outbox_events(pool: &PgPool, schema: &str) -> Vec<EventEnvelope> {
    let select = format!("SELECT envelope FROM {schema}.outbox ORDER BY id");
    let rows: Vec<Vec<u8>> = sqlx::query_scalar(AssertSqlSafe(select))
        .fetch_all(pool)
        .await
        .expect("read the outbox");
    rows.iter()
        .map(|bytes| EventEnvelope::decode(bytes.as_slice()).expect("an outbox envelope decodes"))
        .collect()
}

/// The events of `event_type` in `schema`'s outbox, oldest first.
pub async fn outbox_events_of(pool: &PgPool, schema: &str, event_type: &str) -> Vec<EventEnvelope> {
    let mut events = outbox_events(pool, schema).await;
    events.retain(|event| event.r#type == event_type);
    events
}

/// How many rows of `schema`'s outbox the relay has not published yet.
pub async fn unpublished(pool: &PgPool, schema: &str) -> i64 {
    let select = format!("SELECT count(*) FROM {schema}.outbox WHERE published_at IS NULL");
    sqlx::query_scalar(AssertSqlSafe(select))
        .fetch_one(pool)
        .await
        .expect("count unpublished outbox rows")
}

/// A connection to the test Redis ([`super::redis_url`]).
pub async fn redis_connection() -> MultiplexedConnection {
    redis::Client::open(super::redis_url())
        .expect("TEST_REDIS_URL is a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect to TEST_REDIS_URL")
}

/// The fields of a stream entry holding `envelope` (encoded) as the relay of `signer` writes it
/// to `stream`: signed with that service's published development key (`crate::event_signing`).
pub fn signed_fields(stream: &str, envelope: Vec<u8>, signer: &str) -> Vec<(&'static str, Vec<u8>)> {
    let signer = EventSigner::development(signer);
    let signature = signer.sign(stream, &envelope);
    vec![
        (ENVELOPE_FIELD, envelope),
        (KID_FIELD, signer.kid().as_bytes().to_vec()),
        (SIGNATURE_FIELD, signature.to_vec()),
    ]
}

/// Appends `envelope` to `stream` as the stream owner's relay would (signed with that service's
/// development key, which development mode trusts), whatever `source` the envelope claims;
/// returns the entry id.
pub async fn xadd(redis: &mut MultiplexedConnection, stream: &str, envelope: &EventEnvelope) -> String {
    let signer = crate::streams::owner_of_stream(stream).unwrap_or(envelope.source.as_str());
    redis
        .xadd(
            stream,
            "*",
            &signed_fields(stream, envelope.encode_to_vec(), signer),
        )
        .await
        .expect("XADD")
}

/// Appends `envelope` to `stream` unsigned, as anyone who can write to Redis could.
pub async fn xadd_unsigned(
    redis: &mut MultiplexedConnection,
    stream: &str,
    envelope: &EventEnvelope,
) -> String {
    redis
        .xadd(stream, "*", &[(ENVELOPE_FIELD, envelope.encode_to_vec())])
        .await
        .expect("XADD")
}

/// The envelopes on `stream`, oldest first (entries that do not decode are skipped).
pub async fn stream_envelopes(
    redis: &mut MultiplexedConnection,
    stream: &str,
) -> redis::RedisResult<Vec<EventEnvelope>> {
    let range: redis::streams::StreamRangeReply = redis.xrange_all(stream).await?;
    Ok(range
        .ids
        .iter()
        .filter_map(|entry| match entry.map.get(ENVELOPE_FIELD) {
            Some(redis::Value::BulkString(bytes)) => EventEnvelope::decode(bytes.as_slice()).ok(),
            _ => None,
        })
        .collect())
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

/// One entry of a dead-letter stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    /// The id the entry had on its stream.
    pub original_id: String,
    /// The consumer group that gave up on it.
    pub group: String,
    pub reason: String,
}

/// Every entry of a dead-letter stream, oldest first.
pub async fn dead_letters(redis: &mut MultiplexedConnection, dead: &str) -> Vec<DeadLetter> {
    let range: redis::streams::StreamRangeReply = redis.xrange_all(dead).await.expect("XRANGE");
    range
        .ids
        .iter()
        .map(|entry| {
            let field = |name: &str| entry.get::<String>(name).unwrap_or_default();
            DeadLetter {
                original_id: field("original_id"),
                group: field("group"),
                reason: field("reason"),
            }
        })
        .collect()
}

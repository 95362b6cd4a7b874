//! Redis stream consumer with consumer groups, for services that react to other domains' events.
//!
//! Delivery is at least once: an entry is acknowledged (`XACK`) only after the handler's own
//! transaction committed. Handlers make their effect idempotent with [`first_delivery`], which
//! records the event id in the service's `processed_events` table in that same transaction, so
//! a redelivered event changes nothing. Entries left pending by a consumer that died are claimed
//! by a live one after `reclaim_idle`; an entry delivered `max_deliveries` times, or one that
//! cannot be decoded, moves to the dead-letter stream `<stream>:dead` and is acknowledged.
//!
//! Each read (up to `batch` entries of one stream) reaches the handler as one batch
//! ([`EventHandler::handle_batch`]); by default its events are applied one by one, but a handler
//! may apply a whole read in one transaction. Every entry is then settled on its own: applied
//! ones are acknowledged together with one `XACK`, a passing failure leaves only that entry
//! pending, a permanent one dead-letters only that entry.

use crate::streams;
use prost::Message;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use redis::streams::{
    StreamClaimReply, StreamId, StreamPendingCountReply, StreamReadOptions, StreamReadReply,
};
use sqlx::{AssertSqlSafe, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Why a handler did not apply an event.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// A passing failure; the entry stays pending and is retried.
    #[error("retryable: {0}")]
    Retry(#[source] anyhow::Error),
    /// The event can never be applied; it goes to the dead-letter stream.
    #[error("permanent: {0}")]
    Permanent(#[source] anyhow::Error),
}

impl From<sqlx::Error> for HandlerError {
    fn from(error: sqlx::Error) -> Self {
        HandlerError::Retry(error.into())
    }
}

/// Applies events of the streams a consumer reads.
pub trait EventHandler: Send + Sync + 'static {
    /// Applies one event; must be idempotent (see [`first_delivery`]).
    fn handle(
        &self,
        event: &EventEnvelope,
    ) -> impl std::future::Future<Output = Result<(), HandlerError>> + Send;

    /// Applies the events of one read of one stream, in stream order, and returns one outcome
    /// per event (same order, same length). The consumer acknowledges every applied entry with
    /// one `XACK`. The default applies them one by one with [`EventHandler::handle`], each inside
    /// its own span; a handler may override it to apply a whole batch in one transaction (one
    /// commit for many events), as long as each event's effect stays idempotent on its own.
    fn handle_batch(
        &self,
        batch: &[Consumed],
    ) -> impl std::future::Future<Output = Vec<Result<(), HandlerError>>> + Send {
        async move {
            let mut outcomes = Vec::with_capacity(batch.len());
            for consumed in batch {
                let handled = self.handle(&consumed.envelope);
                outcomes.push(tracing::Instrument::instrument(handled, consumed.span.clone()).await);
            }
            outcomes
        }
    }
}

/// One decoded stream entry handed to [`EventHandler::handle_batch`].
#[derive(Debug)]
pub struct Consumed {
    pub envelope: EventEnvelope,
    /// `event.consume`, continuing the trace of the transaction that emitted the event; it
    /// ends when the entry is acknowledged or left pending.
    pub span: tracing::Span,
}

/// Records that `consumer` processed `event_id` inside the handler's transaction; returns false
/// when it had already been processed (the caller then commits nothing else). The consumer
/// dead-letters envelopes whose id is not a UUID before any handler sees them.
pub async fn first_delivery(
    tx: &mut PgConnection,
    schema: &str,
    consumer: &str,
    event_id: &str,
) -> Result<bool, sqlx::Error> {
    let Ok(event_id) = Uuid::parse_str(event_id) else {
        return Ok(true);
    };
    let insert = format!(
        "INSERT INTO {schema}.processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
    );
    let result = sqlx::query(AssertSqlSafe(insert))
        .bind(consumer)
        .bind(event_id)
        .execute(tx)
        .await?;
    Ok(result.rows_affected() == 1)
}

/// Connects to Redis with timeouts suited to blocking stream reads.
pub async fn connect_redis(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let client = crate::db::redis_client(url)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(10)));
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// How a consumer reads.
#[derive(Clone, Debug)]
pub struct ConsumerSettings {
    /// Consumer group (one per subscribing service).
    pub group: String,
    /// This process's name inside the group.
    pub consumer_name: String,
    /// Streams read by the group.
    pub streams: Vec<String>,
    /// How long one XREADGROUP blocks.
    pub block: Duration,
    /// Pending entries idle this long are claimed from their (presumably dead) consumer.
    pub reclaim_idle: Duration,
    /// Deliveries after which an entry is dead-lettered.
    pub max_deliveries: usize,
    /// Entries per read.
    pub batch: usize,
    /// Acknowledge after handling. Only tests turn this off, to act as a consumer that dies
    /// after its transaction committed but before `XACK`.
    pub acknowledge: bool,
}

impl ConsumerSettings {
    /// Defaults for `group` reading `streams`, with a unique consumer name.
    pub fn new(group: &str, streams: Vec<String>) -> Self {
        Self {
            group: group.to_owned(),
            consumer_name: format!("{group}-{}", Uuid::new_v4().simple()),
            streams,
            block: Duration::from_secs(2),
            reclaim_idle: Duration::from_secs(30),
            max_deliveries: 10,
            batch: 64,
            acknowledge: true,
        }
    }

    /// Sets how long pending entries idle before reclaim and how long a read blocks.
    pub fn with_timing(mut self, reclaim_idle: Duration, block: Duration) -> Self {
        self.reclaim_idle = reclaim_idle;
        self.block = block;
        self
    }
}

/// A consumer of one group over one or more streams.
pub struct StreamConsumer<H> {
    redis_url: String,
    settings: ConsumerSettings,
    handler: Arc<H>,
}

impl<H: EventHandler> StreamConsumer<H> {
    pub fn new(redis_url: &str, settings: ConsumerSettings, handler: Arc<H>) -> Self {
        Self {
            redis_url: redis_url.to_owned(),
            settings,
            handler,
        }
    }

    /// Consumes until `shutdown` fires; reconnects to Redis with backoff when it is unreachable.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut backoff = Duration::from_millis(100);
        while !shutdown.is_cancelled() {
            match self.session(&shutdown).await {
                Ok(()) => break,
                Err(error) => {
                    tracing::warn!(group = %self.settings.group, %error, "stream consumer failed, reconnecting");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn session(&self, shutdown: &CancellationToken) -> anyhow::Result<()> {
        let mut redis = connect_redis(&self.redis_url).await?;
        for stream in &self.settings.streams {
            let created: redis::RedisResult<()> = redis
                .xgroup_create_mkstream(stream, &self.settings.group, "0")
                .await;
            if let Err(error) = created
                && !error.to_string().contains("BUSYGROUP")
            {
                return Err(error.into());
            }
        }
        let reclaim_every = (self.settings.reclaim_idle / 2).max(Duration::from_millis(100));
        let mut last_reclaim = Instant::now() - reclaim_every;
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            if last_reclaim.elapsed() >= reclaim_every {
                self.reclaim(&mut redis).await?;
                last_reclaim = Instant::now();
            }
            let block = self.settings.block.min(reclaim_every);
            let options = StreamReadOptions::default()
                .group(&self.settings.group, &self.settings.consumer_name)
                .count(self.settings.batch)
                .block(block.as_millis() as usize);
            let ids = vec![">"; self.settings.streams.len()];
            let read =
                redis.xread_options::<_, _, Option<StreamReadReply>>(&self.settings.streams, &ids, &options);
            let reply = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                reply = read => reply?,
            };
            for key in reply.map(|reply| reply.keys).unwrap_or_default() {
                self.process(&mut redis, &key.key, key.ids).await?;
            }
        }
    }

    /// Claims entries idle longer than `reclaim_idle`, dead-lettering those delivered too often.
    /// Both go through `XCLAIM` first: when several consumers reclaim at once, only the one
    /// whose claim succeeds (the claim resets the idle time) processes or dead-letters an entry.
    async fn reclaim(&self, redis: &mut MultiplexedConnection) -> anyhow::Result<()> {
        let min_idle = self.settings.reclaim_idle.as_millis() as usize;
        for stream in &self.settings.streams {
            let pending: StreamPendingCountReply = redis
                .xpending_count(stream, &self.settings.group, "-", "+", self.settings.batch)
                .await?;
            let idle: Vec<_> = pending
                .ids
                .into_iter()
                .filter(|entry| entry.last_delivered_ms >= min_idle)
                .collect();
            if idle.is_empty() {
                continue;
            }
            let ids: Vec<&str> = idle.iter().map(|entry| entry.id.as_str()).collect();
            let claimed: StreamClaimReply = redis
                .xclaim(
                    stream,
                    &self.settings.group,
                    &self.settings.consumer_name,
                    min_idle,
                    &ids,
                )
                .await?;
            let exhausted = |id: &str| {
                idle.iter()
                    .any(|entry| entry.id == id && entry.times_delivered >= self.settings.max_deliveries)
            };
            let mut live = Vec::with_capacity(claimed.ids.len());
            for entry in claimed.ids {
                if exhausted(&entry.id) {
                    let envelope = envelope_bytes(&entry);
                    self.dead_letter(redis, stream, &entry.id, envelope, "too many deliveries")
                        .await?;
                } else {
                    live.push(entry);
                }
            }
            if !live.is_empty() {
                self.process(redis, stream, live).await?;
            }
        }
        Ok(())
    }

    /// Decodes the entries of one read of `stream`, dead-letters the unusable ones, hands the
    /// rest to the handler as one batch and acknowledges the applied ones with one `XACK`.
    async fn process(
        &self,
        redis: &mut MultiplexedConnection,
        stream: &str,
        entries: Vec<StreamId>,
    ) -> anyhow::Result<()> {
        let mut batch = Vec::with_capacity(entries.len());
        let mut kept: Vec<(String, Vec<u8>)> = Vec::with_capacity(entries.len());
        for entry in entries {
            let Some(bytes) = envelope_bytes(&entry) else {
                self.dead_letter(redis, stream, &entry.id, None, "entry has no envelope")
                    .await?;
                continue;
            };
            let envelope = match EventEnvelope::decode(bytes.as_slice()) {
                Ok(envelope) => envelope,
                Err(error) => {
                    let reason = format!("undecodable envelope: {error}");
                    self.dead_letter(redis, stream, &entry.id, Some(bytes), &reason)
                        .await?;
                    continue;
                }
            };
            if Uuid::parse_str(&envelope.id).is_err() {
                // Deduplication keys on the event id; an envelope without a valid one is unusable.
                self.dead_letter(redis, stream, &entry.id, Some(bytes), "event id is not a UUID")
                    .await?;
                continue;
            }
            let span = tracing::info_span!("event.consume", event.id = %envelope.id, event.type = %envelope.r#type, group = %self.settings.group);
            crate::telemetry::continue_trace(&span, &envelope.traceparent, &envelope.tracestate);
            batch.push(Consumed { envelope, span });
            kept.push((entry.id, bytes));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let mut outcomes = self.handler.handle_batch(&batch).await;
        if outcomes.len() != batch.len() {
            tracing::error!(
                expected = batch.len(),
                got = outcomes.len(),
                "the handler answered a batch with the wrong number of outcomes; the batch will be retried"
            );
            outcomes.clear();
        }
        let mut applied: Vec<&str> = Vec::with_capacity(kept.len());
        for ((consumed, (id, bytes)), outcome) in batch.iter().zip(&kept).zip(outcomes) {
            match outcome {
                Ok(()) => applied.push(id),
                Err(HandlerError::Retry(error)) => {
                    tracing::warn!(parent: &consumed.span, event.id = %consumed.envelope.id, %error, "event handling failed, will retry");
                }
                Err(HandlerError::Permanent(error)) => {
                    let reason = error.to_string();
                    self.dead_letter(redis, stream, id, Some(bytes.clone()), &reason)
                        .await?;
                }
            }
        }
        self.acknowledge(redis, stream, &applied).await
    }

    async fn acknowledge(
        &self,
        redis: &mut MultiplexedConnection,
        stream: &str,
        ids: &[&str],
    ) -> anyhow::Result<()> {
        if self.settings.acknowledge && !ids.is_empty() {
            let _: i64 = redis.xack(stream, &self.settings.group, ids).await?;
        }
        Ok(())
    }

    async fn dead_letter(
        &self,
        redis: &mut MultiplexedConnection,
        stream: &str,
        id: &str,
        envelope: Option<Vec<u8>>,
        reason: &str,
    ) -> anyhow::Result<()> {
        tracing::error!(stream, id, reason, group = %self.settings.group, "event moved to dead letter");
        let dead = streams::dead_letter_stream(stream);
        let mut fields: Vec<(&str, Vec<u8>)> = vec![
            ("original_id", id.as_bytes().to_vec()),
            ("group", self.settings.group.as_bytes().to_vec()),
            ("reason", reason.as_bytes().to_vec()),
        ];
        if let Some(envelope) = envelope {
            fields.push((streams::ENVELOPE_FIELD, envelope));
        }
        let _: String = redis.xadd(&dead, "*", &fields).await?;
        self.acknowledge(redis, stream, &[id]).await
    }
}

fn envelope_bytes(entry: &StreamId) -> Option<Vec<u8>> {
    match entry.map.get(streams::ENVELOPE_FIELD)? {
        redis::Value::BulkString(bytes) => Some(bytes.clone()),
        _ => None,
    }
}

//! Redis stream consumer with consumer groups, for services that react to other domains' events.
//!
//! Delivery is at least once: an entry is acknowledged (`XACK`) only after the handler's own
//! transaction committed. Handlers make their effect idempotent with [`first_delivery`], which
//! records the event id in the service's `processed_events` table in that same transaction, so
//! a redelivered event changes nothing. Entries left pending by a consumer that died are claimed
//! by a live one after `reclaim_idle` (every pending entry, page by page); an entry delivered
//! `max_deliveries` times, one that cannot be decoded, one whose signature is missing or is not
//! a valid signature by the stream owner's key for this stream (`crate::event_signing`, counted
//! in `stream_events_rejected_total`), or one whose `source` is not the service that owns the
//! stream ([`streams::owner_of_stream`]) moves to the dead-letter stream
//! `<stream>:dead` and is acknowledged, never applied. A consumer reads only domain streams with
//! a known owner. While a dead-letter stream is at its cap, entries bound for it stay pending
//! (still unapplied) and are retried at each reclaim (see `settle.rs`).
//!
//! Each read (up to `batch` entries of one stream) reaches the handler as one batch
//! ([`EventHandler::handle_batch`]); by default its events are applied one by one, but a handler
//! may apply a whole read in one transaction. Every entry is then settled on its own: applied
//! ones are acknowledged together with one `XACK`, a passing failure leaves only that entry
//! pending, a permanent one dead-letters only that entry.

use crate::event_signing::{self, EventVerifier};
use crate::streams;
use prost::Message;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamId, StreamReadOptions, StreamReadReply};
use settle::{Letter, envelope_bytes, field_bytes};
use sqlx::{AssertSqlSafe, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

mod settings;
mod settle;

pub use settings::{ConsumerSettings, connect_redis};

/// Longest claimed `source` quoted in logs and dead-letter reasons (it is sender-controlled).
const MAX_QUOTED_SOURCE_CHARS: usize = 64;

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

impl HandlerError {
    /// The event can never be applied, for the reason `why`.
    pub fn permanent(why: impl std::fmt::Display) -> Self {
        HandlerError::Permanent(anyhow::anyhow!("{why}"))
    }
}

/// A store error passes: the entry is retried.
impl From<sqlx::Error> for HandlerError {
    fn from(error: sqlx::Error) -> Self {
        HandlerError::Retry(error.into())
    }
}

/// A use case's refusal: `internal_error` and `service_unavailable` pass (retried); any other
/// code is the event's own fault and will not change on a retry (dead-lettered).
impl From<crate::error::ApiError> for HandlerError {
    fn from(error: crate::error::ApiError) -> Self {
        use crate::error::ErrorCode;
        let cause = anyhow::anyhow!("{}: {}", error.code.as_str(), error.message);
        if matches!(error.code, ErrorCode::Internal | ErrorCode::ServiceUnavailable) {
            HandlerError::Retry(cause)
        } else {
            HandlerError::Permanent(cause)
        }
    }
}

/// The UUID an event names in `field` (`customer id`, `order id`, …); an event whose `field`
/// is not a UUID can never be applied.
pub fn event_uuid(event: &EventEnvelope, field: &str, value: &str) -> Result<Uuid, HandlerError> {
    Uuid::parse_str(value).map_err(|_| {
        HandlerError::permanent(format_args!(
            "{} {} names no valid {field}",
            event.r#type, event.id
        ))
    })
}

/// The customer an event is for ([`EventEnvelope::customer_id`]), by [`event_uuid`].
pub fn event_customer(event: &EventEnvelope) -> Result<Uuid, HandlerError> {
    event_uuid(event, "customer id", &event.customer_id)
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
    /// its own span and acting for the event's customer ([`Consumed::context`]); a handler may
    /// override it to apply a whole batch in one transaction (one commit for many events), as
    /// long as each event's effect stays idempotent on its own (and, if it calls other services
    /// for a customer, runs those calls inside that event's context).
    fn handle_batch(
        &self,
        batch: &[Consumed],
    ) -> impl std::future::Future<Output = Vec<Result<(), HandlerError>>> + Send {
        async move {
            let mut outcomes = Vec::with_capacity(batch.len());
            for consumed in batch {
                // The event's trace context, passed on to what handling it causes (while spans
                // are exported, the span continues it instead).
                // ...and the event itself, as its owner signed it: the calls handling it makes act
                // for the event's customer (`crate::delegation`).
                let handled = crate::telemetry::passed_on(
                    consumed.envelope.traceparent.clone(),
                    consumed.envelope.tracestate.clone(),
                    crate::delegation::acting_for(consumed.context.clone(), self.handle(&consumed.envelope)),
                );
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
    /// The entry as its owner signed it: the customer context of the calls handling it makes
    /// (`crate::delegation::acting_for`; the default `handle_batch` runs `handle` inside it).
    pub context: crate::delegation::CustomerContext,
    /// The `process` span of the entry (`telemetry::semconv::messaging_process`), continuing
    /// the trace of the transaction that emitted the event; it ends when the entry is
    /// acknowledged or left pending.
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

/// A consumer of one group over one or more streams.
pub struct StreamConsumer<H> {
    redis_url: String,
    settings: ConsumerSettings,
    handler: Arc<H>,
    verifier: EventVerifier,
}

impl<H: EventHandler> StreamConsumer<H> {
    /// A consumer applying with `handler` the entries whose signature `verifier` accepts
    /// (`crate::event_signing`); every other entry is dead-lettered unapplied.
    pub fn new(
        redis_url: &str,
        settings: ConsumerSettings,
        handler: Arc<H>,
        verifier: EventVerifier,
    ) -> Self {
        Self {
            redis_url: redis_url.to_owned(),
            settings,
            handler,
            verifier,
        }
    }

    /// Consumes until `shutdown` fires; reconnects to Redis with backoff when it is unreachable.
    pub async fn run(self, shutdown: CancellationToken) {
        // Reported while this consumer runs (dropped with it).
        let _metrics = crate::metrics::streams::watch_group(
            &self.redis_url,
            &self.settings.group,
            &self.settings.streams,
        );
        crate::metrics::streams::start_rejection_counters(&self.settings.group, &self.settings.streams);
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
        // Fail closed: a stream without a known owner has no trusted source.
        if let Some(stream) = self
            .settings
            .streams
            .iter()
            .find(|stream| streams::owner_of_stream(stream).is_none())
        {
            anyhow::bail!("{stream} is not a domain stream with a known owner; refusing to consume it");
        }
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

    /// Decodes the entries of one read of `stream`, dead-letters the unusable ones, hands the
    /// rest to the handler as one batch and acknowledges the applied ones with one `XACK`.
    async fn process(
        &self,
        redis: &mut MultiplexedConnection,
        stream: &str,
        entries: Vec<StreamId>,
    ) -> anyhow::Result<()> {
        let mut batch = Vec::with_capacity(entries.len());
        let mut kept: Vec<(String, Letter)> = Vec::with_capacity(entries.len());
        let destination = streams::destination_of_stream(stream);
        for entry in entries {
            let Some(bytes) = envelope_bytes(&entry) else {
                self.dead_letter(
                    redis,
                    stream,
                    &entry.id,
                    Letter::of(&entry),
                    "entry has no envelope",
                )
                .await?;
                continue;
            };
            let signed = self.verifier.verify(
                stream,
                field_bytes(&entry, event_signing::KID_FIELD),
                field_bytes(&entry, event_signing::SIGNATURE_FIELD),
                &bytes,
            );
            if let Err(rejection) = signed {
                tracing::warn!(
                    stream,
                    entry.id = %entry.id,
                    group = %self.settings.group,
                    reason = rejection.reason(),
                    "event refused: {rejection}; dead-lettering it unapplied"
                );
                crate::metrics::streams::rejected(stream, &self.settings.group, rejection.reason());
                let reason = format!("signature: {rejection}");
                self.dead_letter(redis, stream, &entry.id, Letter::of(&entry), &reason)
                    .await?;
                continue;
            }
            let envelope = match EventEnvelope::decode(bytes.as_slice()) {
                Ok(envelope) => envelope,
                Err(error) => {
                    let reason = format!("undecodable envelope: {error}");
                    self.dead_letter(redis, stream, &entry.id, Letter::of(&entry), &reason)
                        .await?;
                    continue;
                }
            };
            if Uuid::parse_str(&envelope.id).is_err() {
                // Deduplication keys on the event id; an envelope without a valid one is unusable.
                self.dead_letter(
                    redis,
                    stream,
                    &entry.id,
                    Letter::of(&entry),
                    "event id is not a UUID",
                )
                .await?;
                continue;
            }
            if let Some(reason) = untrusted_source(stream, &entry.id, &envelope) {
                self.dead_letter(redis, stream, &entry.id, Letter::of(&entry), &reason)
                    .await?;
                continue;
            }
            let span = crate::telemetry::semconv::messaging_process(
                &destination,
                &envelope.id,
                &envelope.r#type,
                &self.settings.group,
            );
            crate::telemetry::continue_trace(&span, &envelope.traceparent, &envelope.tracestate);
            let context = crate::delegation::CustomerContext::event(
                stream,
                &bytes,
                field_bytes(&entry, event_signing::KID_FIELD).unwrap_or_default(),
                field_bytes(&entry, event_signing::SIGNATURE_FIELD).unwrap_or_default(),
            );
            batch.push(Consumed {
                envelope,
                context,
                span,
            });
            let letter = Letter::of(&entry);
            kept.push((entry.id, letter));
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
        let mut retried = 0;
        for ((consumed, (id, letter)), outcome) in batch.iter().zip(&kept).zip(outcomes) {
            match outcome {
                Ok(()) => applied.push(id),
                Err(HandlerError::Retry(error)) => {
                    retried += 1;
                    consumed.span.record("otel.status_code", "error");
                    tracing::warn!(parent: &consumed.span, event.id = %consumed.envelope.id, %error, "event handling failed, will retry");
                }
                Err(HandlerError::Permanent(error)) => {
                    consumed.span.record("otel.status_code", "error");
                    let reason = error.to_string();
                    self.dead_letter(redis, stream, id, letter.clone(), &reason)
                        .await?;
                }
            }
        }
        let group = &self.settings.group;
        crate::metrics::streams::consumed(stream, group, "retry", retried);
        self.acknowledge(redis, stream, &applied).await?;
        crate::metrics::streams::consumed(stream, group, "applied", applied.len() as u64);
        Ok(())
    }
}

/// Why an envelope read from `stream` is not trusted, when its `source` is not the service that
/// owns the stream; logs a warning naming the stream, the entry and the claimed source.
fn untrusted_source(stream: &str, entry_id: &str, envelope: &EventEnvelope) -> Option<String> {
    let owner = streams::owner_of_stream(stream)?;
    if envelope.source == owner {
        return None;
    }
    let claimed: String = envelope.source.chars().take(MAX_QUOTED_SOURCE_CHARS).collect();
    tracing::warn!(
        stream,
        entry.id = entry_id,
        claimed_source = %claimed,
        owner,
        event.id = %envelope.id,
        event.type = %envelope.r#type,
        "event claims a source that does not own the stream; dead-lettering it unapplied"
    );
    Some(format!(
        "source {claimed:?} does not own the stream (owner {owner})"
    ))
}

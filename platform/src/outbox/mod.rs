//! Transactional outbox and its relay to Redis streams.
//!
//! A use case writes its state change and [`Outbox::enqueue`]s the event in the same transaction,
//! so an event exists exactly when its change committed. The [`OutboxRelay`] moves unpublished
//! rows, oldest first, to the domain's stream with `XADD` and marks them published; rows stay
//! behind while Redis is unreachable and go out once it is back (at least once: a crash between
//! `XADD` and the commit republishes the same event id, which consumers deduplicate). The relay
//! wakes on `pg_notify` (every enqueue notifies at commit) and polls only as a backstop: every
//! 10 s while it listens, every 500 ms without a listening connection or while paused at the
//! cap; several replicas share the work with
//! `FOR UPDATE SKIP LOCKED`, which means events of one stream are ordered per relay batch only.
//!
//! The stream is capped ([`StreamCaps::domain_max_len`]): near its cap the relay first trims
//! the entries every consumer group acknowledged, then publishes only what fits, and at the cap
//! it pauses, leaving the rows in the outbox, until consumers catch up; nothing is dropped. The length is read from the reply of each batch's pipeline (no extra round trip),
//! and from the warning share of the cap on the relay logs a warning at most once a minute.
//! With several replicas the cap is soft by at most one batch per replica.
//!
//! Each service's schema has the table:
//! `outbox(id bigserial, event_id uuid unique, event_type text, envelope bytea,
//! created_at timestamptz, published_at timestamptz)`.

use crate::event_signing::{self, EventSigner};
use crate::streams::{self, StreamCaps};
use prost::Message;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Row};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

mod cap;

/// Version of the data payload schemas carried in envelopes.
pub const SCHEMA_VERSION: u32 = 1;
/// Rows relayed per transaction.
const BATCH_SIZE: i64 = 200;
/// Poll interval without a listening connection, and while the relay is paused at the
/// stream's cap (it waits for consumers, which send no notification).
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Poll interval while the relay listens: every commit that enqueues an event notifies, so
/// this is only a backstop (a notification lost with a connection that died unnoticed). An idle
/// relay then costs one empty look every ten seconds instead of two a second.
const LISTENING_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// How long published rows are kept (for audits and replays), then pruned.
const RETENTION_DAYS: i32 = 7;
/// Least time between two warnings about the stream's length.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// An event about to be written to the outbox.
#[derive(Clone, Debug)]
pub struct NewEvent {
    /// Spec event name, for example `order.created`.
    pub event_type: &'static str,
    /// Owning customer.
    pub customer_id: Uuid,
    /// Id of the resource the event is about.
    pub subject_id: String,
    /// The payload.
    pub data: Data,
}

/// The outbox of one service schema.
#[derive(Clone, Copy, Debug)]
pub struct Outbox {
    schema: &'static str,
    source: &'static str,
}

impl Outbox {
    /// The outbox table of `schema`, stamping envelopes with `source` (the service name, which
    /// must own the stream it is relayed to: see [`streams::owner_of_domain`]).
    pub const fn new(schema: &'static str, source: &'static str) -> Self {
        Self { schema, source }
    }

    /// Notification channel of this outbox.
    fn channel(&self) -> String {
        format!("{}_outbox", self.schema)
    }

    /// Writes an event in the caller's transaction and returns its id. The relay is woken when
    /// the transaction commits.
    pub async fn enqueue(&self, tx: &mut PgConnection, event: NewEvent) -> Result<Uuid, sqlx::Error> {
        let event_id = Uuid::now_v7();
        let event_id_text = event_id.to_string();
        // While spans are exported, the event's creation context is a producer span of the
        // caller's trace, which consumers and webhook attempts continue; otherwise the context
        // the work arrived with is passed on.
        let create = if crate::telemetry::exporting() {
            let destination = crate::streams::destination_name(
                crate::streams::domain_of_source(self.source).unwrap_or(self.schema),
            );
            crate::telemetry::semconv::messaging_create(&destination, &event_id_text)
        } else {
            tracing::Span::none()
        };
        let (mut traceparent, tracestate) = {
            let _entered = create.enter();
            crate::telemetry::current_trace_context()
        };
        if traceparent.is_empty() && crate::telemetry::passing() {
            // Work that arrived with no trace context (a scheduled job) still gives its events
            // one, so that their consumers and webhooks share a trace id.
            traceparent = crate::telemetry::new_traceparent();
        }
        let envelope = EventEnvelope {
            id: event_id_text,
            r#type: event.event_type.to_owned(),
            occurred_at: crate::time::rfc3339(crate::time::now()),
            customer_id: event.customer_id.to_string(),
            source: self.source.to_owned(),
            subject_id: event.subject_id,
            traceparent,
            tracestate,
            schema_version: SCHEMA_VERSION,
            data: Some(event.data),
        };
        let insert = format!(
            "INSERT INTO {}.outbox (event_id, event_type, envelope) VALUES ($1, $2, $3)",
            self.schema
        );
        sqlx::query(AssertSqlSafe(insert))
            .bind(event_id)
            .bind(event.event_type)
            .bind(envelope.encode_to_vec())
            .execute(&mut *tx)
            .instrument(create.clone())
            .await?;
        sqlx::query("SELECT pg_notify($1, '')")
            .bind(self.channel())
            .execute(&mut *tx)
            .instrument(create)
            .await?;
        Ok(event_id)
    }
}

/// Moves outbox rows of one schema to its Redis stream.
pub struct OutboxRelay {
    pool: PgPool,
    outbox: Outbox,
    redis_url: String,
    stream: String,
    caps: StreamCaps,
    /// Signs every entry (`crate::event_signing`); without it nothing is published.
    signer: Option<EventSigner>,
    /// The stream's length after this relay's last write (or check).
    known_length: AtomicU64,
    /// When the relay last warned about the stream's length, and whether it is paused.
    watch: Mutex<CapWatch>,
}

/// The relay's memory of the cap: when it last warned and whether it is paused at the cap.
#[derive(Debug, Default)]
struct CapWatch {
    last_warning: Option<Instant>,
    paused: bool,
}

impl OutboxRelay {
    /// A relay from `outbox` to the stream of `domain` under `stream_prefix`, with the caps of
    /// the environment ([`StreamCaps::from_env`]), signing each entry with `signer` (the
    /// process's token key). Without a signer it publishes nothing: consumers would refuse
    /// unsigned entries, so the rows wait in the outbox and an error is logged.
    pub fn new(
        pool: PgPool,
        outbox: Outbox,
        redis_url: &str,
        stream_prefix: &str,
        domain: &str,
        signer: Option<EventSigner>,
    ) -> Self {
        if streams::owner_of_domain(domain) != Some(outbox.source) {
            tracing::error!(
                source = outbox.source,
                domain,
                "this outbox's source does not own the stream; consumers will dead-letter its events"
            );
        }
        Self {
            pool,
            outbox,
            redis_url: redis_url.to_owned(),
            stream: streams::stream_name(stream_prefix, domain),
            signer,
            caps: StreamCaps::from_env(),
            known_length: AtomicU64::new(0),
            watch: Mutex::new(CapWatch::default()),
        }
    }

    /// Replaces the caps (tests use small ones).
    pub fn with_caps(mut self, caps: StreamCaps) -> Self {
        self.caps = caps;
        self
    }

    /// Relays until `shutdown` fires.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut redis: Option<redis::aio::MultiplexedConnection> = None;
        let mut listener = None;
        let mut backoff = Duration::from_millis(100);
        let mut last_prune = std::time::Instant::now() - Duration::from_secs(3600);
        while !shutdown.is_cancelled() {
            if listener.is_none() {
                listener = self.listen().await;
            }
            if redis.is_none() {
                redis = crate::consumer::connect_redis(&self.redis_url).await.ok();
            }
            let outcome = match redis.as_mut() {
                Some(connection) => self.relay_pending(connection).await,
                None => Err(anyhow::anyhow!("redis unreachable")),
            };
            match outcome {
                Ok(()) => backoff = Duration::from_millis(100),
                Err(error) => {
                    tracing::warn!(stream = %self.stream, %error, "outbox relay failed, retrying");
                    redis = None;
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            }
            if last_prune.elapsed() > Duration::from_secs(600) {
                self.prune().await;
                last_prune = std::time::Instant::now();
            }
            // Sleep until a notification, the poll interval, or shutdown.
            let paused = self.lock_watch().paused;
            let poll = if listener.is_some() && !paused {
                LISTENING_POLL_INTERVAL
            } else {
                POLL_INTERVAL
            };
            let notified = async {
                match listener.as_mut() {
                    Some(listener) => listener.recv().await.map(|_| ()),
                    None => {
                        tokio::time::sleep(POLL_INTERVAL).await;
                        Ok(())
                    }
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                result = tokio::time::timeout(poll, notified) => {
                    if let Ok(Err(error)) = result {
                        tracing::warn!(%error, "outbox listener lost, reconnecting");
                        listener = None;
                    }
                }
            }
        }
    }

    async fn listen(&self) -> Option<sqlx::postgres::PgListener> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool).await.ok()?;
        listener.listen(&self.outbox.channel()).await.ok()?;
        Some(listener)
    }

    /// Publishes every pending row, batch by batch.
    pub async fn relay_pending(&self, redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<()> {
        while self.relay_batch(redis).await? == BATCH_SIZE as usize {}
        Ok(())
    }

    async fn relay_batch(&self, redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<usize> {
        let mut tx = self.pool.begin().await?;
        let select = format!(
            "SELECT id, event_type, envelope, \
             EXTRACT(EPOCH FROM clock_timestamp() - created_at)::float8 AS age \
             FROM {}.outbox WHERE published_at IS NULL \
             ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
            self.outbox.schema
        );
        let rows = sqlx::query(AssertSqlSafe(select))
            .bind(BATCH_SIZE)
            .fetch_all(&mut *tx)
            .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let Some(signer) = &self.signer else {
            anyhow::bail!(
                "{} has no token signing key to sign its events with (TOKEN_SIGNING_KEY); its outbox is not published",
                self.outbox.source
            );
        };
        // Rows beyond the stream's room stay unpublished (locked until this transaction ends)
        // and go out once consumers catch up.
        let room = self.room_for(redis, rows.len() as u64).await?;
        let rows = &rows[..usize::try_from(room).unwrap_or(usize::MAX).min(rows.len())];
        if rows.is_empty() {
            return Ok(0);
        }
        let mut pipeline = redis::pipe();
        let mut ids = Vec::with_capacity(rows.len());
        let mut ages = Vec::with_capacity(rows.len());
        // One `send` span per event, a child of its creation context, when spans are exported
        // (reading the context means decoding the envelope; without an exporter nothing does).
        let mut sends = Vec::new();
        let destination = crate::telemetry::exporting().then(|| streams::destination_of_stream(&self.stream));
        for row in rows {
            let id: i64 = row.try_get("id")?;
            ages.push(row.try_get::<f64, _>("age").unwrap_or_default());
            let event_type: String = row.try_get("event_type")?;
            let envelope: Vec<u8> = row.try_get("envelope")?;
            if let Some(destination) = &destination
                && let Ok(decoded) = EventEnvelope::decode(envelope.as_slice())
            {
                let span = crate::telemetry::semconv::messaging_send(destination, &decoded.id);
                crate::telemetry::continue_trace(&span, &decoded.traceparent, &decoded.tracestate);
                sends.push(span);
            }
            let signature = signer.sign(&self.stream, &envelope);
            pipeline
                .cmd("XADD")
                .arg(&self.stream)
                .arg("*")
                .arg(streams::TYPE_FIELD)
                .arg(event_type)
                .arg(streams::ENVELOPE_FIELD)
                .arg(envelope)
                .arg(event_signing::KID_FIELD)
                .arg(signer.kid())
                .arg(event_signing::SIGNATURE_FIELD)
                .arg(&signature[..])
                .ignore();
            ids.push(id);
        }
        pipeline.cmd("XLEN").arg(&self.stream);
        let sent: anyhow::Result<(u64,)> =
            match tokio::time::timeout(Duration::from_secs(5), pipeline.query_async(redis)).await {
                Ok(answer) => answer.map_err(anyhow::Error::from),
                Err(_) => Err(anyhow::anyhow!("XADD timed out")),
            };
        if sent.is_err() {
            for span in &sends {
                span.record("otel.status_code", "error");
            }
        }
        let (length,) = sent?;
        self.observe_length(length);
        let update = format!(
            "UPDATE {}.outbox SET published_at = now() WHERE id = ANY($1)",
            self.outbox.schema
        );
        sqlx::query(AssertSqlSafe(update))
            .bind(&ids)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        crate::metrics::streams::published(self.outbox.source, &ages);
        tracing::debug!(stream = %self.stream, count = ids.len(), "relayed outbox events");
        Ok(ids.len())
    }

    async fn prune(&self) {
        let delete = format!(
            "DELETE FROM {}.outbox WHERE published_at < now() - make_interval(days => $1)",
            self.outbox.schema
        );
        if let Err(error) = sqlx::query(AssertSqlSafe(delete))
            .bind(RETENTION_DAYS)
            .execute(&self.pool)
            .await
        {
            tracing::warn!(%error, "outbox prune failed");
        }
    }
}

//! How a consumer settles entries it does not simply apply: reclaiming those left pending by a
//! dead consumer (every one of them, page by page), acknowledging, and moving unusable ones to
//! the capped dead-letter stream.

use super::{EventHandler, StreamConsumer};
use crate::event_signing;
use crate::streams;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamClaimReply, StreamId, StreamPendingCountReply};

impl<H: EventHandler> StreamConsumer<H> {
    /// Claims every entry idle longer than `reclaim_idle`, page by page (`batch` entries per
    /// page, `XPENDING … IDLE` from just after the last id of the previous page), processing
    /// each page or dead-lettering those delivered too often. Both go through `XCLAIM` first:
    /// when several consumers reclaim at once, only the one whose claim succeeds (the claim
    /// resets the idle time) processes or dead-letters an entry.
    pub(super) async fn reclaim(&self, redis: &mut MultiplexedConnection) -> anyhow::Result<()> {
        let min_idle = self.settings.reclaim_idle.as_millis() as usize;
        let page_size = self.settings.batch.max(1);
        for stream in &self.settings.streams {
            let mut start = "-".to_owned();
            loop {
                let page: StreamPendingCountReply = redis::cmd("XPENDING")
                    .arg(stream)
                    .arg(&self.settings.group)
                    .arg("IDLE")
                    .arg(min_idle)
                    .arg(&start)
                    .arg("+")
                    .arg(page_size)
                    .query_async(redis)
                    .await?;
                let Some(last) = page.ids.last() else {
                    break;
                };
                // Exclusive start: the next page begins after this one's last entry.
                start = format!("({}", last.id);
                let full = page.ids.len() >= page_size;
                self.reclaim_page(redis, stream, page, min_idle).await?;
                if !full {
                    break;
                }
            }
        }
        Ok(())
    }

    async fn reclaim_page(
        &self,
        redis: &mut MultiplexedConnection,
        stream: &str,
        page: StreamPendingCountReply,
        min_idle: usize,
    ) -> anyhow::Result<()> {
        let idle: Vec<_> = page
            .ids
            .into_iter()
            .filter(|entry| entry.last_delivered_ms >= min_idle)
            .collect();
        if idle.is_empty() {
            return Ok(());
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
                self.dead_letter(
                    redis,
                    stream,
                    &entry.id,
                    Letter::of(&entry),
                    "too many deliveries",
                )
                .await?;
            } else {
                live.push(entry);
            }
        }
        if !live.is_empty() {
            self.process(redis, stream, live).await?;
        }
        Ok(())
    }

    pub(super) async fn acknowledge(
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

    /// Moves entry `id` of `stream` to `<stream>:dead` with its reason and acknowledges it. At
    /// the dead-letter stream's cap nothing moves: the entry stays pending, unapplied, and is
    /// tried again at the next reclaim, so no event is lost while an operator empties the
    /// dead-letter stream. From the warning share of the cap on, every move logs a warning.
    pub(super) async fn dead_letter(
        &self,
        redis: &mut MultiplexedConnection,
        stream: &str,
        id: &str,
        letter: Letter,
        reason: &str,
    ) -> anyhow::Result<()> {
        let dead = streams::dead_letter_stream(stream);
        let caps = self.settings.caps;
        let length: u64 = redis.xlen(&dead).await?;
        if length >= caps.dead_letter_max_len {
            tracing::error!(
                stream,
                id,
                reason,
                group = %self.settings.group,
                dead_letter_stream = %dead,
                length,
                cap = caps.dead_letter_max_len,
                "dead-letter stream at its cap; the entry stays pending, unapplied, until it has room"
            );
            return Ok(());
        }
        tracing::error!(stream, id, reason, group = %self.settings.group, "event moved to dead letter");
        let mut fields: Vec<(&str, Vec<u8>)> = vec![
            ("original_id", id.as_bytes().to_vec()),
            ("group", self.settings.group.as_bytes().to_vec()),
            ("reason", reason.as_bytes().to_vec()),
        ];
        // The envelope with its signature: an entry dead-lettered for a passing cause can be
        // added back to its stream as it was, and still verifies there.
        if let Some(envelope) = letter.envelope {
            fields.push((streams::ENVELOPE_FIELD, envelope));
        }
        if let Some(kid) = letter.kid {
            fields.push((event_signing::KID_FIELD, kid));
        }
        if let Some(signature) = letter.signature {
            fields.push((event_signing::SIGNATURE_FIELD, signature));
        }
        let _: String = redis.xadd(&dead, "*", &fields).await?;
        let length = length + 1;
        if length >= caps.warn_at(caps.dead_letter_max_len) {
            tracing::warn!(
                dead_letter_stream = %dead,
                length,
                cap = caps.dead_letter_max_len,
                percent = length * 100 / caps.dead_letter_max_len,
                "dead-letter stream nearing its cap; handle and remove its entries"
            );
        }
        self.acknowledge(redis, stream, &[id]).await?;
        crate::metrics::streams::consumed(stream, &self.settings.group, "dead_lettered", 1);
        Ok(())
    }
}

/// What a dead letter keeps of its entry: the envelope and its signature, as they were.
#[derive(Clone, Debug, Default)]
pub(super) struct Letter {
    envelope: Option<Vec<u8>>,
    kid: Option<Vec<u8>>,
    signature: Option<Vec<u8>>,
}

impl Letter {
    pub(super) fn of(entry: &StreamId) -> Self {
        Self {
            envelope: envelope_bytes(entry),
            kid: field_bytes(entry, event_signing::KID_FIELD).map(<[u8]>::to_vec),
            signature: field_bytes(entry, event_signing::SIGNATURE_FIELD).map(<[u8]>::to_vec),
        }
    }
}

/// The bytes of an entry's `field`, when it has them.
pub(super) fn field_bytes<'a>(entry: &'a StreamId, field: &str) -> Option<&'a [u8]> {
    match entry.map.get(field)? {
        redis::Value::BulkString(bytes) => Some(bytes.as_slice()),
        _ => None,
    }
}

/// The raw envelope bytes of an entry, when it has them.
pub(super) fn envelope_bytes(entry: &StreamId) -> Option<Vec<u8>> {
    match entry.map.get(streams::ENVELOPE_FIELD)? {
        redis::Value::BulkString(bytes) => Some(bytes.clone()),
        _ => None,
    }
}

//! The relay's side of a domain stream's cap: before a batch, how much of it the stream has
//! room for (trimming acknowledged entries first near the cap); after a batch, the new length
//! and a throttled warning from the warning share of the cap on.

use super::{BATCH_SIZE, CapWatch, OutboxRelay, WARN_EVERY};
use redis::aio::MultiplexedConnection;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl OutboxRelay {
    /// How many of `wanted` entries fit under the cap. The length known from the last batch
    /// answers at no cost while the stream is far from its cap; near it the length is read
    /// again and the entries every group acknowledged are trimmed, whatever their age. Zero
    /// pauses the relay (logged when it starts and once a minute while it lasts).
    pub(super) async fn room_for(
        &self,
        redis: &mut MultiplexedConnection,
        wanted: u64,
    ) -> anyhow::Result<u64> {
        let cap = self.caps.domain_max_len;
        let room = |length: u64| cap.saturating_sub(length);
        if room(self.known_length.load(Ordering::Relaxed)) >= wanted.max(BATCH_SIZE as u64) {
            return Ok(wanted);
        }
        let mut length: u64 = redis::cmd("XLEN").arg(&self.stream).query_async(redis).await?;
        if room(length) < wanted {
            let trimmed = crate::housekeeping::trim_acknowledged(redis, &self.stream).await?;
            if trimmed > 0 {
                tracing::info!(stream = %self.stream, trimmed, cap, "stream near its cap: trimmed acknowledged entries early");
                length = redis::cmd("XLEN").arg(&self.stream).query_async(redis).await?;
            }
        }
        self.known_length.store(length, Ordering::Relaxed);
        let fitting = room(length).min(wanted);
        let mut watch = self.lock_watch();
        if fitting > 0 {
            if watch.paused {
                watch.paused = false;
                tracing::info!(stream = %self.stream, length, cap, "stream below its cap again; relay resumed");
            }
        } else {
            let first = !watch.paused;
            watch.paused = true;
            if first || Self::warning_due(&mut watch) {
                tracing::warn!(
                    stream = %self.stream,
                    length,
                    cap,
                    waiting = wanted,
                    "stream at its cap: relay paused, events wait in the outbox until consumers catch up"
                );
            }
        }
        Ok(fitting)
    }

    /// Records the stream's length after a batch and warns (at most once per [`WARN_EVERY`])
    /// from the warning share of the cap on.
    pub(super) fn observe_length(&self, length: u64) {
        self.known_length.store(length, Ordering::Relaxed);
        let cap = self.caps.domain_max_len;
        if length < self.caps.warn_at(cap) {
            return;
        }
        let mut watch = self.lock_watch();
        if Self::warning_due(&mut watch) {
            tracing::warn!(
                stream = %self.stream,
                length,
                cap,
                percent = length.saturating_mul(100) / cap.max(1),
                "stream nearing its cap; consumers are behind or housekeeping is not trimming"
            );
        }
    }

    pub(super) fn lock_watch(&self) -> std::sync::MutexGuard<'_, CapWatch> {
        self.watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// True (and the clock restarted) when the last warning is older than [`WARN_EVERY`].
    fn warning_due(watch: &mut CapWatch) -> bool {
        let due = watch.last_warning.is_none_or(|last| last.elapsed() >= WARN_EVERY);
        if due {
            watch.last_warning = Some(Instant::now());
        }
        due
    }
}

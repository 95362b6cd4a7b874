//! The dispatcher's loop: keeps a buffer of claimed deliveries (claimed in batches so that claim
//! round trips never limit throughput), starts attempts while capacity allows, records results
//! in batches, and sleeps until notified, until the earliest due time, or for the poll interval.

use super::Dispatcher;
use crate::repo::dispatch::{self, Claimed, RecordedAttempt};
use sqlx::PgPool;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Largest number of attempts recorded in one statement.
const RECORD_BATCH: usize = 512;
/// How long the recorder waits for more results before writing a batch.
const RECORD_LINGER: Duration = Duration::from_millis(5);

impl Dispatcher {
    /// Runs until `shutdown` fires: claims, attempts, records.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let listener = tokio::spawn(listen(
            self.pool.clone(),
            Arc::clone(&self.wake),
            shutdown.clone(),
        ));
        let (results, receiver) = mpsc::channel::<RecordedAttempt>(RECORD_BATCH * 4);
        let recorder = tokio::spawn(Arc::clone(&self).record_loop(receiver, shutdown.clone()));
        let target = self.settings.max_in_flight.max(1);
        let capacity = Arc::new(Semaphore::new(target));
        let mut in_flight = JoinSet::new();
        let mut buffer: VecDeque<Claimed> = VecDeque::with_capacity(target);
        let taken = self
            .handoff_receiver
            .lock()
            .ok()
            .and_then(|mut receiver| receiver.take());
        let Some(mut handoff) = taken else {
            tracing::error!("the dispatcher runs only once per process");
            return;
        };
        // A claim older than this may expire before its attempt is recorded: it is left to
        // fall due again instead of risking two attempts at once.
        let stale_after = self
            .settings
            .lease
            .saturating_sub(self.settings.request_timeout + self.settings.lease / 10);
        // Whether the table may hold due deliveries that are not claimed yet.
        let mut more_due = true;
        while !shutdown.is_cancelled() {
            while in_flight.try_join_next().is_some() {}
            // Take hand-offs while the buffer has room; beyond that the channel fills and the
            // fan-out hands deliveries back to the table, where any replica can claim them.
            while buffer.len() < target * 2 {
                let Ok(delivery) = handoff.try_recv() else { break };
                buffer.push_back(delivery);
            }
            while !buffer.is_empty() {
                let Ok(permit) = Arc::clone(&capacity).try_acquire_owned() else {
                    break;
                };
                let Some(delivery) = buffer.pop_front() else { break };
                if delivery.claimed_at.elapsed() > stale_after {
                    tracing::debug!(delivery.id = %delivery.delivery_id, "claim too old to attempt; left to fall due");
                    continue;
                }
                let dispatcher = Arc::clone(&self);
                let results = results.clone();
                in_flight.spawn(async move {
                    let recorded = dispatcher.attempt(&delivery).await;
                    drop(permit);
                    let _ = results.send(recorded).await;
                });
            }
            // Whether the last claim found nothing due at all (then the next due time is read).
            let mut nothing_due = false;
            if more_due && buffer.len() <= target / 2 {
                let wanted = target - buffer.len();
                match dispatch::claim(&self.pool, wanted as i64, self.settings.lease).await {
                    Ok(claimed) => {
                        more_due = claimed.len() == wanted;
                        nothing_due = claimed.is_empty();
                        let claimed_some = !claimed.is_empty();
                        buffer.extend(claimed);
                        if claimed_some {
                            continue;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "claiming deliveries failed");
                        more_due = false;
                    }
                }
            }
            let idle = buffer.is_empty() && !more_due;
            let wait = match (idle, nothing_due) {
                (false, _) => Duration::MAX,
                (true, true) => self.next_wait().await,
                // Something was claimed just before: look again soon, or when woken.
                (true, false) => self.settings.poll_interval.min(Duration::from_millis(50)),
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.wake.notified() => more_due = true,
                Some(delivery) = handoff.recv(), if buffer.len() < target * 2 => buffer.push_back(delivery),
                Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
                () = tokio::time::sleep(wait), if idle => more_due = true,
            }
        }
        handoff.close();
        while let Ok(delivery) = handoff.try_recv() {
            buffer.push_back(delivery);
        }
        self.drain(in_flight, buffer).await;
        drop(results);
        let _ = recorder.await;
        let _ = listener.await;
    }

    /// Lets attempts in flight finish for the grace period (the rest fall due after their
    /// lease) and hands unstarted claims back at once.
    async fn drain(&self, mut in_flight: JoinSet<()>, buffer: VecDeque<Claimed>) {
        if !buffer.is_empty() {
            let unstarted: Vec<(uuid::Uuid, uuid::Uuid)> = buffer
                .iter()
                .map(|claimed| (claimed.delivery_id, claimed.lease_token))
                .collect();
            if let Err(error) = dispatch::release(&self.pool, &unstarted).await {
                tracing::warn!(%error, "unstarted deliveries not released; they fall due after their lease");
            }
        }
        let drained = tokio::time::timeout(self.settings.shutdown_grace, async {
            while in_flight.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::info!(
                abandoned = in_flight.len(),
                "attempts still in flight at shutdown; they are retried after their lease"
            );
            in_flight.abort_all();
        }
    }

    /// How long to sleep when nothing is due: until the earliest due delivery, at most the
    /// poll interval, at least 5 ms.
    async fn next_wait(&self) -> Duration {
        let poll = self.settings.poll_interval.max(Duration::from_millis(5));
        match dispatch::seconds_until_next_due(&self.pool).await {
            Ok(Some(seconds)) => Duration::from_secs_f64(seconds.clamp(0.005, poll.as_secs_f64())),
            Ok(None) => poll,
            Err(error) => {
                tracing::warn!(%error, "reading the next due time failed");
                poll
            }
        }
    }

    /// Records attempts in batches until the channel closes; retries a failed batch (with
    /// backoff) until it is stored, or until shutdown after a few tries.
    async fn record_loop(
        self: Arc<Self>,
        mut receiver: mpsc::Receiver<RecordedAttempt>,
        shutdown: CancellationToken,
    ) {
        while let Some(first) = receiver.recv().await {
            // Gather what arrives within a short linger: one statement records many attempts.
            let mut batch = vec![first];
            let linger = tokio::time::sleep(RECORD_LINGER);
            tokio::pin!(linger);
            while batch.len() < RECORD_BATCH {
                tokio::select! {
                    next = receiver.recv() => match next {
                        Some(next) => batch.push(next),
                        None => break,
                    },
                    () = &mut linger => break,
                }
            }
            let mut backoff = Duration::from_millis(50);
            let mut failures = 0;
            while let Err(error) = self.record(&batch).await {
                failures += 1;
                tracing::warn!(%error, batch = batch.len(), "recording attempts failed, retrying");
                if shutdown.is_cancelled() && failures >= 3 {
                    tracing::error!(
                        batch = batch.len(),
                        "attempts not recorded; retried after their lease"
                    );
                    break;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Wakes the dispatcher on every notification of the dispatch channel; reconnects on failure
/// (the poll interval covers notifications missed meanwhile).
async fn listen(pool: PgPool, wake: Arc<Notify>, shutdown: CancellationToken) {
    while !shutdown.is_cancelled() {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(error) = listener.listen(crate::repo::events::DISPATCH_CHANNEL).await {
                    tracing::warn!(%error, "LISTEN failed");
                } else {
                    wake.notify_one();
                    loop {
                        tokio::select! {
                            () = shutdown.cancelled() => return,
                            notification = listener.recv() => match notification {
                                Ok(_) => wake.notify_one(),
                                Err(error) => {
                                    tracing::warn!(%error, "dispatch notifications interrupted");
                                    break;
                                }
                            },
                        }
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot listen for dispatch notifications"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

//! The dispatcher: claims due deliveries in batches, attempts them with bounded concurrency and
//! records the attempts in batches.
//!
//! It wakes on `LISTEN webhooks_dispatch` (sent when deliveries are queued), when a recorded
//! batch scheduled retries, at the earliest due time, and at least every poll interval. A claim
//! reserves a delivery for the lease (its `next_attempt_at` moves to the lease's end and it gets
//! a lease token), so replicas never attempt the same delivery at once and a replica that dies
//! mid-attempt leaves deliveries that fall due again when the lease ends: none is lost.

use crate::config::DeliverySettings;
use crate::domain::schedule::{AttemptSignal, decide, parse_retry_after};
use crate::domain::signing::signature_header;
use crate::domain::{AttemptOutcome, Decision, DeliveryStatus};
use crate::keyring::Keyring;
use crate::repo::dispatch::{self, Claimed, RecordedAttempt};
use crate::sender::{Outgoing, Response, Sender};
use secrecy::SecretString;
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Largest number of attempts recorded in one statement.
const RECORD_BATCH: usize = 512;

/// Claims, attempts and records deliveries.
pub struct Dispatcher {
    pool: PgPool,
    sender: Sender,
    keyring: Keyring,
    settings: DeliverySettings,
    wake: Arc<Notify>,
}

impl Dispatcher {
    pub fn new(pool: PgPool, sender: Sender, keyring: Keyring, settings: DeliverySettings) -> Self {
        Self {
            pool,
            sender,
            keyring,
            settings,
            wake: Arc::new(Notify::new()),
        }
    }

    pub fn settings(&self) -> &DeliverySettings {
        &self.settings
    }

    /// Makes one attempt of a claimed delivery (signed, traced) and decides what follows.
    pub async fn attempt(&self, claimed: &Claimed) -> RecordedAttempt {
        let attempt_number = claimed.attempt_count + 1;
        let span = tracing::info_span!(
            "webhook.attempt",
            otel.kind = "client",
            delivery.id = %claimed.delivery_id,
            event.id = %claimed.event_id,
            event.type = %claimed.event_type,
            attempt = attempt_number,
            http.status_code = tracing::field::Empty,
        );
        platform::telemetry::continue_trace(&span, &claimed.traceparent, &claimed.tracestate);
        let response = self.send(claimed).instrument(span.clone()).await;
        if let Some(status) = response.status {
            span.record("http.status_code", status);
        }
        let in_round = usize::try_from(attempt_number - claimed.round_start).unwrap_or(usize::MAX);
        let signal = AttemptSignal {
            status: response.status,
            retry_after: response
                .retry_after
                .as_deref()
                .and_then(|value| parse_retry_after(value, response.attempted_at)),
        };
        let jitter = rand::random_range(-1.0..=1.0);
        let decision = decide(
            &self.settings.retry_schedule,
            signal,
            in_round,
            platform::time::now(),
            jitter,
        );
        let (new_status, next_attempt_at) = match decision {
            Decision::Succeeded => (DeliveryStatus::Succeeded, None),
            Decision::Retry(at) => (DeliveryStatus::Pending, Some(at)),
            Decision::Dead => (DeliveryStatus::Dead, None),
            Decision::Gone => (DeliveryStatus::Abandoned, None),
        };
        RecordedAttempt {
            delivery_id: claimed.delivery_id,
            lease_token: claimed.lease_token,
            endpoint_id: claimed.endpoint_id,
            attempt_number,
            attempted_at: response.attempted_at,
            status_code: response.status.map(i32::from),
            latency_ms: response.latency_ms,
            error: response.error,
            outcome: if decision == Decision::Succeeded {
                AttemptOutcome::Succeeded
            } else {
                AttemptOutcome::Failed
            },
            new_status,
            next_attempt_at,
            gone: decision == Decision::Gone,
        }
    }

    /// Signs and sends, inside the attempt's span (so `traceparent` names it).
    async fn send(&self, claimed: &Claimed) -> Response {
        let (mut traceparent, mut tracestate) = platform::telemetry::current_trace_context();
        if traceparent.is_empty() {
            // No tracer installed: pass the event's own trace context on unchanged.
            traceparent.clone_from(&claimed.traceparent);
            tracestate.clone_from(&claimed.tracestate);
        }
        let context = claimed.endpoint_id.as_bytes();
        let mut secrets: Vec<SecretString> = Vec::with_capacity(2);
        for sealed in std::iter::once(&claimed.secret_sealed).chain(claimed.previous_secret_sealed.as_ref()) {
            match self.keyring.open(sealed, context) {
                Ok(bytes) => secrets.push(String::from_utf8_lossy(&bytes).into_owned().into()),
                Err(error) => {
                    tracing::error!(endpoint.id = %claimed.endpoint_id, %error, "cannot open a signing secret");
                    return Response {
                        attempted_at: platform::time::now(),
                        status: None,
                        latency_ms: 0,
                        error: Some("the signing secret is unavailable".to_owned()),
                        retry_after: None,
                    };
                }
            }
        }
        let references: Vec<&SecretString> = secrets.iter().collect();
        let timestamp = chrono::Utc::now().timestamp();
        let outgoing = Outgoing {
            url: &claimed.url,
            body: &claimed.body,
            event_id: claimed.event_id.to_string(),
            delivery_id: claimed.delivery_id.to_string(),
            event_type: &claimed.event_type,
            signature: signature_header(timestamp, &claimed.body, &references),
            traceparent,
            tracestate,
        };
        self.sender.send(outgoing).await
    }

    /// Records attempts now (test deliveries) and wakes the loop for scheduled retries.
    pub async fn record(&self, batch: &[RecordedAttempt]) -> Result<(), sqlx::Error> {
        dispatch::record(&self.pool, batch).await?;
        self.wake.notify_one();
        Ok(())
    }

    /// Runs until `shutdown` fires: claims, attempts, records.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let listener = tokio::spawn(listen(
            self.pool.clone(),
            Arc::clone(&self.wake),
            shutdown.clone(),
        ));
        let (results, receiver) = mpsc::channel::<RecordedAttempt>(RECORD_BATCH * 4);
        let recorder = tokio::spawn(Arc::clone(&self).record_loop(receiver, shutdown.clone()));
        let capacity = Arc::new(Semaphore::new(self.settings.max_in_flight.max(1)));
        let mut in_flight = JoinSet::new();
        while !shutdown.is_cancelled() {
            while in_flight.try_join_next().is_some() {}
            let free = capacity.available_permits();
            if free == 0 {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = in_flight.join_next() => continue,
                }
            }
            let claimed = match dispatch::claim(&self.pool, free as i64, self.settings.lease).await {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(%error, "claiming deliveries failed");
                    self.pause(self.settings.poll_interval, &shutdown).await;
                    continue;
                }
            };
            let saturated = claimed.len() == free;
            for delivery in claimed {
                let Ok(permit) = Arc::clone(&capacity).acquire_owned().await else {
                    break;
                };
                let dispatcher = Arc::clone(&self);
                let results = results.clone();
                in_flight.spawn(async move {
                    let recorded = dispatcher.attempt(&delivery).await;
                    drop(permit);
                    let _ = results.send(recorded).await;
                });
            }
            if saturated {
                continue;
            }
            let wait = self.next_wait().await;
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
        // Let attempts in flight finish for the grace period; the rest fall due after their lease.
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
        drop(results);
        let _ = recorder.await;
        let _ = listener.await;
    }

    /// How long to sleep when nothing was due: until the earliest due delivery, at most the
    /// poll interval, at least 5 ms.
    async fn next_wait(&self) -> Duration {
        let poll = self.settings.poll_interval;
        match dispatch::seconds_until_next_due(&self.pool).await {
            Ok(Some(seconds)) => Duration::from_secs_f64(seconds.clamp(0.005, poll.as_secs_f64().max(0.005))),
            Ok(None) => poll,
            Err(error) => {
                tracing::warn!(%error, "reading the next due time failed");
                poll
            }
        }
    }

    async fn pause(&self, wait: Duration, shutdown: &CancellationToken) {
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = tokio::time::sleep(wait) => {}
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
            let mut batch = vec![first];
            while batch.len() < RECORD_BATCH {
                match receiver.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
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

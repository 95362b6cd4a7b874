//! The dispatcher: attempts deliveries with bounded concurrency and records the attempts in
//! batches. Fresh fan-out deliveries arrive already claimed through [`Dispatcher::hand_off`];
//! everything else (retries, redeliveries, replays, claims of a dead replica) is claimed from
//! the table in batches (see `worker.rs`).
//!
//! A claim reserves a delivery for the lease (its `next_attempt_at` moves to the lease's end and
//! it gets a lease token), so replicas never attempt the same delivery at once and a replica
//! that dies mid-attempt leaves deliveries that fall due again when the lease ends: none is
//! lost.

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
use tokio::sync::{Notify, mpsc};
use tracing::Instrument;

/// How long the fan-out waits for room in a busy dispatcher before handing deliveries back to
/// the table.
pub const HAND_OFF_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

/// Claims, attempts and records deliveries.
pub struct Dispatcher {
    pool: PgPool,
    sender: Sender,
    keyring: Keyring,
    settings: DeliverySettings,
    wake: Arc<Notify>,
    /// Deliveries claimed by the fan-out of this process, handed over without a claim.
    handoff: mpsc::Sender<Claimed>,
    handoff_receiver: std::sync::Mutex<Option<mpsc::Receiver<Claimed>>>,
}

impl Dispatcher {
    pub fn new(pool: PgPool, sender: Sender, keyring: Keyring, settings: DeliverySettings) -> Self {
        let (handoff, receiver) = mpsc::channel(settings.max_in_flight.max(1) * 8);
        Self {
            pool,
            sender,
            keyring,
            settings,
            wake: Arc::new(Notify::new()),
            handoff,
            handoff_receiver: std::sync::Mutex::new(Some(receiver)),
        }
    }

    /// Takes deliveries that the fan-out created already claimed. When the dispatcher is busy
    /// the caller waits up to [`HAND_OFF_PATIENCE`] for room (back-pressure that spares the
    /// round trips of handing deliveries back and claiming them again); those that still do
    /// not fit, or arrive while the dispatcher is not running, are handed back to the table,
    /// due now.
    pub async fn hand_off(&self, claimed: Vec<Claimed>) {
        let deadline = tokio::time::Instant::now() + HAND_OFF_PATIENCE;
        let mut refused: Vec<(uuid::Uuid, uuid::Uuid)> = Vec::new();
        for delivery in claimed {
            // Past the deadline the wait is zero: a delivery is still taken if there is room.
            let patience = deadline.saturating_duration_since(tokio::time::Instant::now());
            if let Err(error) = self.handoff.send_timeout(delivery, patience).await {
                let delivery = error.into_inner();
                refused.push((delivery.delivery_id, delivery.lease_token));
            }
        }
        if refused.is_empty() {
            return;
        }
        match dispatch::release(&self.pool, &refused).await {
            Ok(()) => self.wake.notify_one(),
            Err(error) => {
                tracing::warn!(%error, count = refused.len(), "deliveries not released; they fall due after their lease")
            }
        }
    }

    pub fn settings(&self) -> &DeliverySettings {
        &self.settings
    }

    /// Makes one attempt of a claimed delivery (signed, traced) and decides what follows.
    pub async fn attempt(&self, claimed: &Claimed) -> RecordedAttempt {
        let attempt_number = claimed.attempt_count + 1;
        // An HTTP client span per the conventions (name `POST`); the URL is the customer's
        // endpoint without its query, which may hold a token.
        let (server_address, server_port) = url_parts(&claimed.url);
        let span = tracing::info_span!(
            "webhook.attempt",
            otel.name = "POST",
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            http.request.method = "POST",
            url.full = %url_without_query(&claimed.url),
            server.address = %server_address,
            server.port = server_port,
            http.request.resend_count = attempt_number - 1,
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            lab.webhook.delivery.id = %claimed.delivery_id,
            lab.event.id = %claimed.event_id,
            lab.event.type = %claimed.event_type,
        );
        platform::telemetry::continue_trace(&span, &claimed.traceparent, &claimed.tracestate);
        let response = self.send(claimed).instrument(span.clone()).await;
        match response.status {
            Some(status) => {
                span.record("http.response.status_code", status);
                if status >= 400 {
                    span.record("otel.status_code", "error");
                    span.record("error.type", status);
                }
            }
            None => {
                span.record("otel.status_code", "error");
                span.record("error.type", "no_response");
            }
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
        record_metrics(decision, response.latency_ms);
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
}

/// Counts the attempt in `webhook_deliveries_total` and `webhook_delivery_duration_seconds` by
/// outcome: `delivered`, `failed` (another attempt follows), `exhausted` (the schedule ended) or
/// `gone` (the endpoint answered 410 and was disabled).
fn record_metrics(decision: Decision, latency_ms: i64) {
    let outcome = platform::metrics::DeliveryLabels {
        outcome: match decision {
            Decision::Succeeded => "delivered",
            Decision::Retry(_) => "failed",
            Decision::Dead => "exhausted",
            Decision::Gone => "gone",
        },
    };
    let metrics = platform::metrics::metrics();
    metrics.webhook_deliveries.get_or_create(&outcome).inc();
    metrics
        .webhook_delivery_duration
        .get_or_create(&outcome)
        .observe(latency_ms.max(0) as f64 / 1000.0);
}

mod worker;

/// The host and port of an endpoint URL, for the attempt span (`server.address`,
/// `server.port`; 443 when the URL names none).
fn url_parts(url: &str) -> (String, u16) {
    match reqwest::Url::parse(url) {
        Ok(parsed) => (
            parsed.host_str().unwrap_or_default().to_owned(),
            parsed.port_or_known_default().unwrap_or(443),
        ),
        Err(_) => (String::new(), 443),
    }
}

/// An endpoint URL without its query and fragment (they may carry a customer's token).
fn url_without_query(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => String::new(),
    }
}

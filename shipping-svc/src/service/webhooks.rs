//! Tracker webhooks of the external carrier (EasyPost). The sequence: verify the signature over
//! the timestamp, path and exact body, then the timestamp's tolerance (refused: 401, nothing
//! read) → read the event (its id is required) → one transaction: claim the event id
//! (`shipping.carrier_webhook_events`, `ON CONFLICT DO NOTHING`) and, only when the claim is
//! new, record its scans ([`super::tracking::apply_scan`]) with their outbox events → commit.
//! A replay or redelivery of a claimed id, even concurrent with the first delivery (its insert
//! waits for the first transaction), answers success with nothing recorded.
//! Claimed ids are pruned after [`EVENT_ID_RETENTION`].

use super::ShippingService;
use super::tracking::apply_scan;
use crate::carrier::easypost::{self, WebhookDelivery};
use crate::repo;
use crate::repo::webhook_events::WebhookEventClaim;
use platform::error::{ApiError, ErrorCode};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The carrier name under which EasyPost's event ids are claimed.
const EASYPOST: &str = "easypost";
/// How long a claimed event id is kept. It must outlast twice the timestamp tolerance (a
/// delivery accepted at one edge of the window replays until the other); it is kept far longer
/// (the platform's processed-event retention) so that a late redelivery of the same event is
/// recognized too, although its scans would be deduplicated anyway.
pub const EVENT_ID_RETENTION: Duration =
    Duration::from_secs(platform::housekeeping::PROCESSED_EVENTS_RETENTION_DAYS as u64 * 86_400);
/// How often claimed ids past the retention are deleted.
const PRUNE_INTERVAL: Duration = Duration::from_secs(600);

/// What a webhook delivery did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WebhookOutcome {
    /// At least one scan was new.
    pub recorded: bool,
    /// The event id was processed before (a replay or redelivery): nothing was done.
    pub duplicate: bool,
}

impl ShippingService {
    /// Takes a tracker webhook of the external carrier (the module's sequence). A forged,
    /// unsigned, edited or stale delivery is refused as unauthenticated and changes nothing.
    pub async fn receive_carrier_webhook(
        &self,
        delivery: &WebhookDelivery<'_>,
    ) -> Result<WebhookOutcome, ApiError> {
        let Some(adapter) = self.carrier.easypost() else {
            return Err(ApiError::new(
                ErrorCode::NotFound,
                "no external carrier is configured",
            ));
        };
        let now = platform::time::now();
        let signed_at = adapter.verify_webhook(delivery, now).map_err(|refusal| {
            tracing::warn!(%refusal, "a carrier webhook was refused");
            ApiError::new(ErrorCode::Unauthenticated, refusal.to_string())
        })?;
        let event = easypost::read_event(delivery.body).map_err(|error| {
            ApiError::new(
                ErrorCode::InvalidBody,
                format!("unreadable webhook body: {error}"),
            )
        })?;
        let mut tx = self.pool.begin().await?;
        let claim = WebhookEventClaim {
            carrier: EASYPOST,
            event_id: &event.id,
            description: &event.description,
            signed_at,
            received_at: now,
        };
        if !repo::webhook_events::claim(&mut tx, &claim).await? {
            tracing::info!(event.id = %event.id, "a carrier webhook event processed before changed nothing");
            return Ok(WebhookOutcome {
                recorded: false,
                duplicate: true,
            });
        }
        let mut recorded = false;
        for scan in &event.scans {
            match apply_scan(&mut tx, scan).await? {
                Some((_, new)) => recorded |= new,
                None => {
                    tracing::info!(tracking = %scan.tracking_number, "a webhook scan of an unknown shipment was skipped");
                }
            }
        }
        tx.commit().await?;
        Ok(WebhookOutcome {
            recorded,
            duplicate: false,
        })
    }

    /// Deletes the claimed webhook event ids older than [`EVENT_ID_RETENTION`]; returns how many.
    pub async fn prune_webhook_events(&self) -> Result<u64, ApiError> {
        let retention = chrono::Duration::from_std(EVENT_ID_RETENTION)
            .map_err(|error| ApiError::internal(format!("event id retention: {error}")))?;
        Ok(repo::webhook_events::prune(&self.pool, platform::time::now() - retention).await?)
    }

    /// Prunes claimed webhook event ids every ten minutes until `shutdown` fires.
    pub fn spawn_webhook_event_pruning(&self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let service = self.clone();
        tokio::spawn(async move {
            loop {
                match service.prune_webhook_events().await {
                    Ok(0) => {}
                    Ok(count) => tracing::info!(count, "pruned claimed carrier webhook event ids"),
                    Err(error) => tracing::warn!(%error, "pruning carrier webhook event ids failed"),
                }
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(PRUNE_INTERVAL) => {}
                }
            }
        })
    }
}

//! Label PDFs in the blob store (`SHIPPING_BLOB_STORE`, platform::blobs): kept under
//! `labels/<shipment id>/<sha256>.pdf` before the purchase commits, read back checked against the
//! SHA-256 on the row. Labels bought before the store existed are rows with the PDF inline
//! (`shipping.labels.pdf`): a reader moves such a label into the store as it reads it, and a
//! worker started with the service moves the rest, a batch at a time.

use super::ShippingService;
use crate::repo;
use crate::repo::shipments::LabelFile;
use bytes::Bytes;
use platform::blobs::BlobError;
use platform::error::{ApiError, ErrorCode};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Labels moved per batch by the worker.
const MOVE_BATCH: i64 = 50;
/// How long the worker waits after a batch failed before it tries again.
const MOVE_RETRY: Duration = Duration::from_secs(30);

/// The blob key of a label PDF.
pub fn label_key(shipment_id: Uuid, sha256: &str) -> String {
    format!("labels/{shipment_id}/{sha256}.pdf")
}

fn store_error(error: BlobError) -> ApiError {
    tracing::error!(%error, "blob store (labels)");
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the label store is unavailable; retry later",
    )
}

impl ShippingService {
    /// Keeps a label PDF in the store (before the row naming it commits): its key.
    pub(super) async fn keep_label(
        &self,
        shipment_id: Uuid,
        pdf: &[u8],
        sha256: &str,
    ) -> Result<String, ApiError> {
        let key = label_key(shipment_id, sha256);
        self.files
            .put(&key, Bytes::copy_from_slice(pdf))
            .await
            .map_err(store_error)?;
        Ok(key)
    }

    /// The PDF of a shipment's label, `None` when it has none; a kept file that does not match
    /// its recorded SHA-256 is refused, never served.
    pub(super) async fn label_pdf(&self, shipment_id: Uuid) -> Result<Option<Vec<u8>>, ApiError> {
        let file = {
            let mut conn = self.pool.acquire().await?;
            repo::shipments::label_file(&mut conn, shipment_id).await?
        };
        match file {
            None => Ok(None),
            Some(LabelFile::Kept { key, sha256 }) => {
                let bytes = self.files.get(&key).await.map_err(store_error)?;
                if platform::production::sha256_hex(&bytes) != sha256 {
                    tracing::error!(shipment.id = %shipment_id, key, "a kept label does not match its SHA-256");
                    return Err(ApiError::internal(
                        "the kept label does not match its recorded hash",
                    ));
                }
                Ok(Some(bytes.to_vec()))
            }
            Some(LabelFile::Inline { pdf, sha256 }) => {
                // Bought before labels were kept in the store: moved now, served either way.
                if let Err(error) = self.move_label(shipment_id, &pdf, &sha256).await {
                    tracing::warn!(shipment.id = %shipment_id, %error, "moving an inline label to the store failed");
                }
                Ok(Some(pdf))
            }
        }
    }

    /// Moves one inline label into the store: put, then the row names the key and drops its copy
    /// (a row already moved by another replica is left as it is).
    async fn move_label(&self, shipment_id: Uuid, pdf: &[u8], sha256: &str) -> Result<(), ApiError> {
        let key = self.keep_label(shipment_id, pdf, sha256).await?;
        let mut conn = self.pool.acquire().await?;
        repo::shipments::mark_label_kept(&mut conn, shipment_id, &key).await?;
        Ok(())
    }

    /// Moves every inline label into the store, a batch at a time; the number moved.
    pub async fn move_inline_labels(&self) -> Result<u64, ApiError> {
        let mut moved = 0;
        loop {
            let batch = {
                let mut conn = self.pool.acquire().await?;
                repo::shipments::inline_labels(&mut conn, MOVE_BATCH).await?
            };
            if batch.is_empty() {
                return Ok(moved);
            }
            for (shipment_id, pdf, sha256) in batch {
                self.move_label(shipment_id, &pdf, &sha256).await?;
                moved += 1;
            }
        }
    }

    /// The worker that moves the labels bought before the store existed, once at start (and
    /// again after a failure), until none is left or `shutdown` fires.
    pub fn spawn_label_move(&self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let service = self.clone();
        tokio::spawn(async move {
            loop {
                let outcome = tokio::select! {
                    () = shutdown.cancelled() => return,
                    outcome = service.move_inline_labels() => outcome,
                };
                match outcome {
                    Ok(0) => return,
                    Ok(count) => {
                        tracing::info!(count, "moved labels from the database to the label store");
                        return;
                    }
                    Err(error) => tracing::warn!(%error, "moving labels to the label store failed; retrying"),
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(MOVE_RETRY) => {}
                }
            }
        })
    }
}

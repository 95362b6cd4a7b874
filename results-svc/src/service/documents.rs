//! The COA document: signed, expiring download links for the customer's published COAs, and the
//! rendering behind a link whose signature and expiry check out.

use super::ResultsService;
use crate::document::{self, DOWNLOAD_LIFETIME_SECONDS};
use crate::domain::coa::Coa;
use crate::repo;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use platform::blobs::BlobError;
use platform::error::{ApiError, ErrorCode};
use uuid::Uuid;

impl ResultsService {
    /// The signed download path of a published COA's PDF and when it expires.
    pub fn document_link(&self, coa: &Coa, now: DateTime<Utc>) -> (String, DateTime<Utc>) {
        let expires = now.timestamp() + DOWNLOAD_LIFETIME_SECONDS;
        let signature = self
            .keys
            .signer()
            .sign_link(&document::download_message(&coa.id.to_string(), expires));
        let path = format!(
            "/api/v1/documents/coa/{}?expires={expires}&signature={signature}",
            coa.id
        );
        let at = DateTime::from_timestamp(expires, 0).unwrap_or(now);
        (path, at)
    }

    /// The PDF behind a signed link: (bytes, file name). A bad or expired signature and an
    /// unpublished COA are the same `not_found`.
    pub async fn render_document(
        &self,
        coa_id: &str,
        expires: i64,
        signature: &str,
    ) -> Result<(Vec<u8>, String), ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "document not found or link expired");
        let message = document::download_message(coa_id, expires);
        if expires < platform::time::now().timestamp() || !self.keys.signer().verify_link(&message, signature)
        {
            return Err(not_found());
        }
        let id = Uuid::parse_str(coa_id).map_err(|_| not_found())?;
        let coa = {
            let mut conn = self.pool.acquire().await?;
            repo::coa_by_id(&mut conn, id)
                .await?
                .filter(|coa| coa.status.was_published())
                .ok_or_else(not_found)?
        };
        let pdf = self.document(&coa).await?;
        Ok((pdf, format!("COA-{}-v{}.pdf", coa.accession_number, coa.version)))
    }

    /// The PDF of a published COA: the one kept in the blob store, checked against its SHA-256;
    /// the first time, rendered and kept (replicas racing keep one rendering: the first
    /// recorded). A certificate's bytes thus never change after issue, even when the renderer
    /// does.
    pub(crate) async fn document(&self, coa: &Coa) -> Result<Vec<u8>, ApiError> {
        let kept = {
            let mut conn = self.pool.acquire().await?;
            repo::coa_document(&mut conn, coa.id).await?
        };
        if let Some((key, sha256)) = kept {
            return self.kept_document(coa, &key, &sha256).await;
        }
        let pdf = document::render(coa, &self.letterhead);
        let sha256 = platform::production::sha256_hex(&pdf);
        let key = format!("coas/{}/{sha256}.pdf", coa.id);
        self.store
            .put(&key, Bytes::from(pdf.clone()))
            .await
            .map_err(store_error)?;
        let mut conn = self.pool.acquire().await?;
        if repo::keep_coa_document(&mut conn, coa.id, &key, &sha256).await? {
            tracing::info!(coa.id = %coa.id, %sha256, "COA document kept");
            return Ok(pdf);
        }
        let (kept_key, kept_sha256) = repo::coa_document(&mut conn, coa.id)
            .await?
            .ok_or_else(|| ApiError::internal("a kept COA document disappeared"))?;
        drop(conn);
        if kept_key != key {
            // Another rendering won: ours is an orphan.
            let _ = self.store.delete(&key).await;
        }
        self.kept_document(coa, &kept_key, &kept_sha256).await
    }

    /// Keeps the document of a COA just published (so its bytes are fixed at issue); a store
    /// that fails now is logged, and the first download keeps it instead.
    pub(crate) async fn keep_document(&self, coa: &Coa) {
        if let Err(error) = self.document(coa).await {
            tracing::warn!(coa.id = %coa.id, %error, "the COA document could not be kept at publication; the first download keeps it");
        }
    }

    async fn kept_document(&self, coa: &Coa, key: &str, sha256: &str) -> Result<Vec<u8>, ApiError> {
        let bytes = self.store.get(key).await.map_err(store_error)?;
        if platform::production::sha256_hex(&bytes) != sha256 {
            tracing::error!(coa.id = %coa.id, key, "the kept COA document does not match its SHA-256");
            return Err(ApiError::internal(
                "the kept COA document does not match its recorded hash",
            ));
        }
        Ok(bytes.to_vec())
    }
}

fn store_error(error: BlobError) -> ApiError {
    tracing::error!(%error, "blob store (COA documents)");
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the document store is unavailable; retry later",
    )
}

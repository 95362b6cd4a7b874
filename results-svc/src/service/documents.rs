//! The COA document: signed, expiring download links for the customer's published COAs, and the
//! rendering behind a link whose signature and expiry check out.

use super::ResultsService;
use crate::document::{self, DOWNLOAD_LIFETIME_SECONDS};
use crate::domain::coa::Coa;
use crate::repo;
use chrono::{DateTime, Utc};
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

    /// Renders the PDF behind a signed link: (bytes, file name). A bad or expired signature and
    /// an unpublished COA are the same `not_found`.
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
        let mut conn = self.pool.acquire().await?;
        let coa = repo::coa_by_id(&mut conn, id)
            .await?
            .filter(|coa| coa.status.was_published())
            .ok_or_else(not_found)?;
        let pdf = document::render(&coa, &self.letterhead);
        Ok((pdf, format!("COA-{}-v{}.pdf", coa.accession_number, coa.version)))
    }
}

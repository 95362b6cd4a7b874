//! The customer's reads of published COAs (published, retracted or superseded; nothing of a
//! draft, submitted, approved or held COA is ever answered) and the public verification.

use super::ResultsService;
use crate::domain::coa::Coa;
use crate::domain::verification::{self, MAX_BATCH, Verdict};
use crate::repo::{self, ResultsFilter};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{After, Listing, Page, PageRequest};
use uuid::Uuid;

/// The listing of a customer's published COAs, newest publication first.
pub const RESULTS: Listing = Listing::new("results");

impl ResultsService {
    /// One page of the customer's published COAs.
    pub async fn list_results(
        &self,
        customer_id: Uuid,
        mut filter: ResultsFilter,
        page: &PageRequest,
    ) -> Result<Page<Coa>, ApiError> {
        let after: Option<After> = RESULTS.after(page)?;
        filter.after = after.map(|after| (after.created_at, after.id));
        filter.limit = page.fetch();
        let mut conn = self.pool.acquire().await?;
        let coas = repo::list_published(&mut conn, customer_id, &filter).await?;
        Ok(RESULTS.page(page, coas, |coa| {
            After::new(coa.published_at.unwrap_or(coa.created_at), coa.id)
        }))
    }

    /// One of the customer's published COAs by COA id or accession number.
    pub async fn get_result(&self, customer_id: Uuid, reference: &str) -> Result<Coa, ApiError> {
        let mut conn = self.pool.acquire().await?;
        repo::find_published(&mut conn, customer_id, reference.trim())
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "result not found"))
    }

    /// The public verdict for each reference (accession number, or the COA id printed on the
    /// document; 1 to 100, answered in request order).
    pub async fn verify(&self, accessions: &[String], code: Option<&str>) -> Result<Vec<Verdict>, ApiError> {
        if accessions.is_empty() || accessions.len() > MAX_BATCH {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "accessionNumbers",
                "name 1 to 100 accession numbers",
            ));
        }
        if let Some((index, _)) = accessions
            .iter()
            .enumerate()
            .find(|(_, accession)| accession.is_empty() || accession.chars().count() > 64)
        {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                &format!("accessionNumbers[{index}]"),
                "an accession number is 1 to 64 characters",
            ));
        }
        let trimmed: Vec<String> = accessions
            .iter()
            .map(|accession| accession.trim().to_owned())
            .collect();
        let mut conn = self.pool.acquire().await?;
        let ids: Vec<Uuid> = trimmed
            .iter()
            .filter_map(|reference| Uuid::parse_str(reference).ok())
            .collect();
        let coas = repo::published_by_references(&mut conn, &trimmed, &ids).await?;
        Ok(trimmed
            .iter()
            .map(|reference| {
                let coa = match Uuid::parse_str(reference) {
                    Ok(id) => coas.iter().find(|coa| coa.id == id),
                    Err(_) => coas
                        .iter()
                        .filter(|coa| &coa.accession_number == reference)
                        .max_by_key(|coa| coa.version),
                };
                let verdict = verification::judge(reference, coa.cloned(), code, &self.keys);
                if let Some(coa) = verdict.coa.as_ref().filter(|_| verdict.status == "unverifiable") {
                    let check = self
                        .keys
                        .check(&coa.signing_key_id, &coa.signed_content, &coa.signature);
                    tracing::warn!(
                        coa_id = %coa.id, kid = %coa.signing_key_id, ?check,
                        "a published COA does not verify with the key its kid names (the key left \
                         RESULTS_COA_PREVIOUS_KEYS, or the stored content or signature changed)"
                    );
                }
                verdict
            })
            .collect())
    }
}

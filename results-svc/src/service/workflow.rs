//! The lab workflow of a sample's COA, one transaction per step, each locking the sample (so
//! steps on one accession run one at a time): record results → submit → approve (four eyes) or
//! send back → publish (held until the order is paid) → retract / amend. Repeating a step that
//! already happened answers the COA unchanged; a step out of order is a `conflict` naming the
//! COA's status (`crate::domain::coa`).

use super::ResultsService;
use crate::domain::analyte::{self, UncheckedRow};
use crate::domain::coa::{Coa, CoaStatus, canonical_content};
use crate::domain::verification;
use crate::repo;
use crate::{OUTBOX, events};
use platform::error::{ApiError, ErrorCode};
use platform::principal::OperatorRef;
use sqlx::PgConnection;
use uuid::Uuid;

/// A COA after a workflow step, and whether the step had already happened.
pub struct Step {
    pub coa: Coa,
    pub unchanged: bool,
}

fn not_found(what: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("{what} not found"))
}

fn check_reason(reason: &str) -> Result<String, ApiError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "reason",
            "reason must be 1 to 500 characters",
        ));
    }
    Ok(reason.to_owned())
}

/// Locks the sample of `accession` and returns its current COA (the sample must exist).
async fn current(
    tx: &mut PgConnection,
    accession: &str,
) -> Result<(repo::SampleFacts, Option<Coa>), ApiError> {
    let sample = repo::find_sample(tx, accession)
        .await?
        .ok_or_else(|| not_found("sample"))?;
    let coa = repo::lock_current_coa(tx, accession).await?;
    Ok((sample, coa))
}

/// Locks the COA named by id or accession (its current COA).
async fn resolve(tx: &mut PgConnection, reference: &str) -> Result<Coa, ApiError> {
    let reference = reference.trim();
    if let Ok(id) = Uuid::parse_str(reference) {
        let accession = repo::coa_by_id(tx, id)
            .await?
            .ok_or_else(|| not_found("COA"))?
            .accession_number;
        repo::find_sample(tx, &accession).await?;
        return repo::lock_coa(tx, id).await?.ok_or_else(|| not_found("COA"));
    }
    current(tx, reference).await?.1.ok_or_else(|| not_found("COA"))
}

impl ResultsService {
    async fn finish(
        &self,
        mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
        id: Uuid,
        unchanged: bool,
    ) -> Result<Step, ApiError> {
        let coa = repo::coa_by_id(&mut tx, id)
            .await?
            .ok_or_else(|| not_found("COA"))?;
        tx.commit().await?;
        Ok(Step { coa, unchanged })
    }

    /// Records (or replaces, by analyte) results of a sample's draft COA as `analyst`.
    pub async fn record_results(
        &self,
        analyst: &OperatorRef,
        accession: &str,
        rows: Vec<UncheckedRow>,
    ) -> Result<Step, ApiError> {
        let mut tx = self.pool.begin().await?;
        let (sample, coa) = current(&mut tx, accession).await?;
        if sample.testing_started_at.is_none() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("testing has not started for {accession}"),
            ));
        }
        let now = platform::time::now();
        let rows = analyte::check_rows(rows, &sample.test_ids, analyst, now)?;
        let id = match coa {
            Some(coa) if coa.status == CoaStatus::Draft => coa.id,
            Some(coa) if coa.status.was_published() => {
                return Err(coa.conflict("given new results; open an amendment first"));
            }
            Some(coa) => return Err(coa.conflict("given new results")),
            None => {
                let coa = draft(&sample, 1, None, None, now);
                repo::insert_coa(&mut tx, &coa).await?;
                coa.id
            }
        };
        repo::upsert_rows(&mut tx, id, sample.customer_id, &rows).await?;
        self.finish(tx, id, false).await
    }

    /// Submits a sample's draft results for QA review as `analyst`.
    pub async fn submit_results(&self, analyst: &OperatorRef, accession: &str) -> Result<Step, ApiError> {
        let mut tx = self.pool.begin().await?;
        let mut coa = current(&mut tx, accession)
            .await?
            .1
            .ok_or_else(|| not_found("COA"))?;
        match coa.status {
            CoaStatus::Draft if coa.results.is_empty() => Err(coa.conflict("submitted without results")),
            CoaStatus::Draft => {
                coa.status = CoaStatus::Submitted;
                coa.submitted_by = Some(analyst.name.clone());
                coa.submitted_by_id = Some(analyst.id);
                coa.send_back_reason = None;
                repo::update_coa(&mut tx, &coa, Some(platform::time::now())).await?;
                self.finish(tx, coa.id, false).await
            }
            CoaStatus::Submitted => self.finish(tx, coa.id, true).await,
            _ => Err(coa.conflict("submitted")),
        }
    }

    /// Approves submitted results as `approver` (never an operator who entered or submitted
    /// them, compared by operator id).
    pub async fn approve_results(&self, approver: &OperatorRef, accession: &str) -> Result<Step, ApiError> {
        let mut tx = self.pool.begin().await?;
        let mut coa = current(&mut tx, accession)
            .await?
            .1
            .ok_or_else(|| not_found("COA"))?;
        match coa.status {
            CoaStatus::Submitted => {
                coa.check_four_eyes(approver)?;
                coa.status = CoaStatus::Approved;
                coa.approved_by = Some(approver.name.clone());
                coa.approved_by_id = Some(approver.id);
                coa.approved_at = Some(platform::time::now());
                repo::update_coa(&mut tx, &coa, None).await?;
                self.finish(tx, coa.id, false).await
            }
            CoaStatus::Approved | CoaStatus::Held | CoaStatus::Published => {
                self.finish(tx, coa.id, true).await
            }
            _ => Err(coa.conflict("approved")),
        }
    }

    /// Sends submitted results back to the analyst with a reason.
    pub async fn send_back(&self, accession: &str, reason: &str) -> Result<Step, ApiError> {
        let reason = check_reason(reason)?;
        let mut tx = self.pool.begin().await?;
        let mut coa = current(&mut tx, accession)
            .await?
            .1
            .ok_or_else(|| not_found("COA"))?;
        match coa.status {
            CoaStatus::Submitted => {
                coa.status = CoaStatus::Draft;
                coa.submitted_by = None;
                coa.submitted_by_id = None;
                coa.send_back_reason = Some(reason);
                repo::update_coa(&mut tx, &coa, None).await?;
                self.finish(tx, coa.id, false).await
            }
            CoaStatus::Draft if coa.send_back_reason.as_deref() == Some(reason.as_str()) => {
                self.finish(tx, coa.id, true).await
            }
            _ => Err(coa.conflict("sent back")),
        }
    }

    /// Publishes an approved COA, or holds it until its order is paid.
    pub async fn publish_coa(&self, accession: &str) -> Result<Step, ApiError> {
        let mut tx = self.pool.begin().await?;
        let coa = current(&mut tx, accession)
            .await?
            .1
            .ok_or_else(|| not_found("COA"))?;
        match coa.status {
            CoaStatus::Approved => {
                let id = coa.id;
                if repo::lock_order_paid(&mut tx, coa.order_id).await? {
                    self.release(&mut tx, coa).await?;
                } else {
                    let mut coa = coa;
                    coa.status = CoaStatus::Held;
                    repo::update_coa(&mut tx, &coa, None).await?;
                }
                let step = self.finish(tx, id, false).await?;
                if step.coa.status == CoaStatus::Published {
                    // Its bytes fixed at issue (a COA released later, when payment lands, is
                    // kept at its first download).
                    self.keep_document(&step.coa).await;
                }
                Ok(step)
            }
            CoaStatus::Held | CoaStatus::Published => self.finish(tx, coa.id, true).await,
            _ => Err(coa.conflict("published")),
        }
    }

    /// Publishes an approved or held COA in the caller's transaction: signature over the
    /// canonical content, `coa.published`, and the original it amends becomes superseded.
    pub(super) async fn release(&self, tx: &mut PgConnection, mut coa: Coa) -> Result<(), sqlx::Error> {
        let now = repo::publication_stamp(tx, platform::time::now()).await?;
        coa.status = CoaStatus::Published;
        coa.published_at = Some(now);
        coa.signed_content = canonical_content(&coa, now);
        coa.signature = self.keys.signer().sign(&coa.signed_content);
        coa.signing_key_id = self.keys.signer().kid.clone();
        repo::update_coa(tx, &coa, None).await?;
        if let Some(original) = coa.amends
            && let Some(mut original) = repo::lock_coa(tx, original).await?
        {
            original.superseded_by = Some(coa.id);
            if original.status == CoaStatus::Published {
                original.status = CoaStatus::Superseded;
            }
            repo::update_coa(tx, &original, None).await?;
        }
        OUTBOX.enqueue(tx, events::coa_published(&coa, now)).await?;
        Ok(())
    }

    /// Withdraws a published COA with a reason.
    pub async fn retract_coa(&self, reference: &str, reason: &str) -> Result<Step, ApiError> {
        let reason = check_reason(reason)?;
        let mut tx = self.pool.begin().await?;
        let mut coa = resolve(&mut tx, reference).await?;
        match coa.status {
            CoaStatus::Published => {
                let now = platform::time::now();
                coa.status = CoaStatus::Retracted;
                coa.retracted_at = Some(now);
                coa.retraction_reason = Some(reason.clone());
                repo::update_coa(&mut tx, &coa, None).await?;
                OUTBOX
                    .enqueue(&mut tx, events::coa_retracted(&coa, now, &reason))
                    .await?;
                self.finish(tx, coa.id, false).await
            }
            CoaStatus::Retracted => self.finish(tx, coa.id, true).await,
            _ => Err(coa.conflict("retracted")),
        }
    }

    /// Opens an amendment of a published or retracted COA: a new draft with a copy of its results.
    pub async fn amend_coa(&self, reference: &str, reason: &str) -> Result<Step, ApiError> {
        let reason = check_reason(reason)?;
        let mut tx = self.pool.begin().await?;
        let original = resolve(&mut tx, reference).await?;
        let (sample, newest) = current(&mut tx, &original.accession_number).await?;
        if let Some(newest) = newest.filter(|newest| newest.amends == Some(original.id)) {
            return self.finish(tx, newest.id, true).await;
        }
        if !matches!(original.status, CoaStatus::Published | CoaStatus::Retracted)
            || original.superseded_by.is_some()
        {
            return Err(original.conflict("amended"));
        }
        let now = platform::time::now();
        let amendment = draft(
            &sample,
            original.version + 1,
            Some(original.id),
            Some(reason),
            now,
        );
        repo::insert_coa(&mut tx, &amendment).await?;
        repo::upsert_rows(&mut tx, amendment.id, sample.customer_id, &original.results).await?;
        self.finish(tx, amendment.id, false).await
    }

    /// The current COA of an accession in any state (staff view).
    pub async fn lab_coa(&self, accession: &str) -> Result<Coa, ApiError> {
        let mut tx = self.pool.begin().await?;
        let coa = current(&mut tx, accession)
            .await?
            .1
            .ok_or_else(|| not_found("COA"))?;
        tx.commit().await?;
        Ok(coa)
    }
}

/// A new draft COA of a sample.
fn draft(
    sample: &repo::SampleFacts,
    version: i32,
    amends: Option<Uuid>,
    amendment_reason: Option<String>,
    now: chrono::DateTime<chrono::Utc>,
) -> Coa {
    Coa {
        id: Uuid::now_v7(),
        submission_id: Uuid::now_v7(),
        accession_number: sample.accession_number.clone(),
        customer_id: sample.customer_id,
        order_id: sample.order_id,
        order_number: sample.order_number.clone(),
        compound: sample.compound.clone(),
        lot_number: sample.lot_number.clone(),
        version,
        status: CoaStatus::Draft,
        submitted_by: None,
        submitted_by_id: None,
        approved_by: None,
        approved_by_id: None,
        approved_at: None,
        published_at: None,
        retracted_at: None,
        retraction_reason: None,
        send_back_reason: None,
        amends,
        amendment_reason,
        superseded_by: None,
        verification_code: verification::new_code(),
        signed_content: String::new(),
        signature: String::new(),
        signing_key_id: String::new(),
        received_at: sample.received_at,
        testing_started_at: sample.testing_started_at,
        created_at: now,
        results: Vec::new(),
    }
}

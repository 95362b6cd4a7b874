//! The certificate of analysis (COA) and its workflow state machine.
//!
//! | from | step (role) | to |
//! |---|---|---|
//! | (none) | record results (lab.analyst) | draft |
//! | draft | record results (lab.analyst) | draft |
//! | draft | submit (lab.analyst) | submitted |
//! | submitted | send back with a reason (lab.qa) | draft |
//! | submitted | approve (lab.qa, not an analyst of the results) | approved |
//! | approved | publish (lab.qa), order paid | published |
//! | approved | publish (lab.qa), order unpaid | held |
//! | held | the order's payment lands | published |
//! | published | retract with a reason (lab.qa) | retracted |
//! | published | its amendment is published | superseded |
//!
//! An amendment (lab.qa, of a published or retracted COA) is a new COA of the same accession with
//! its own id, `version + 1`, `amends` pointing to the original and a reason, starting as a
//! draft with a copy of the original's results. Repeating a step that already happened answers
//! the COA unchanged; any other step out of order is a `conflict` naming the status.

use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::principal::OperatorRef;
use serde::Serialize;
use uuid::Uuid;

/// Where a COA stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoaStatus {
    Draft,
    Submitted,
    Approved,
    Held,
    Published,
    Retracted,
    Superseded,
}

impl CoaStatus {
    /// Every status.
    pub const ALL: [CoaStatus; 7] = [
        CoaStatus::Draft,
        CoaStatus::Submitted,
        CoaStatus::Approved,
        CoaStatus::Held,
        CoaStatus::Published,
        CoaStatus::Retracted,
        CoaStatus::Superseded,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CoaStatus::Draft => "draft",
            CoaStatus::Submitted => "submitted",
            CoaStatus::Approved => "approved",
            CoaStatus::Held => "held",
            CoaStatus::Published => "published",
            CoaStatus::Retracted => "retracted",
            CoaStatus::Superseded => "superseded",
        }
    }

    /// Looks a status up by its wire name.
    pub fn parse(name: &str) -> Option<CoaStatus> {
        CoaStatus::ALL.into_iter().find(|status| status.as_str() == name)
    }

    /// True for COAs a customer may see (they were published once).
    pub fn was_published(self) -> bool {
        matches!(
            self,
            CoaStatus::Published | CoaStatus::Retracted | CoaStatus::Superseded
        )
    }
}

/// One measured analyte of a COA.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalyteRow {
    pub analyte: String,
    pub test_id: String,
    pub value: Option<String>,
    pub qualifier: Option<String>,
    pub unit: String,
    pub loq: Option<String>,
    pub lod: Option<String>,
    pub specification: Option<String>,
    pub outcome: Option<String>,
    pub method: String,
    pub instrument: String,
    pub analyst: String,
    /// The analyst's operator id (none on rows recorded before operator ids).
    #[serde(skip)]
    pub analyst_id: Option<Uuid>,
    pub measured_at: DateTime<Utc>,
}

/// A certificate of analysis with its sample facts and results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coa {
    pub id: Uuid,
    pub submission_id: Uuid,
    pub accession_number: String,
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub compound: String,
    pub lot_number: Option<String>,
    pub version: i32,
    pub status: CoaStatus,
    pub submitted_by: Option<String>,
    /// The submitter's operator id (none when submitted before operator ids).
    pub submitted_by_id: Option<Uuid>,
    pub approved_by: Option<String>,
    pub approved_by_id: Option<Uuid>,
    pub approved_at: Option<DateTime<Utc>>,
    pub published_at: Option<DateTime<Utc>>,
    pub retracted_at: Option<DateTime<Utc>>,
    pub retraction_reason: Option<String>,
    pub send_back_reason: Option<String>,
    pub amends: Option<Uuid>,
    pub amendment_reason: Option<String>,
    pub superseded_by: Option<Uuid>,
    pub verification_code: String,
    pub signed_content: String,
    pub signature: String,
    pub signing_key_id: String,
    pub received_at: DateTime<Utc>,
    pub testing_started_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub results: Vec<AnalyteRow>,
}

impl Coa {
    /// The operators who entered its results, in order of first appearance.
    pub fn analysts(&self) -> Vec<String> {
        let mut analysts: Vec<String> = Vec::new();
        for row in &self.results {
            if !analysts.contains(&row.analyst) {
                analysts.push(row.analyst.clone());
            }
        }
        analysts
    }

    /// A `conflict` naming this COA's status.
    pub fn conflict(&self, step: &str) -> ApiError {
        ApiError::new(
            ErrorCode::Conflict,
            format!(
                "the COA of {} is {}; it cannot be {step}",
                self.accession_number,
                self.status.as_str()
            ),
        )
        .with_details(serde_json::json!({ "status": self.status.as_str() }))
    }

    /// Four eyes: the approver may not be an operator who entered any of the results or
    /// submitted them. Operators are compared by id, whatever names their tokens carry; an
    /// entry recorded before operator ids (no id) is compared by name.
    pub fn check_four_eyes(&self, approver: &OperatorRef) -> Result<(), ApiError> {
        let same = |id: Option<Uuid>, name: Option<&str>| match id {
            Some(id) => id == approver.id,
            None => name == Some(approver.name.as_str()),
        };
        let entered = self
            .results
            .iter()
            .any(|row| same(row.analyst_id, Some(&row.analyst)));
        if entered || same(self.submitted_by_id, self.submitted_by.as_deref()) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "four eyes: the QA approver cannot be the analyst who entered or submitted the results",
            ));
        }
        Ok(())
    }
}

/// The canonical content a COA's signature covers: a JSON object with sorted keys (serde_json
/// maps are ordered) and no whitespace.
pub fn canonical_content(coa: &Coa, published_at: DateTime<Utc>) -> String {
    let results: Vec<serde_json::Value> = coa
        .results
        .iter()
        .map(|row| {
            serde_json::json!({
                "analyte": row.analyte, "testId": row.test_id, "value": row.value,
                "qualifier": row.qualifier, "unit": row.unit, "loq": row.loq, "lod": row.lod,
                "specification": row.specification, "outcome": row.outcome, "method": row.method,
                "instrument": row.instrument, "analyst": row.analyst,
                "measuredAt": platform::time::rfc3339(row.measured_at),
            })
        })
        .collect();
    serde_json::json!({
        "coaId": coa.id, "submissionId": coa.submission_id, "accessionNumber": coa.accession_number,
        "orderNumber": coa.order_number, "compound": coa.compound, "lotNumber": coa.lot_number,
        "version": coa.version, "amends": coa.amends, "amendmentReason": coa.amendment_reason,
        "approvedBy": coa.approved_by, "publishedAt": platform::time::rfc3339(published_at),
        "receivedAt": platform::time::rfc3339(coa.received_at), "results": results,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operator(id: u128, name: &str) -> OperatorRef {
        OperatorRef {
            id: Uuid::from_u128(id),
            name: name.into(),
        }
    }

    fn coa(analyst: &str) -> Coa {
        let now = platform::time::now();
        Coa {
            id: Uuid::now_v7(),
            submission_id: Uuid::now_v7(),
            accession_number: "ACC-2026-000001".into(),
            customer_id: Uuid::nil(),
            order_id: Uuid::nil(),
            order_number: "ORD-2026-000001".into(),
            compound: "BPC-157".into(),
            lot_number: None,
            version: 1,
            status: CoaStatus::Submitted,
            submitted_by: Some(analyst.into()),
            submitted_by_id: Some(Uuid::from_u128(1)),
            approved_by: None,
            approved_by_id: None,
            approved_at: None,
            published_at: None,
            retracted_at: None,
            retraction_reason: None,
            send_back_reason: None,
            amends: None,
            amendment_reason: None,
            superseded_by: None,
            verification_code: "ABCD2345".into(),
            signed_content: String::new(),
            signature: String::new(),
            signing_key_id: String::new(),
            received_at: now,
            testing_started_at: Some(now),
            created_at: now,
            results: vec![AnalyteRow {
                analyte: "Purity".into(),
                test_id: "hplc-purity".into(),
                value: Some("99.1".into()),
                qualifier: None,
                unit: "%".into(),
                loq: None,
                lod: None,
                specification: Some(">= 98.0".into()),
                outcome: Some("pass".into()),
                method: "HPLC-UV".into(),
                instrument: "HPLC-01".into(),
                analyst: analyst.into(),
                analyst_id: Some(Uuid::from_u128(1)),
                measured_at: now,
            }],
        }
    }

    #[test]
    fn the_analyst_cannot_approve_their_own_results_but_someone_else_can() {
        let coa = coa("ana");
        assert_eq!(
            coa.check_four_eyes(&operator(1, "ana")).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert!(coa.check_four_eyes(&operator(2, "quinn")).is_ok());
    }

    #[test]
    fn four_eyes_compares_operator_ids_and_names_only_where_no_id_was_recorded() {
        let mut coa = coa("ana");
        // The analyst's id under another name is refused; another operator named ana is not.
        assert!(coa.check_four_eyes(&operator(1, "quinn")).is_err());
        assert!(coa.check_four_eyes(&operator(3, "ana")).is_ok());
        // Entries from before operator ids: their names count.
        coa.results[0].analyst_id = None;
        coa.submitted_by_id = None;
        assert!(coa.check_four_eyes(&operator(3, "ana")).is_err());
        assert!(coa.check_four_eyes(&operator(1, "quinn")).is_ok());
    }

    #[test]
    fn only_published_retracted_and_superseded_coas_were_published() {
        for status in CoaStatus::ALL {
            assert_eq!(CoaStatus::parse(status.as_str()), Some(status));
        }
        assert!(CoaStatus::Retracted.was_published());
        assert!(!CoaStatus::Held.was_published());
        assert!(!CoaStatus::Approved.was_published());
    }

    #[test]
    fn the_canonical_content_changes_when_a_result_changes() {
        let mut coa = coa("ana");
        let at = platform::time::now();
        let first = canonical_content(&coa, at);
        coa.results[0].value = Some("99.2".into());
        assert_ne!(first, canonical_content(&coa, at));
    }
}

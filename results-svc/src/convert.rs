//! Conversions between the protobuf messages of `lab.results.v1` and the domain.

use crate::domain::analyte::UncheckedRow;
use crate::domain::coa::{AnalyteRow, Coa};
use crate::domain::coa_keys::PublicCoaKey;
use crate::domain::verification::Verdict;
use crate::repo::ResultsFilter;
use platform::error::ApiError;
use platform::time::{from_timestamp, to_timestamp, to_timestamp_opt};
use proto::results as pb;

impl From<pb::AnalyteResult> for UncheckedRow {
    fn from(row: pb::AnalyteResult) -> Self {
        UncheckedRow {
            analyte: row.analyte,
            test_id: row.test_id,
            value: row.value,
            qualifier: row.qualifier,
            unit: row.unit,
            loq: row.loq,
            lod: row.lod,
            specification: row.specification,
            outcome: row.outcome,
            method: row.method,
            instrument: row.instrument,
            measured_at: row.measured_at.as_ref().and_then(from_timestamp),
        }
    }
}

impl From<&AnalyteRow> for pb::AnalyteResult {
    fn from(row: &AnalyteRow) -> Self {
        pb::AnalyteResult {
            analyte: row.analyte.clone(),
            test_id: row.test_id.clone(),
            value: row.value.clone(),
            qualifier: row.qualifier.clone(),
            unit: row.unit.clone(),
            loq: row.loq.clone(),
            lod: row.lod.clone(),
            specification: row.specification.clone(),
            outcome: row.outcome.clone(),
            method: row.method.clone(),
            instrument: row.instrument.clone(),
            analyst: row.analyst.clone(),
            measured_at: Some(to_timestamp(row.measured_at)),
        }
    }
}

impl From<&Coa> for pb::Coa {
    fn from(coa: &Coa) -> Self {
        pb::Coa {
            id: coa.id.to_string(),
            submission_id: coa.submission_id.to_string(),
            accession_number: coa.accession_number.clone(),
            customer_id: coa.customer_id.to_string(),
            order_id: coa.order_id.to_string(),
            order_number: coa.order_number.clone(),
            compound: coa.compound.clone(),
            lot_number: coa.lot_number.clone(),
            status: coa.status.as_str().to_owned(),
            results: coa.results.iter().map(Into::into).collect(),
            analysts: coa.analysts(),
            approved_by: coa.approved_by.clone(),
            approved_at: to_timestamp_opt(coa.approved_at),
            published_at: to_timestamp_opt(coa.published_at),
            retracted_at: to_timestamp_opt(coa.retracted_at),
            retraction_reason: coa.retraction_reason.clone(),
            amends: coa.amends.map(|id| id.to_string()),
            amendment_reason: coa.amendment_reason.clone(),
            superseded_by: coa.superseded_by.map(|id| id.to_string()),
            send_back_reason: coa.send_back_reason.clone(),
            received_at: Some(to_timestamp(coa.received_at)),
            testing_started_at: to_timestamp_opt(coa.testing_started_at),
            verification_code: coa.verification_code.clone(),
            signature: coa.signature.clone(),
            signed_content: coa.signed_content.clone(),
            signing_key_id: coa.signing_key_id.clone(),
            version: coa.version,
            created_at: Some(to_timestamp(coa.created_at)),
            document_path: String::new(),
            document_expires_at: None,
        }
    }
}

/// The customer's view of a published COA: the lab's internal notes are left out.
pub fn customer_coa(coa: &Coa) -> pb::Coa {
    pb::Coa {
        send_back_reason: None,
        ..coa.into()
    }
}

/// The filters of a ListResults request.
pub fn results_filter(request: &pb::ListResultsRequest) -> Result<ResultsFilter, ApiError> {
    let order_id = platform::ids::parse_optional_uuid("orderId", request.order_id.as_deref())?;
    Ok(ResultsFilter {
        order_id,
        compound: request.compound.clone().filter(|value| !value.is_empty()),
        lot_number: request.lot_number.clone().filter(|value| !value.is_empty()),
        published_from: request.published_from.as_ref().and_then(from_timestamp),
        published_to: request.published_to.as_ref().and_then(from_timestamp),
        after: None,
        limit: 0,
    })
}

impl From<&Verdict> for pb::Verification {
    fn from(verdict: &Verdict) -> Self {
        let coa = verdict.coa.as_ref();
        let reveal = verdict.code_matched;
        pb::Verification {
            accession_number: coa
                .map(|coa| coa.accession_number.clone())
                .unwrap_or_else(|| verdict.accession_number.clone()),
            status: verdict.status.to_owned(),
            coa_id: coa.map(|coa| coa.id.to_string()),
            published_at: coa.and_then(|coa| to_timestamp_opt(coa.published_at)),
            superseded_by: coa.and_then(|coa| coa.superseded_by.map(|id| id.to_string())),
            successor_accession_number: coa
                .filter(|coa| coa.superseded_by.is_some())
                .map(|coa| coa.accession_number.clone()),
            compound: coa.filter(|_| reveal).map(|coa| coa.compound.clone()),
            lot_number: coa.filter(|_| reveal).and_then(|coa| coa.lot_number.clone()),
            code_matched: reveal,
            signature: coa.filter(|_| reveal).map(|coa| coa.signature.clone()),
            signed_content: coa.filter(|_| reveal).map(|coa| coa.signed_content.clone()),
            signing_key_id: coa.map(|coa| coa.signing_key_id.clone()),
        }
    }
}

impl From<&PublicCoaKey> for pb::CoaPublicKey {
    fn from(key: &PublicCoaKey) -> Self {
        pb::CoaPublicKey {
            kid: key.kid.clone(),
            x: key.x(),
        }
    }
}

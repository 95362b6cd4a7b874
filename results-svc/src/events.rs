//! The events results-svc emits through its outbox: `coa.published` (webhooks-svc derives
//! `results.published` from it, with the same payload) and `coa.retracted`.

use crate::domain::coa::Coa;
use chrono::{DateTime, Utc};
use platform::outbox::NewEvent;
use proto::events::event_envelope::Data;
use proto::results::{CoaPublished, CoaRetracted};

/// Event type of a QA-published COA.
pub const COA_PUBLISHED: &str = "coa.published";
/// Event type of a withdrawn COA.
pub const COA_RETRACTED: &str = "coa.retracted";

/// Builds `coa.published`.
pub fn coa_published(coa: &Coa, published_at: DateTime<Utc>) -> NewEvent {
    NewEvent {
        event_type: COA_PUBLISHED,
        customer_id: coa.customer_id,
        subject_id: coa.id.to_string(),
        data: Data::CoaPublished(CoaPublished {
            coa_id: coa.id.to_string(),
            submission_id: coa.submission_id.to_string(),
            accession_number: coa.accession_number.clone(),
            compound: coa.compound.clone(),
            lot_number: coa.lot_number.clone(),
            order_id: coa.order_id.to_string(),
            order_number: coa.order_number.clone(),
            published_at: platform::time::rfc3339(published_at),
            version: coa.version,
            amends_coa_id: coa.amends.map(|id| id.to_string()),
            test_ids: coa_test_ids(coa),
        }),
    }
}

/// The test ids of a COA's results, each once, in result order.
fn coa_test_ids(coa: &Coa) -> Vec<String> {
    let mut test_ids: Vec<String> = Vec::new();
    for row in &coa.results {
        if !test_ids.contains(&row.test_id) {
            test_ids.push(row.test_id.clone());
        }
    }
    test_ids
}

/// Builds `coa.retracted`.
pub fn coa_retracted(coa: &Coa, retracted_at: DateTime<Utc>, reason: &str) -> NewEvent {
    NewEvent {
        event_type: COA_RETRACTED,
        customer_id: coa.customer_id,
        subject_id: coa.id.to_string(),
        data: Data::CoaRetracted(CoaRetracted {
            coa_id: coa.id.to_string(),
            accession_number: coa.accession_number.clone(),
            order_id: coa.order_id.to_string(),
            order_number: coa.order_number.clone(),
            retracted_at: platform::time::rfc3339(retracted_at),
            reason: reason.to_owned(),
        }),
    }
}

//! Samples as the lab logs them: the validated receipt of one sample line (units, containers,
//! condition on arrival, storage location), the accession number the lab assigns, the retention
//! deadline of the retained portion, and the hash chain of the chain-of-custody entries.

use super::fields::invalid;
use chrono::{DateTime, Datelike, Duration, Utc};
use platform::error::ApiError;
use sha2::{Digest, Sha256};

/// How long the lab keeps the retained portion of a sample after receipt (add-on assays and
/// re-tests use it; ISO/IEC 17025 leaves the period to the lab).
pub const RETENTION_DAYS: i64 = 180;

/// Conditions a sample may arrive in.
pub const CONDITIONS: [&str; 4] = ["intact", "damaged", "temperature_excursion", "insufficient"];

/// The previous hash of the first custody entry of an order.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The validated receipt of one sample line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Receipt {
    pub line_number: i32,
    pub units: i32,
    pub containers: String,
    pub condition: String,
    pub storage_location: String,
}

/// A receipt as it arrived, before validation.
#[derive(Clone, Debug, Default)]
pub struct UncheckedReceipt {
    pub line_number: i32,
    pub units: i32,
    pub containers: String,
    pub condition: String,
    pub storage_location: String,
}

/// A logged sample item of an order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub accession_number: String,
    pub line_number: i32,
    pub compound_name: String,
    pub lot_number: Option<String>,
    pub units: i32,
    pub containers: String,
    pub condition: String,
    pub storage_location: String,
    pub received_at: DateTime<Utc>,
    pub received_by: String,
    pub testing_started_at: Option<DateTime<Utc>>,
    pub retain_until: DateTime<Utc>,
    /// When the retained portion was disposed of (after `retain_until`).
    pub disposed_at: Option<DateTime<Utc>>,
    pub test_ids: Vec<String>,
    pub test_names: Vec<String>,
}

/// Validates the receipts of a shipment against the order's line numbers: exactly one receipt
/// per line, each field within its bounds (`invalid_request` naming `samples[i].<field>`).
pub fn check_receipts(receipts: Vec<UncheckedReceipt>, lines: &[i32]) -> Result<Vec<Receipt>, ApiError> {
    if receipts.is_empty() {
        return Err(invalid("samples", "list one receipt per sample line"));
    }
    let mut checked: Vec<Receipt> = Vec::with_capacity(receipts.len());
    for (index, receipt) in receipts.into_iter().enumerate() {
        let field = |name: &str| format!("samples[{index}].{name}");
        if !lines.contains(&receipt.line_number) {
            return Err(invalid(&field("lineNumber"), "the order has no such line"));
        }
        if checked.iter().any(|seen| seen.line_number == receipt.line_number) {
            return Err(invalid(&field("lineNumber"), "the line is received twice"));
        }
        if !(1..=1000).contains(&receipt.units) {
            return Err(invalid(&field("units"), "units must be 1 to 1000"));
        }
        let containers = receipt.containers.trim();
        if containers.is_empty() || containers.chars().count() > 200 {
            return Err(invalid(
                &field("containers"),
                "containers must be 1 to 200 characters",
            ));
        }
        if !CONDITIONS.contains(&receipt.condition.as_str()) {
            return Err(invalid(&field("condition"), "condition is not a known condition")
                .with_details(serde_json::json!({ "field": field("condition"), "allowed": CONDITIONS })));
        }
        let location = receipt.storage_location.trim();
        if location.is_empty() || location.chars().count() > 100 {
            return Err(invalid(
                &field("storageLocation"),
                "storageLocation must be 1 to 100 characters",
            ));
        }
        checked.push(Receipt {
            line_number: receipt.line_number,
            units: receipt.units,
            containers: containers.to_owned(),
            condition: receipt.condition,
            storage_location: location.to_owned(),
        });
    }
    if checked.len() != lines.len() {
        return Err(invalid(
            "samples",
            "list one receipt for every sample line of the order",
        ));
    }
    checked.sort_by_key(|receipt| receipt.line_number);
    Ok(checked)
}

/// Formats the accession number `ACC-<year>-<6-digit sequence>`.
pub fn accession_number(at: DateTime<Utc>, sequence: i64) -> String {
    format!("ACC-{}-{sequence:06}", at.year())
}

/// When the retained portion of a sample received at `received_at` may be discarded.
pub fn retain_until(received_at: DateTime<Utc>) -> DateTime<Utc> {
    received_at + Duration::days(RETENTION_DAYS)
}

/// One chain-of-custody entry before it is hashed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustodyFacts {
    pub sequence: i64,
    pub occurred_at: DateTime<Utc>,
    pub action: String,
    pub accession_number: String,
    pub actor: String,
    pub location: String,
    pub details: String,
}

impl CustodyFacts {
    /// The entry's hash: SHA-256 (hex) over the previous hash and every field, each separated by
    /// a unit separator so that no two different entries hash the same bytes.
    pub fn hash(&self, previous_hash: &str) -> String {
        let mut digest = Sha256::new();
        for part in [
            previous_hash,
            &self.sequence.to_string(),
            &platform::time::rfc3339(self.occurred_at),
            &self.action,
            &self.accession_number,
            &self.actor,
            &self.location,
            &self.details,
        ] {
            digest.update(part.as_bytes());
            digest.update([0x1f]);
        }
        hex::encode(digest.finalize())
    }
}

/// True when every entry's hash recomputes and links to the one before (`entries` in sequence
/// order as (facts, previous hash, hash)).
pub fn chain_intact(entries: &[(CustodyFacts, String, String)]) -> bool {
    let mut expected_previous = GENESIS_HASH.to_owned();
    for (facts, previous, hash) in entries {
        if *previous != expected_previous || facts.hash(previous) != *hash {
            return false;
        }
        expected_previous = hash.clone();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(line: i32) -> UncheckedReceipt {
        UncheckedReceipt {
            line_number: line,
            units: 2,
            containers: "2 x 2 mL amber vial".into(),
            condition: "intact".into(),
            storage_location: "FRZ-1/A1".into(),
        }
    }

    #[test]
    fn every_line_must_be_received_exactly_once() {
        assert_eq!(
            check_receipts(vec![receipt(2), receipt(1)], &[1, 2]).unwrap()[0].line_number,
            1
        );
        let missing = check_receipts(vec![receipt(1)], &[1, 2]).unwrap_err();
        assert_eq!(missing.details.unwrap()["field"], "samples");
        let twice = check_receipts(vec![receipt(1), receipt(1)], &[1, 2]).unwrap_err();
        assert_eq!(twice.details.unwrap()["field"], "samples[1].lineNumber");
        let unknown = check_receipts(vec![receipt(3)], &[1]).unwrap_err();
        assert_eq!(unknown.details.unwrap()["field"], "samples[0].lineNumber");
    }

    #[test]
    fn units_condition_and_location_are_checked() {
        let mut bad = receipt(1);
        bad.units = 0;
        assert_eq!(
            check_receipts(vec![bad], &[1]).unwrap_err().details.unwrap()["field"],
            "samples[0].units"
        );
        let mut bad = receipt(1);
        bad.condition = "fine".into();
        assert_eq!(
            check_receipts(vec![bad], &[1]).unwrap_err().details.unwrap()["field"],
            "samples[0].condition"
        );
        let mut bad = receipt(1);
        bad.storage_location = " ".into();
        assert_eq!(
            check_receipts(vec![bad], &[1]).unwrap_err().details.unwrap()["field"],
            "samples[0].storageLocation"
        );
    }

    #[test]
    fn a_tampered_custody_entry_breaks_the_chain() {
        let at = platform::time::now();
        let first = CustodyFacts {
            sequence: 1,
            occurred_at: at,
            action: "received".into(),
            accession_number: "ACC-2026-000001".into(),
            actor: "ana".into(),
            location: "Receiving".into(),
            details: "intact".into(),
        };
        let first_hash = first.hash(GENESIS_HASH);
        let second = CustodyFacts {
            sequence: 2,
            action: "stored".into(),
            ..first.clone()
        };
        let second_hash = second.hash(&first_hash);
        let mut chain = vec![
            (first.clone(), GENESIS_HASH.to_owned(), first_hash.clone()),
            (second, first_hash, second_hash),
        ];
        assert!(chain_intact(&chain));
        chain[0].0.actor = "mallory".into();
        assert!(!chain_intact(&chain));
    }

    #[test]
    fn accession_numbers_carry_the_year_and_retention_is_180_days() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-07-17T10:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(accession_number(at, 7), "ACC-2026-000007");
        assert_eq!((retain_until(at) - at).num_days(), 180);
    }
}

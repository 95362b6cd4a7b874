//! `sampleMetadata` of the create-order request: lot number and matrix notes for quoted
//! compounds. At most 50 items; each names a compound (1..=200 characters) once and carries a
//! non-empty `lotNumber` (≤ 200) or `matrixNotes` (≤ 2000). Whether the compound is on the quote
//! is checked with the quote ([`crate::domain::quote::plan_order`]).

use crate::domain::fields::{check_length, invalid};
use platform::error::{ApiError, ErrorCode};
use std::collections::HashSet;

/// Most `sampleMetadata` items.
pub const MAX_SAMPLE_METADATA: usize = 50;
/// Largest `compoundName`, in characters (smallest is 1).
pub const MAX_COMPOUND_NAME: usize = 200;
/// Largest `lotNumber`, in characters.
pub const MAX_LOT_NUMBER: usize = 200;
/// Largest `matrixNotes`, in characters.
pub const MAX_MATRIX_NOTES: usize = 2000;

/// One `sampleMetadata` item as received.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UncheckedSampleMetadata {
    pub compound_name: String,
    pub lot_number: Option<String>,
    pub matrix_notes: Option<String>,
}

/// A validated lot number / matrix notes overlay for one quoted compound.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleMetadata {
    pub compound_name: String,
    pub lot_number: Option<String>,
    pub matrix_notes: Option<String>,
}

/// Validates the items in order; errors name `sampleMetadata`, `sampleMetadata[i]` or
/// `sampleMetadata[i].<field>`; a repeated compound name is `duplicate_compound`.
pub fn validate_sample_metadata(
    items: Vec<UncheckedSampleMetadata>,
) -> Result<Vec<SampleMetadata>, ApiError> {
    if items.len() > MAX_SAMPLE_METADATA {
        let message = format!("sampleMetadata holds at most {MAX_SAMPLE_METADATA} items");
        return Err(invalid("sampleMetadata", message));
    }
    let mut seen = HashSet::new();
    let mut validated = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let field = |name: &str| format!("sampleMetadata[{index}].{name}");
        check_length(
            &field("compoundName"),
            Some(&item.compound_name),
            1,
            MAX_COMPOUND_NAME,
        )?;
        check_length(&field("lotNumber"), item.lot_number.as_deref(), 0, MAX_LOT_NUMBER)?;
        check_length(
            &field("matrixNotes"),
            item.matrix_notes.as_deref(),
            0,
            MAX_MATRIX_NOTES,
        )?;
        let present = |value: &Option<String>| value.as_deref().is_some_and(|text| !text.is_empty());
        if !present(&item.lot_number) && !present(&item.matrix_notes) {
            let message = "each sampleMetadata item needs lotNumber or matrixNotes";
            return Err(invalid(&format!("sampleMetadata[{index}]"), message));
        }
        if !seen.insert(item.compound_name.clone()) {
            let message = format!(
                "compound {:?} appears twice in sampleMetadata",
                item.compound_name
            );
            return Err(ApiError::field(
                ErrorCode::DuplicateCompound,
                &field("compoundName"),
                message,
            ));
        }
        validated.push(SampleMetadata {
            compound_name: item.compound_name,
            lot_number: item.lot_number,
            matrix_notes: item.matrix_notes,
        });
    }
    Ok(validated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, lot: Option<&str>, notes: Option<&str>) -> UncheckedSampleMetadata {
        UncheckedSampleMetadata {
            compound_name: name.into(),
            lot_number: lot.map(Into::into),
            matrix_notes: notes.map(Into::into),
        }
    }

    fn refused(items: Vec<UncheckedSampleMetadata>) -> (ErrorCode, String) {
        let error = validate_sample_metadata(items).unwrap_err();
        let field = error
            .details
            .as_ref()
            .and_then(|d| d["field"].as_str())
            .unwrap_or_default()
            .to_owned();
        (error.code, field)
    }

    #[test]
    fn sample_metadata_items_are_checked_and_named_by_index() {
        let many = (0..51)
            .map(|i| item(&format!("c{i}"), Some("lot"), None))
            .collect();
        let cases = [
            (many, "sampleMetadata"),
            (
                vec![item("a", Some("l"), None), item("", Some("l"), None)],
                "sampleMetadata[1].compoundName",
            ),
            (
                vec![item(&"c".repeat(201), Some("l"), None)],
                "sampleMetadata[0].compoundName",
            ),
            (
                vec![item("a", Some(&"l".repeat(201)), None)],
                "sampleMetadata[0].lotNumber",
            ),
            (
                vec![item("a", None, Some(&"m".repeat(2001)))],
                "sampleMetadata[0].matrixNotes",
            ),
            (vec![item("a", None, None)], "sampleMetadata[0]"),
            (vec![item("a", Some(""), Some(""))], "sampleMetadata[0]"),
        ];
        for (items, field) in cases {
            assert_eq!(refused(items), (ErrorCode::InvalidRequest, field.to_owned()));
        }
        let fifty: Vec<_> = (0..50)
            .map(|i| item(&format!("c{i}"), None, Some("powder")))
            .collect();
        assert_eq!(validate_sample_metadata(fifty).unwrap().len(), 50);
        let edges = vec![item(
            &"c".repeat(200),
            Some(&"l".repeat(200)),
            Some(&"m".repeat(2000)),
        )];
        assert!(validate_sample_metadata(edges).is_ok());
    }

    #[test]
    fn a_compound_named_twice_is_a_duplicate_even_when_other_fields_differ() {
        let items = vec![
            item("Caffeine", Some("1"), None),
            item("caffeine", Some("2"), None),
            item("Caffeine", None, Some("x")),
        ];
        assert_eq!(
            refused(items),
            (
                ErrorCode::DuplicateCompound,
                "sampleMetadata[2].compoundName".to_owned()
            )
        );
    }
}

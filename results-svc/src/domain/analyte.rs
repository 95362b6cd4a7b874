//! Validation of the per-analyte rows an analyst records: a decimal value (as text, never a
//! float) or a qualifier, the unit, LOQ/LOD, a specification with its pass/fail outcome, method
//! and instrument. Errors name `results[i].<field>`.

use super::coa::AnalyteRow;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::principal::OperatorRef;

/// Qualifiers that may stand instead of (or beside) a value.
pub const QUALIFIERS: [&str; 6] = ["<LOQ", "<LOD", "ND", ">ULOQ", "detected", "not_detected"];
/// Outcomes against a specification.
pub const OUTCOMES: [&str; 2] = ["pass", "fail"];
/// Most rows one call records.
pub const MAX_ROWS: usize = 200;

/// A row as it arrived.
#[derive(Clone, Debug, Default)]
pub struct UncheckedRow {
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
    pub measured_at: Option<DateTime<Utc>>,
}

fn invalid(field: String, message: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, &field, message)
}

/// True for a plain decimal: optional minus, digits, optional fraction.
pub fn is_decimal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    !whole.is_empty()
        && !fraction.is_empty()
        && whole.len() <= 18
        && fraction.len() <= 9
        && whole.chars().all(|c| c.is_ascii_digit())
        && fraction.chars().all(|c| c.is_ascii_digit())
}

fn text(field: String, value: &str, max: usize) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max {
        return Err(invalid(field, &format!("must be 1 to {max} characters")));
    }
    Ok(value.to_owned())
}

fn optional_decimal(field: String, value: Option<String>) -> Result<Option<String>, ApiError> {
    match value.filter(|value| !value.is_empty()) {
        Some(value) if is_decimal(&value) => Ok(Some(value)),
        Some(_) => Err(invalid(field, "must be a decimal number such as 0.05")),
        None => Ok(None),
    }
}

/// Checks rows for a sample whose tests are `test_ids`, stamping `analyst` and `now` (when a
/// row names no measurement time).
pub fn check_rows(
    rows: Vec<UncheckedRow>,
    test_ids: &[String],
    analyst: &OperatorRef,
    now: DateTime<Utc>,
) -> Result<Vec<AnalyteRow>, ApiError> {
    if rows.is_empty() || rows.len() > MAX_ROWS {
        return Err(invalid("results".into(), "list 1 to 200 analyte rows"));
    }
    let mut checked: Vec<AnalyteRow> = Vec::with_capacity(rows.len());
    for (index, row) in rows.into_iter().enumerate() {
        let field = |name: &str| format!("results[{index}].{name}");
        let analyte = text(field("analyte"), &row.analyte, 100)?;
        if checked.iter().any(|seen| seen.analyte == analyte) {
            return Err(invalid(field("analyte"), "the analyte is listed twice"));
        }
        if !test_ids.contains(&row.test_id) {
            return Err(
                invalid(field("testId"), "the sample's order line has no such test")
                    .with_details(serde_json::json!({ "field": field("testId"), "allowed": test_ids })),
            );
        }
        let value = optional_decimal(field("value"), row.value)?;
        let qualifier = row.qualifier.filter(|qualifier| !qualifier.is_empty());
        if let Some(qualifier) = &qualifier
            && !QUALIFIERS.contains(&qualifier.as_str())
        {
            return Err(invalid(field("qualifier"), "not a known qualifier")
                .with_details(serde_json::json!({ "field": field("qualifier"), "allowed": QUALIFIERS })));
        }
        if value.is_none() && qualifier.is_none() {
            return Err(invalid(field("value"), "give a value or a qualifier"));
        }
        let specification = match row.specification.filter(|spec| !spec.trim().is_empty()) {
            Some(spec) => Some(text(field("specification"), &spec, 60)?),
            None => None,
        };
        let outcome = row.outcome.filter(|outcome| !outcome.is_empty());
        match (&specification, &outcome) {
            (Some(_), Some(outcome)) if OUTCOMES.contains(&outcome.as_str()) => {}
            (Some(_), _) => {
                return Err(invalid(
                    field("outcome"),
                    "a specification needs outcome pass or fail",
                ));
            }
            (None, Some(_)) => return Err(invalid(field("outcome"), "an outcome needs a specification")),
            (None, None) => {}
        }
        checked.push(AnalyteRow {
            analyte,
            test_id: row.test_id,
            value,
            qualifier,
            unit: text(field("unit"), &row.unit, 30)?,
            loq: optional_decimal(field("loq"), row.loq)?,
            lod: optional_decimal(field("lod"), row.lod)?,
            specification,
            outcome,
            method: text(field("method"), &row.method, 100)?,
            instrument: text(field("instrument"), &row.instrument, 100)?,
            analyst: analyst.name.clone(),
            analyst_id: Some(analyst.id),
            measured_at: row.measured_at.unwrap_or(now),
        });
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> UncheckedRow {
        UncheckedRow {
            analyte: "Lead (Pb)".into(),
            test_id: "icpms-metals".into(),
            value: None,
            qualifier: Some("<LOQ".into()),
            unit: "ppm".into(),
            loq: Some("0.05".into()),
            specification: Some("<= 0.5".into()),
            outcome: Some("pass".into()),
            method: "USP <233>".into(),
            instrument: "ICP-MS-01".into(),
            ..UncheckedRow::default()
        }
    }

    fn ana() -> OperatorRef {
        OperatorRef {
            id: uuid::Uuid::from_u128(7),
            name: "ana".into(),
        }
    }

    fn tests() -> Vec<String> {
        vec!["icpms-metals".into()]
    }

    #[test]
    fn a_qualifier_may_stand_instead_of_a_value() {
        let rows = check_rows(vec![row()], &tests(), &ana(), platform::time::now()).unwrap();
        assert_eq!(rows[0].qualifier.as_deref(), Some("<LOQ"));
        assert_eq!(rows[0].analyst, "ana");
        assert_eq!(rows[0].analyst_id, Some(ana().id));
    }

    #[test]
    fn values_are_decimals_and_rows_need_a_value_or_qualifier() {
        assert!(is_decimal("99.10") && is_decimal("-0.5") && is_decimal("12"));
        assert!(!is_decimal("1e3") && !is_decimal("abc") && !is_decimal(".5") && !is_decimal("5."));
        let mut bad = row();
        bad.qualifier = None;
        let error = check_rows(vec![bad], &tests(), &ana(), platform::time::now()).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "results[0].value");
        let mut bad = row();
        bad.value = Some("1,5".into());
        let error = check_rows(vec![bad], &tests(), &ana(), platform::time::now()).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "results[0].value");
    }

    #[test]
    fn the_test_must_belong_to_the_sample_and_a_specification_needs_an_outcome() {
        let mut bad = row();
        bad.test_id = "endotoxin".into();
        let error = check_rows(vec![bad], &tests(), &ana(), platform::time::now()).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "results[0].testId");
        let mut bad = row();
        bad.outcome = None;
        let error = check_rows(vec![bad], &tests(), &ana(), platform::time::now()).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "results[0].outcome");
    }
}

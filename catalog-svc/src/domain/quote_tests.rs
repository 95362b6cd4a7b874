//! Unit tests of quote validation and pricing against the fixture catalog.

use super::*;
use crate::domain::fixture;

fn request(category: &str, compounds: &[&str], tests: &[&str]) -> QuoteRequest {
    QuoteRequest {
        category_id: category.to_owned(),
        compound_names: compounds.iter().map(|name| (*name).to_owned()).collect(),
        test_ids: tests.iter().map(|id| (*id).to_owned()).collect(),
        turnaround: None,
        conformity_samples: None,
    }
}

fn rejected(request: &QuoteRequest, code: ErrorCode, field: &str) {
    let error = price(&fixture::catalog(), request).unwrap_err();
    assert_eq!(error.code, code, "{}", error.message);
    assert_eq!(error.details.unwrap()["field"], field);
}

#[test]
fn pricing_is_exact_with_half_cent_surcharge_rounding_away_from_zero() {
    let mut quote = request(
        "purity",
        &["BPC-157", " TB-500 ", "GHK-Cu"],
        &["hplc-potency", "purity-panel"],
    );
    quote.turnaround = Some("expedited".into());
    quote.conformity_samples = Some(3);
    let priced = price(&fixture::catalog(), &quote).unwrap();
    assert_eq!(priced.lines.len(), 3);
    assert_eq!(priced.lines[1].compound_name, "TB-500");
    assert_eq!(priced.lines[2].line_number, 3);
    for line in &priced.lines {
        assert_eq!(line.subtotal_cents, 12_345 + 22_000);
        assert_eq!(line.items[1].test_ids, ["residual-solvents", "heavy-metals"]);
        let containers: Vec<&str> = line
            .sample_requirements
            .iter()
            .map(|r| r.container.as_str())
            .collect();
        assert_eq!(
            containers,
            ["2 mL amber glass vial", "10 mL headspace vial", "15 mL tube"]
        );
    }
    assert_eq!(priced.analysis_subtotal, Cents(103_035));
    // 103 035 × 50 % = 51 517.5, rounded half away from zero.
    assert_eq!(priced.charges[0].kind, CHARGE_TURNAROUND);
    assert_eq!(priced.charges[0].amount_cents, 51_518);
    assert_eq!(priced.charges[1].kind, CHARGE_CONFORMITY);
    assert_eq!(
        (priced.charges[1].quantity, priced.charges[1].unit_price_cents),
        (3, 1_000)
    );
    assert_eq!(priced.charges[1].amount_cents, 3_000);
    assert_eq!(priced.total, Cents(103_035 + 51_518 + 3_000));
    assert_eq!(
        (priced.turnaround.as_str(), priced.turnaround_business_days),
        ("expedited", 5)
    );
}

#[test]
fn the_standard_turnaround_without_conformity_samples_adds_no_charge() {
    let priced = price(
        &fixture::catalog(),
        &request("potency", &["A"], &["heavy-metals"]),
    )
    .unwrap();
    assert!(priced.charges.is_empty());
    assert_eq!(priced.turnaround, "standard");
    assert_eq!(priced.total, Cents(15_050));
}

#[test]
fn category_errors_name_category_id() {
    rejected(
        &request("", &["A"], &["heavy-metals"]),
        ErrorCode::InvalidRequest,
        "categoryId",
    );
    rejected(
        &request("toxicology", &["A"], &["heavy-metals"]),
        ErrorCode::UnknownCategory,
        "categoryId",
    );
}

#[test]
fn compound_name_errors_name_the_offending_entry() {
    rejected(
        &request("purity", &[], &["heavy-metals"]),
        ErrorCode::InvalidRequest,
        "compoundNames",
    );
    let many: Vec<String> = (0..51).map(|n| format!("c{n}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    rejected(
        &request("purity", &many, &["heavy-metals"]),
        ErrorCode::InvalidRequest,
        "compoundNames",
    );
    rejected(
        &request("purity", &["A", "  "], &["heavy-metals"]),
        ErrorCode::InvalidRequest,
        "compoundNames[1]",
    );
    let long = "x".repeat(201);
    rejected(
        &request("purity", &[&long], &["heavy-metals"]),
        ErrorCode::InvalidRequest,
        "compoundNames[0]",
    );
    rejected(
        &request("purity", &["A", "B", " A"], &["heavy-metals"]),
        ErrorCode::DuplicateCompound,
        "compoundNames[2]",
    );
    assert!(
        price(
            &fixture::catalog(),
            &request("purity", &["A", "a"], &["heavy-metals"])
        )
        .is_ok()
    );
    assert!(
        price(
            &fixture::catalog(),
            &request("purity", &[&"é".repeat(200)], &["heavy-metals"])
        )
        .is_ok()
    );
}

#[test]
fn test_id_errors_name_the_offending_entry() {
    rejected(
        &request("purity", &["A"], &[]),
        ErrorCode::InvalidRequest,
        "testIds",
    );
    let many = vec!["heavy-metals"; 51];
    rejected(
        &request("purity", &["A"], &many),
        ErrorCode::InvalidRequest,
        "testIds",
    );
    rejected(
        &request("purity", &["A"], &["heavy-metals", "nmr"]),
        ErrorCode::UnknownTest,
        "testIds[1]",
    );
    rejected(
        &request("potency", &["A"], &["residual-solvents"]),
        ErrorCode::TestNotInCategory,
        "testIds[0]",
    );
    rejected(
        &request("purity", &["A"], &["heavy-metals", "heavy-metals"]),
        ErrorCode::DuplicateTest,
        "testIds[1]",
    );
    rejected(
        &request("purity", &["A"], &["purity-panel", "heavy-metals"]),
        ErrorCode::DuplicateTest,
        "testIds[1]",
    );
}

#[test]
fn turnaround_and_conformity_errors_name_their_fields() {
    let mut quote = request("purity", &["A"], &["heavy-metals"]);
    quote.turnaround = Some("overnight".into());
    rejected(&quote, ErrorCode::UnknownTurnaround, "turnaround");
    quote.turnaround = None;
    quote.conformity_samples = Some(-1);
    rejected(&quote, ErrorCode::InvalidRequest, "conformitySamples");
    quote.conformity_samples = Some(101);
    rejected(&quote, ErrorCode::InvalidRequest, "conformitySamples");
    quote.conformity_samples = Some(100);
    assert_eq!(
        price(&fixture::catalog(), &quote).unwrap().total,
        Cents(15_050 + 100 * 1_000)
    );
}

#[test]
fn an_amount_that_overflows_is_an_invalid_request() {
    let mut value = fixture::document_json();
    value["tests"][2]["priceCents"] = serde_json::json!(i64::MAX / 2);
    let parsed = crate::domain::document::parse(&value.to_string()).unwrap();
    let catalog = Catalog::from_document(parsed.document).unwrap();
    let error = price(&catalog, &request("purity", &["A", "B", "C"], &["heavy-metals"])).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
}

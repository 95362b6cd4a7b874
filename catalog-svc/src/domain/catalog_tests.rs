//! Unit tests of catalog document validation: each rule broken once, with its exact path.

use super::*;
use crate::domain::document;
use crate::domain::fixture;
use serde_json::{Value, json};

fn validate(value: &Value) -> Result<Catalog, ApiError> {
    let parsed = document::parse(&value.to_string())?;
    Catalog::from_document(parsed.document)
}

fn rejected_at(mutate: impl FnOnce(&mut Value), path: &str, words: &str) {
    let mut value = fixture::document_json();
    mutate(&mut value);
    let error = validate(&value).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    let details = error.details.clone().unwrap();
    assert_eq!(details["field"], "documentJson");
    assert_eq!(details["path"], path, "{}", error.message);
    assert!(
        error.message.contains(words),
        "{:?} does not mention {words:?}",
        error.message
    );
}

#[test]
fn the_fixture_is_valid_and_items_are_sorted_by_id() {
    let catalog = fixture::catalog();
    let ids: Vec<&str> = catalog.items.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        [
            "heavy-metals",
            "hplc-potency",
            "purity-panel",
            "residual-solvents"
        ]
    );
    assert_eq!(catalog.counts(), (3, 1));
    assert_eq!(
        catalog.item("purity-panel").unwrap().covered_tests(),
        ["residual-solvents", "heavy-metals"]
    );
}

#[test]
fn a_bundle_id_that_repeats_a_test_id_is_refused() {
    rejected_at(
        |v| v["bundles"][0]["id"] = json!("heavy-metals"),
        "bundles[0].id",
        "duplicate id",
    );
}

#[test]
fn duplicate_test_ids_are_refused() {
    rejected_at(
        |v| v["tests"][1]["id"] = json!("hplc-potency"),
        "tests[1].id",
        "duplicate id",
    );
}

#[test]
fn unknown_references_are_refused() {
    rejected_at(
        |v| v["tests"][0]["categoryIds"][1] = json!("nope"),
        "tests[0].categoryIds[1]",
        "unknown category",
    );
    rejected_at(
        |v| v["categories"][1]["matrixIds"][0] = json!("gel"),
        "categories[1].matrixIds[0]",
        "unknown matrix",
    );
    rejected_at(
        |v| v["bundles"][0]["testIds"][0] = json!("nmr"),
        "bundles[0].testIds[0]",
        "unknown test",
    );
    rejected_at(
        |v| v["bundles"][0]["categoryIds"][0] = json!("x"),
        "bundles[0].categoryIds[0]",
        "unknown category",
    );
}

#[test]
fn a_bundle_may_not_contain_another_bundle() {
    rejected_at(
        |v| v["bundles"][0]["testIds"][0] = json!("purity-panel"),
        "bundles[0].testIds[0]",
        "unknown test",
    );
}

#[test]
fn bundle_tests_must_be_allowed_in_every_category_of_the_bundle() {
    rejected_at(
        |v| v["bundles"][0]["categoryIds"] = json!(["purity", "potency"]),
        "bundles[0].testIds",
        "\"residual-solvents\" is not allowed in category \"potency\"",
    );
}

#[test]
fn prices_must_be_positive() {
    rejected_at(
        |v| v["tests"][2]["priceCents"] = json!(0),
        "tests[2].priceCents",
        "> 0",
    );
    rejected_at(
        |v| v["bundles"][0]["priceCents"] = json!(-5),
        "bundles[0].priceCents",
        "> 0",
    );
    rejected_at(
        |v| v["categories"][0]["conformitySamplePriceCents"] = json!(-1),
        "categories[0].conformitySamplePriceCents",
        ">= 0",
    );
}

#[test]
fn the_standard_turnaround_is_required_and_surcharges_are_not_negative() {
    rejected_at(
        |v| v["turnarounds"][0]["id"] = json!("normal"),
        "turnarounds",
        "\"standard\"",
    );
    rejected_at(
        |v| v["turnarounds"][1]["surchargeBasisPoints"] = json!(-100),
        "turnarounds[1].surchargeBasisPoints",
        ">= 0",
    );
}

#[test]
fn a_missing_sample_requirement_is_a_parse_error() {
    let mut value = fixture::document_json();
    value["tests"][0]
        .as_object_mut()
        .unwrap()
        .remove("sampleRequirement");
    let error = validate(&value).unwrap_err();
    assert!(error.message.contains("sampleRequirement"), "{}", error.message);
}

#[test]
fn the_shipped_catalog_document_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalog.json");
    let text = std::fs::read_to_string(path).expect("data/catalog.json is readable");
    let parsed = document::parse(&text).expect("data/catalog.json parses");
    let catalog = Catalog::from_document(parsed.document).expect("data/catalog.json is valid");
    let (tests, bundles) = catalog.counts();
    assert!(tests > 0 && bundles > 0);
    assert!(catalog.turnaround(STANDARD_TURNAROUND).is_some());
}

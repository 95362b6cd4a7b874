//! Add-ons: more tests on the retained sample of one order line (docs/order-states.md,
//! "Add-ons"). The rules here decide what may be ordered and what it costs; the use case
//! (`crate::service::addons`) reads the order, its sample and the catalog revision and applies
//! them.
//!
//! - The lab must hold the line's sample: the order is `sample_received`, `in_lab`, `reporting`
//!   or `completed` (`addon_sample_not_held` before receipt and for a cancelled order).
//! - The retained portion lasts [`super::sample::RETENTION_DAYS`] from receipt
//!   (`sample_retention_expired` from `retain_until` on); a disposed sample, or one logged
//!   `insufficient`, has nothing left (`sample_consumed`).
//! - Each test must exist in the order's catalog revision as a test (`unknown_test`), be offered
//!   in the order's category, which is the sample's matrix (`addon_matrix_mismatch`), and not
//!   be on the line or an earlier add-on already (`invalid_request`).
//! - Amount: the lab reserves one received unit per test; the retained units are the received
//!   units less the line's tests and the tests of earlier add-ons (`addon_sample_insufficient`).
//! - Price: each test at its price in the order's catalog revision (per sample line, the
//!   catalog's unit); the total is their sum, in integer cents.

use super::order::OrderLine;
pub use super::order::{Addon, AddonInvoice, AddonStatus, AddonTest};
use super::sample::Sample;
use super::status::OrderStatus;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;

/// Most tests in one add-on.
pub const MAX_TESTS: usize = 20;

/// A test as the catalog revision offers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogTest {
    pub id: String,
    /// "test" or "bundle".
    pub kind: String,
    pub name: String,
    pub category_ids: Vec<String>,
    pub price: Cents,
}

/// Checks the requested test ids: 1 to [`MAX_TESTS`], trimmed, each once.
pub fn check_test_ids(test_ids: &[String]) -> Result<Vec<String>, ApiError> {
    if test_ids.is_empty() || test_ids.len() > MAX_TESTS {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "testIds",
            format!("list 1 to {MAX_TESTS} test ids"),
        ));
    }
    let mut checked: Vec<String> = Vec::with_capacity(test_ids.len());
    for (index, test_id) in test_ids.iter().enumerate() {
        let test_id = test_id.trim();
        if test_id.is_empty() || test_id.len() > 100 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                &format!("testIds[{index}]"),
                "a test id is 1 to 100 characters",
            ));
        }
        if checked.iter().any(|seen| seen == test_id) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                &format!("testIds[{index}]"),
                "the test is listed twice",
            ));
        }
        checked.push(test_id.to_owned());
    }
    Ok(checked)
}

/// Refuses an order whose sample the lab does not hold.
pub fn check_order_holds_sample(status: OrderStatus, order_number: &str) -> Result<(), ApiError> {
    match status {
        OrderStatus::SampleReceived | OrderStatus::InLab | OrderStatus::Reporting | OrderStatus::Completed => Ok(()),
        OrderStatus::Cancelled => Err(ApiError::new(
            ErrorCode::AddonSampleNotHeld,
            format!("order {order_number} is cancelled: the lab keeps no sample of it for add-on tests"),
        )),
        status => Err(ApiError::new(
            ErrorCode::AddonSampleNotHeld,
            format!(
                "order {order_number} is {}: add-on tests can be ordered once the lab has received the sample",
                status.as_str()
            ),
        )
        .with_details(serde_json::json!({ "status": status.as_str() }))),
    }
}

/// The line's logged sample, if it can still be tested at `now`.
pub fn check_sample(samples: &[Sample], line_number: i32, now: DateTime<Utc>) -> Result<&Sample, ApiError> {
    let sample = samples
        .iter()
        .find(|sample| sample.line_number == line_number)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::AddonSampleNotHeld,
                format!("the sample of line {line_number} has not been received"),
            )
        })?;
    if sample.disposed_at.is_some() {
        return Err(ApiError::new(
            ErrorCode::SampleConsumed,
            format!(
                "the retained portion of sample {} was disposed of",
                sample.accession_number
            ),
        ));
    }
    if sample.condition == "insufficient" {
        return Err(ApiError::new(
            ErrorCode::SampleConsumed,
            format!(
                "sample {} arrived insufficient: nothing is retained for more tests",
                sample.accession_number
            ),
        ));
    }
    if sample.retain_until <= now {
        return Err(ApiError::new(
            ErrorCode::SampleRetentionExpired,
            format!(
                "the retention period of sample {} ended; order a new test with a new sample",
                sample.accession_number
            ),
        )
        .with_details(serde_json::json!({ "retainUntil": platform::time::rfc3339(sample.retain_until) })));
    }
    Ok(sample)
}

/// Prices the requested tests from the catalog revision's `offered` tests, for a line in
/// `category_id` whose tests (line and earlier add-ons) are `ordered` and whose sample kept
/// `units` received units. The tests keep the requested order.
pub fn price_tests(
    requested: &[String],
    offered: &[CatalogTest],
    category_id: &str,
    ordered: &[String],
    units: i32,
) -> Result<(Vec<AddonTest>, Cents), ApiError> {
    let mut tests = Vec::with_capacity(requested.len());
    for (index, test_id) in requested.iter().enumerate() {
        let field = format!("testIds[{index}]");
        let test = offered
            .iter()
            .find(|test| &test.id == test_id && test.kind == "test")
            .ok_or_else(|| {
                ApiError::field(
                    ErrorCode::UnknownTest,
                    &field,
                    format!("test {test_id:?} is not in the catalog revision the order was priced with"),
                )
            })?;
        if !test.category_ids.iter().any(|category| category == category_id) {
            return Err(ApiError::new(
                ErrorCode::AddonMatrixMismatch,
                format!("test {test_id:?} is not offered for samples of category {category_id:?}"),
            )
            .with_details(serde_json::json!({ "field": field, "categoryId": category_id })));
        }
        if ordered.contains(test_id) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                &field,
                format!("test {test_id:?} is already ordered on this sample"),
            ));
        }
        tests.push(AddonTest {
            test_id: test.id.clone(),
            name: test.name.clone(),
            price_cents: test.price.0,
        });
    }
    let available = i64::from(units) - ordered.len() as i64;
    let needed = tests.len() as i64;
    if needed > available {
        return Err(ApiError::new(
            ErrorCode::AddonSampleInsufficient,
            format!(
                "the retained sample keeps {} unit(s) for more tests; {needed} test(s) need one unit each",
                available.max(0)
            ),
        )
        .with_details(serde_json::json!({ "unitsAvailable": available.max(0), "unitsNeeded": needed })));
    }
    let total = Cents::sum(tests.iter().map(|test| Cents(test.price_cents)))
        .ok_or_else(|| ApiError::internal("add-on prices overflow"))?;
    Ok((tests, total))
}

/// The tests already ordered on `line`: its items' tests, then those of earlier add-ons.
pub fn ordered_tests(line: &OrderLine, earlier: &[Addon]) -> Vec<String> {
    let mut ordered = super::order::line_test_ids(&line.items);
    for addon in earlier
        .iter()
        .filter(|addon| addon.line_number == line.line_number)
    {
        for test in &addon.tests {
            if !ordered.contains(&test.test_id) {
                ordered.push(test.test_id.clone());
            }
        }
    }
    ordered
}

/// The invoice lines of an add-on: one per test, quantity 1.
pub fn invoice_lines(addon: &Addon, compound: &str) -> Vec<super::order::InvoiceLine> {
    addon
        .tests
        .iter()
        .map(|test| super::order::InvoiceLine {
            description: format!(
                "Add-on {} ({compound}, {}): {}",
                addon.order_number, addon.accession_number, test.name
            ),
            quantity: 1,
            unit_price: Cents(test.price_cents),
            amount: Cents(test.price_cents),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use OrderStatus::*;

    fn offered() -> Vec<CatalogTest> {
        let test = |id: &str, price: i64, categories: &[&str]| CatalogTest {
            id: id.into(),
            kind: "test".into(),
            name: id.to_uppercase(),
            category_ids: categories.iter().map(|c| (*c).to_owned()).collect(),
            price: Cents(price),
        };
        let mut tests = vec![
            test("purity", 10_000, &["peptides"]),
            test("endotoxin", 7_500, &["peptides"]),
            test("heavy-metals", 9_000, &["peptides", "cannabis"]),
            test("terpenes", 8_000, &["cannabis"]),
        ];
        tests.push(CatalogTest {
            kind: "bundle".into(),
            ..test("full-panel", 20_000, &["peptides"])
        });
        tests
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn only_orders_whose_sample_the_lab_holds_take_add_ons() {
        for status in [SampleReceived, InLab, Reporting, Completed] {
            assert!(check_order_holds_sample(status, "ORD-1").is_ok(), "{status:?}");
        }
        for status in [InvoiceSent, Overdue, Paid, LabelGenerated, InTransit, Cancelled] {
            assert_eq!(
                check_order_holds_sample(status, "ORD-1").unwrap_err().code,
                ErrorCode::AddonSampleNotHeld,
                "{status:?}"
            );
        }
    }

    #[test]
    fn tests_are_priced_from_the_revision_and_summed_in_cents() {
        let (tests, total) = price_tests(
            &ids(&["endotoxin", "heavy-metals"]),
            &offered(),
            "peptides",
            &ids(&["purity"]),
            3,
        )
        .unwrap();
        assert_eq!(tests.len(), 2);
        assert_eq!(tests[0].price_cents, 7_500);
        assert_eq!(total, Cents(16_500));
    }

    #[test]
    fn unknown_tests_bundles_other_matrices_and_repeats_are_refused() {
        let refuse = |requested: &[&str]| {
            price_tests(&ids(requested), &offered(), "peptides", &ids(&["purity"]), 10)
                .unwrap_err()
                .code
        };
        assert_eq!(refuse(&["nope"]), ErrorCode::UnknownTest);
        assert_eq!(refuse(&["full-panel"]), ErrorCode::UnknownTest);
        assert_eq!(refuse(&["terpenes"]), ErrorCode::AddonMatrixMismatch);
        assert_eq!(refuse(&["purity"]), ErrorCode::InvalidRequest);
    }

    #[test]
    fn each_test_needs_one_retained_unit() {
        let at_limit = price_tests(&ids(&["endotoxin"]), &offered(), "peptides", &ids(&["purity"]), 2);
        assert!(at_limit.is_ok());
        let error = price_tests(
            &ids(&["endotoxin", "heavy-metals"]),
            &offered(),
            "peptides",
            &ids(&["purity"]),
            2,
        )
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::AddonSampleInsufficient);
        assert_eq!(error.details.unwrap()["unitsAvailable"], 1);
    }

    #[test]
    fn test_ids_are_one_to_twenty_distinct_values() {
        assert!(check_test_ids(&[]).is_err());
        assert!(check_test_ids(&ids(&["a", "a"])).is_err());
        assert!(check_test_ids(&vec!["a".to_owned(); MAX_TESTS + 1]).is_err());
        assert_eq!(check_test_ids(&ids(&[" a ", "b"])).unwrap(), ids(&["a", "b"]));
    }
}

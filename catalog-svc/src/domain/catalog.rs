//! The validated catalog of one revision: items (tests and bundles) sorted by id, categories,
//! matrices and turnarounds, built from a [`CatalogDocument`] only when every rule holds.
//!
//! Rules: ids are non-empty and unique (tests and bundles share one id space); every reference
//! resolves (category matrices, test categories and matrices, bundle categories and tests); a
//! bundle's tests are all allowed in each category the bundle lists; test and bundle prices are
//! > 0; conformity prices, business days and surcharges are >= 0; turnaround `standard` exists.

use super::document::{CatalogDocument, CategoryDoc, MatrixDoc, TurnaroundDoc};
pub use super::item::{CatalogItem, ItemKind};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use std::collections::{BTreeMap, HashSet};

/// The turnaround that applies when a quote names none; every catalog must offer it.
pub const STANDARD_TURNAROUND: &str = "standard";

/// A validated catalog.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub categories: Vec<CategoryDoc>,
    pub matrices: Vec<MatrixDoc>,
    pub turnarounds: Vec<TurnaroundDoc>,
    /// Tests and bundles by id (sorted).
    pub items: BTreeMap<String, CatalogItem>,
}

fn invalid(path: String, message: String) -> ApiError {
    ApiError::field(
        ErrorCode::InvalidRequest,
        "documentJson",
        format!("the catalog document is invalid: {path}: {message}"),
    )
    .with_details(serde_json::json!({ "path": path }))
}

/// Checks that ids of one list are non-empty and unique.
fn unique_ids<'a>(
    list: &str,
    ids: impl Iterator<Item = &'a str>,
    seen: &mut HashSet<String>,
) -> Result<(), ApiError> {
    for (index, id) in ids.enumerate() {
        if id.trim().is_empty() || id.trim() != id {
            return Err(invalid(
                format!("{list}[{index}].id"),
                "ids must be non-empty without surrounding spaces".into(),
            ));
        }
        if !seen.insert(id.to_owned()) {
            return Err(invalid(
                format!("{list}[{index}].id"),
                format!("duplicate id {id:?}"),
            ));
        }
    }
    Ok(())
}

/// Checks that every reference in `refs` is in `known` (and listed once).
fn resolve(path: &str, refs: &[String], known: &HashSet<String>, what: &str) -> Result<(), ApiError> {
    let mut seen = HashSet::new();
    for (index, reference) in refs.iter().enumerate() {
        if !known.contains(reference) {
            return Err(invalid(
                format!("{path}[{index}]"),
                format!("unknown {what} {reference:?}"),
            ));
        }
        if !seen.insert(reference) {
            return Err(invalid(
                format!("{path}[{index}]"),
                format!("{what} {reference:?} is listed twice"),
            ));
        }
    }
    Ok(())
}

fn non_empty(path: String, value: &str) -> Result<(), ApiError> {
    if value.trim().is_empty() {
        Err(invalid(path, "must not be empty".into()))
    } else {
        Ok(())
    }
}

impl Catalog {
    /// Validates a document into a catalog; `invalid_request` naming the first offending path.
    pub fn from_document(document: CatalogDocument) -> Result<Catalog, ApiError> {
        let CatalogDocument {
            categories,
            matrices,
            turnarounds,
            tests,
            bundles,
        } = document;
        let mut seen = HashSet::new();
        unique_ids("matrices", matrices.iter().map(|m| m.id.as_str()), &mut seen)?;
        let matrix_ids = std::mem::take(&mut seen);
        unique_ids("categories", categories.iter().map(|c| c.id.as_str()), &mut seen)?;
        let category_ids = std::mem::take(&mut seen);
        unique_ids(
            "turnarounds",
            turnarounds.iter().map(|t| t.id.as_str()),
            &mut seen,
        )?;
        seen.clear();
        unique_ids("tests", tests.iter().map(|t| t.id.as_str()), &mut seen)?;
        let test_ids = seen.clone();
        unique_ids("bundles", bundles.iter().map(|b| b.id.as_str()), &mut seen)?;

        for (index, matrix) in matrices.iter().enumerate() {
            non_empty(format!("matrices[{index}].name"), &matrix.name)?;
        }
        for (index, category) in categories.iter().enumerate() {
            non_empty(format!("categories[{index}].name"), &category.name)?;
            resolve(
                &format!("categories[{index}].matrixIds"),
                &category.matrix_ids,
                &matrix_ids,
                "matrix",
            )?;
            if category.conformity_sample_price_cents < 0 {
                let path = format!("categories[{index}].conformitySamplePriceCents");
                return Err(invalid(path, "must be >= 0".into()));
            }
        }
        for (index, turnaround) in turnarounds.iter().enumerate() {
            non_empty(format!("turnarounds[{index}].name"), &turnaround.name)?;
            if turnaround.surcharge_basis_points < 0 {
                return Err(invalid(
                    format!("turnarounds[{index}].surchargeBasisPoints"),
                    "must be >= 0".into(),
                ));
            }
            if turnaround.business_days < 0 {
                return Err(invalid(
                    format!("turnarounds[{index}].businessDays"),
                    "must be >= 0".into(),
                ));
            }
        }
        if !turnarounds.iter().any(|t| t.id == STANDARD_TURNAROUND) {
            return Err(invalid(
                "turnarounds".into(),
                format!("the turnaround {STANDARD_TURNAROUND:?} is required"),
            ));
        }

        let mut items = BTreeMap::new();
        for (index, test) in tests.into_iter().enumerate() {
            let path = format!("tests[{index}]");
            non_empty(format!("{path}.name"), &test.name)?;
            resolve(
                &format!("{path}.categoryIds"),
                &test.category_ids,
                &category_ids,
                "category",
            )?;
            resolve(
                &format!("{path}.matrixIds"),
                &test.matrix_ids,
                &matrix_ids,
                "matrix",
            )?;
            if test.price_cents <= 0 {
                return Err(invalid(format!("{path}.priceCents"), "must be > 0".into()));
            }
            let item = CatalogItem {
                id: test.id.clone(),
                kind: ItemKind::Test,
                name: test.name,
                description: test.description,
                method: test.method,
                category_ids: test.category_ids,
                price: Cents(test.price_cents),
                test_ids: Vec::new(),
                sample_requirement: Some(test.sample_requirement),
            };
            items.insert(test.id, item);
        }
        for (index, bundle) in bundles.into_iter().enumerate() {
            let path = format!("bundles[{index}]");
            non_empty(format!("{path}.name"), &bundle.name)?;
            resolve(
                &format!("{path}.categoryIds"),
                &bundle.category_ids,
                &category_ids,
                "category",
            )?;
            resolve(&format!("{path}.testIds"), &bundle.test_ids, &test_ids, "test")?;
            if bundle.test_ids.is_empty() {
                return Err(invalid(
                    format!("{path}.testIds"),
                    "a bundle needs at least one test".into(),
                ));
            }
            if bundle.price_cents <= 0 {
                return Err(invalid(format!("{path}.priceCents"), "must be > 0".into()));
            }
            for category in &bundle.category_ids {
                if let Some(test) = bundle
                    .test_ids
                    .iter()
                    .find(|test| !items[*test].allowed_in(category))
                {
                    let message =
                        format!("test {test:?} is not allowed in category {category:?} of the bundle");
                    return Err(invalid(format!("{path}.testIds"), message));
                }
            }
            let item = CatalogItem {
                id: bundle.id.clone(),
                kind: ItemKind::Bundle,
                name: bundle.name,
                description: bundle.description,
                method: String::new(),
                category_ids: bundle.category_ids,
                price: Cents(bundle.price_cents),
                test_ids: bundle.test_ids,
                sample_requirement: None,
            };
            items.insert(bundle.id, item);
        }
        Ok(Catalog {
            categories,
            matrices,
            turnarounds,
            items,
        })
    }

    /// Number of tests and of bundles.
    pub fn counts(&self) -> (usize, usize) {
        let tests = self
            .items
            .values()
            .filter(|item| item.kind == ItemKind::Test)
            .count();
        (tests, self.items.len() - tests)
    }

    pub fn category(&self, id: &str) -> Option<&CategoryDoc> {
        self.categories.iter().find(|category| category.id == id)
    }

    pub fn turnaround(&self, id: &str) -> Option<&TurnaroundDoc> {
        self.turnarounds.iter().find(|turnaround| turnaround.id == id)
    }

    pub fn item(&self, id: &str) -> Option<&CatalogItem> {
        self.items.get(id)
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;

//! Quote requests, their validation against a catalog, and server-side pricing in integer cents.
//!
//! Each compound is its own sample line carrying every chosen item at its catalog price; the
//! analysis subtotal is the sum of the lines; a turnaround surcharge (basis points of the
//! analysis subtotal, half away from zero) and conformity samples (count × the category's price)
//! are charges outside the lines; the total is the subtotal plus the charges.

use super::catalog::{Catalog, STANDARD_TURNAROUND};
use super::document::SampleRequirement;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use uuid::Uuid;

/// Most compounds (sample lines) per quote.
pub const MAX_COMPOUNDS: usize = 50;
/// Longest compound name, in characters.
pub const MAX_COMPOUND_NAME_CHARS: usize = 200;
/// Most test and bundle ids per quote.
pub const MAX_TEST_IDS: usize = 50;
/// Most conformity samples per quote.
pub const MAX_CONFORMITY_SAMPLES: i64 = 100;
/// Currency of every amount.
pub const CURRENCY: &str = "USD";
/// Charge kind of the turnaround surcharge.
pub const CHARGE_TURNAROUND: &str = "turnaround_surcharge";
/// Charge kind of conformity samples.
pub const CHARGE_CONFORMITY: &str = "conformity_samples";

/// A quote request as the caller sent it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuoteRequest {
    pub category_id: String,
    pub compound_names: Vec<String>,
    pub test_ids: Vec<String>,
    /// `standard` when absent.
    pub turnaround: Option<String>,
    /// 0 when absent.
    pub conformity_samples: Option<i64>,
}

/// One priced item on a sample line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteItem {
    pub item_id: String,
    pub kind: String,
    pub name: String,
    pub price_cents: i64,
    pub test_ids: Vec<String>,
}

/// One sample line: one compound with its items.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteLine {
    pub line_number: i32,
    pub compound_name: String,
    pub items: Vec<QuoteItem>,
    pub subtotal_cents: i64,
    pub sample_requirements: Vec<SampleRequirement>,
}

/// A charge outside the sample lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteCharge {
    pub kind: String,
    pub description: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub amount_cents: i64,
}

/// The priced content of a quote, before it is stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PricedQuote {
    pub category_id: String,
    pub turnaround: String,
    pub turnaround_business_days: i32,
    pub conformity_samples: i64,
    pub lines: Vec<QuoteLine>,
    pub charges: Vec<QuoteCharge>,
    pub analysis_subtotal: Cents,
    pub total: Cents,
}

/// A stored, immutable quote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quote {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub catalog_revision: String,
    pub priced: PricedQuote,
    pub currency: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

fn field(code: ErrorCode, field: &str, message: impl Into<String>) -> ApiError {
    ApiError::field(code, field, message)
}

fn overflow() -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, "the quote amount is too large")
}

/// Validates the compound names: 1..=50, each trimmed 1..=200 characters, no exact duplicates.
fn compounds(names: &[String]) -> Result<Vec<String>, ApiError> {
    if names.is_empty() {
        return Err(field(
            ErrorCode::InvalidRequest,
            "compoundNames",
            "at least one compound name is required",
        ));
    }
    if names.len() > MAX_COMPOUNDS {
        let message = format!("at most {MAX_COMPOUNDS} compound names are allowed");
        return Err(field(ErrorCode::InvalidRequest, "compoundNames", message));
    }
    let mut seen = HashSet::new();
    let mut trimmed = Vec::with_capacity(names.len());
    for (index, name) in names.iter().enumerate() {
        let name = name.trim();
        let path = format!("compoundNames[{index}]");
        if name.is_empty() {
            return Err(field(
                ErrorCode::InvalidRequest,
                &path,
                "a compound name must not be empty",
            ));
        }
        if name.chars().count() > MAX_COMPOUND_NAME_CHARS {
            let message = format!("a compound name has at most {MAX_COMPOUND_NAME_CHARS} characters");
            return Err(field(ErrorCode::InvalidRequest, &path, message));
        }
        if !seen.insert(name) {
            return Err(field(
                ErrorCode::DuplicateCompound,
                &path,
                format!("the compound {name:?} appears twice"),
            ));
        }
        trimmed.push(name.to_owned());
    }
    Ok(trimmed)
}

/// Validates the items and prices one sample line's items.
fn items(catalog: &Catalog, category_id: &str, test_ids: &[String]) -> Result<Vec<QuoteItem>, ApiError> {
    if test_ids.is_empty() {
        return Err(field(
            ErrorCode::InvalidRequest,
            "testIds",
            "at least one test id is required",
        ));
    }
    if test_ids.len() > MAX_TEST_IDS {
        return Err(field(
            ErrorCode::InvalidRequest,
            "testIds",
            format!("at most {MAX_TEST_IDS} test ids are allowed"),
        ));
    }
    let mut covered = HashSet::new();
    let mut priced = Vec::with_capacity(test_ids.len());
    for (index, id) in test_ids.iter().enumerate() {
        let path = format!("testIds[{index}]");
        let Some(item) = catalog.item(id) else {
            return Err(field(
                ErrorCode::UnknownTest,
                &path,
                format!("unknown test or bundle {id:?}"),
            ));
        };
        if !item.allowed_in(category_id) {
            let message = format!("{id:?} cannot be quoted in category {category_id:?}");
            return Err(field(ErrorCode::TestNotInCategory, &path, message));
        }
        let tests = item.covered_tests();
        if let Some(test) = tests
            .iter()
            .find(|test| !covered.insert(test.as_str().to_owned()))
        {
            let message = format!("the test {test:?} is selected twice (directly or through a bundle)");
            return Err(field(ErrorCode::DuplicateTest, &path, message));
        }
        priced.push(QuoteItem {
            item_id: item.id.clone(),
            kind: item.kind.as_str().to_owned(),
            name: item.name.clone(),
            price_cents: item.price.0,
            test_ids: tests,
        });
    }
    Ok(priced)
}

/// Validates `request` against `catalog` and prices it.
pub fn price(catalog: &Catalog, request: &QuoteRequest) -> Result<PricedQuote, ApiError> {
    let category_id = request.category_id.as_str();
    if category_id.trim().is_empty() {
        return Err(field(
            ErrorCode::InvalidRequest,
            "categoryId",
            "categoryId is required",
        ));
    }
    let Some(category) = catalog.category(category_id) else {
        return Err(field(
            ErrorCode::UnknownCategory,
            "categoryId",
            format!("unknown category {category_id:?}"),
        ));
    };
    let compound_names = compounds(&request.compound_names)?;
    let line_items = items(catalog, category_id, &request.test_ids)?;
    let turnaround_id = request.turnaround.as_deref().unwrap_or(STANDARD_TURNAROUND);
    let Some(turnaround) = catalog.turnaround(turnaround_id) else {
        let message = format!("unknown turnaround {turnaround_id:?}");
        return Err(field(ErrorCode::UnknownTurnaround, "turnaround", message));
    };
    let conformity_samples = request.conformity_samples.unwrap_or(0);
    if !(0..=MAX_CONFORMITY_SAMPLES).contains(&conformity_samples) {
        let message = format!("conformitySamples must be between 0 and {MAX_CONFORMITY_SAMPLES}");
        return Err(field(ErrorCode::InvalidRequest, "conformitySamples", message));
    }

    let line_subtotal =
        Cents::sum(line_items.iter().map(|item| Cents(item.price_cents))).ok_or_else(overflow)?;
    let requirements: Vec<SampleRequirement> = line_items
        .iter()
        .flat_map(|item| item.test_ids.iter())
        .filter_map(|test| {
            catalog
                .item(test)
                .and_then(|test| test.sample_requirement.clone())
        })
        .collect();
    let lines: Vec<QuoteLine> = compound_names
        .into_iter()
        .enumerate()
        .map(|(index, compound_name)| QuoteLine {
            line_number: index as i32 + 1,
            compound_name,
            items: line_items.clone(),
            subtotal_cents: line_subtotal.0,
            sample_requirements: requirements.clone(),
        })
        .collect();
    let analysis_subtotal =
        Cents::sum(lines.iter().map(|line| Cents(line.subtotal_cents))).ok_or_else(overflow)?;

    let mut charges = Vec::new();
    let surcharge = analysis_subtotal
        .basis_points(i64::from(turnaround.surcharge_basis_points))
        .ok_or_else(overflow)?;
    if surcharge > Cents::ZERO {
        let bps = turnaround.surcharge_basis_points;
        charges.push(QuoteCharge {
            kind: CHARGE_TURNAROUND.to_owned(),
            description: format!(
                "{} turnaround surcharge (+{}.{:02} %)",
                turnaround.name,
                bps / 100,
                bps % 100
            ),
            quantity: 1,
            unit_price_cents: surcharge.0,
            amount_cents: surcharge.0,
        });
    }
    if conformity_samples > 0 {
        let unit = Cents(category.conformity_sample_price_cents);
        let amount = unit.checked_mul(conformity_samples).ok_or_else(overflow)?;
        charges.push(QuoteCharge {
            kind: CHARGE_CONFORMITY.to_owned(),
            description: format!("Conformity samples ({})", category.name),
            quantity: conformity_samples,
            unit_price_cents: unit.0,
            amount_cents: amount.0,
        });
    }
    let charges_total =
        Cents::sum(charges.iter().map(|charge| Cents(charge.amount_cents))).ok_or_else(overflow)?;
    let total = analysis_subtotal
        .checked_add(charges_total)
        .ok_or_else(overflow)?;
    Ok(PricedQuote {
        category_id: category_id.to_owned(),
        turnaround: turnaround.id.clone(),
        turnaround_business_days: turnaround.business_days,
        conformity_samples,
        lines,
        charges,
        analysis_subtotal,
        total,
    })
}

#[cfg(test)]
#[path = "quote_tests.rs"]
mod tests;

//! The catalog document as imported (format of `data/catalog.json`): strict serde shapes with
//! camelCase names and no unknown fields, plus its canonical JSON form and content hash.
//!
//! Validation of references and prices lives in [`super::catalog`]; this module only parses.

use platform::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The whole document: five lists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogDocument {
    pub categories: Vec<CategoryDoc>,
    pub matrices: Vec<MatrixDoc>,
    pub turnarounds: Vec<TurnaroundDoc>,
    pub tests: Vec<TestDoc>,
    pub bundles: Vec<BundleDoc>,
}

/// A category: a quote covers exactly one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CategoryDoc {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Price of one conformity sample in cents.
    pub conformity_sample_price_cents: i64,
    /// Matrices accepted in this category.
    #[serde(default)]
    pub matrix_ids: Vec<String>,
}

/// A sample matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MatrixDoc {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// A turnaround option.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TurnaroundDoc {
    pub id: String,
    pub name: String,
    pub business_days: i32,
    /// Surcharge on the analysis subtotal in basis points.
    pub surcharge_basis_points: i32,
}

/// What the customer ships for a test.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SampleRequirement {
    pub container: String,
    pub amount: String,
    #[serde(default)]
    pub notes: String,
}

/// A single test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestDoc {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub method: String,
    pub category_ids: Vec<String>,
    /// Matrices the test accepts, when it restricts them.
    #[serde(default)]
    pub matrix_ids: Vec<String>,
    pub price_cents: i64,
    pub sample_requirement: SampleRequirement,
}

/// A bundle of tests sold at its own price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BundleDoc {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub category_ids: Vec<String>,
    pub test_ids: Vec<String>,
    pub price_cents: i64,
}

/// A parsed document with its canonical form.
#[derive(Clone, Debug)]
pub struct ParsedDocument {
    pub document: CatalogDocument,
    /// The document as JSON with object keys sorted (what is stored).
    pub canonical: Value,
    /// SHA-256 (lowercase hex) of the canonical JSON text.
    pub sha256: String,
}

/// Parses a document; `invalid_request` (field `documentJson`) naming the serde error, or
/// naming the string that breaks the input rules (`documentJson.tests[2].name`).
pub fn parse(document_json: &str) -> Result<ParsedDocument, ApiError> {
    let invalid = |error: serde_json::Error| {
        ApiError::field(
            ErrorCode::InvalidRequest,
            "documentJson",
            format!("the catalog document is invalid: {error}"),
        )
    };
    let value: Value = serde_json::from_str(document_json).map_err(invalid)?;
    // JSON escapes (`\u0000`) can carry what the message itself could not: check every string.
    platform::input::check_json("documentJson", &value)?;
    let document: CatalogDocument = serde_json::from_value(value.clone()).map_err(invalid)?;
    let canonical = canonicalize(value);
    let sha256 = hex::encode(Sha256::digest(canonical.to_string().as_bytes()));
    Ok(ParsedDocument {
        document,
        canonical,
        sha256,
    })
}

/// Returns `value` with every object's keys sorted, whatever map order serde_json was built with.
pub fn canonicalize(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, canonicalize(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonicalize).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{"categories":[],"matrices":[],"turnarounds":[],"tests":[],"bundles":[]}"#;

    #[test]
    fn key_order_and_whitespace_do_not_change_the_hash() {
        let reordered =
            r#"{ "bundles": [], "tests": [], "turnarounds": [], "matrices": [], "categories": [] }"#;
        assert_eq!(parse(MINIMAL).unwrap().sha256, parse(reordered).unwrap().sha256);
    }

    #[test]
    fn unknown_fields_are_refused_with_their_name() {
        let error =
            parse(r#"{"categories":[],"matrices":[],"turnarounds":[],"tests":[],"bundles":[],"extra":1}"#)
                .unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(error.message.contains("extra"), "{}", error.message);
    }

    #[test]
    fn text_that_is_not_json_is_refused() {
        assert_eq!(parse("not json").unwrap_err().code, ErrorCode::InvalidRequest);
    }
}

//! Rules of the catalog listing: filters, `include` values, and the cursor that pins a revision
//! and the filters of the walk.
//!
//! * `category`: items quotable in that category; blank means absent.
//! * `query`: trimmed, case-insensitive substring of id, name, description or method; blank
//!   means absent; at most 200 characters.
//! * `include`: `requirements`, `categories`, `matrices`, `turnarounds`, `bundles`, `all`; each
//!   value may also be a comma-separated list. `bundles` is accepted for compatibility and changes
//!   nothing (bundle items, with their test ids, are always listed).
//! * The cursor carries the revision, both filters and the last id; using it with other filters
//!   is `invalid_cursor`. `include` and `limit` may change from page to page.

use super::catalog::CatalogItem;
use super::document::{CategoryDoc, MatrixDoc, TurnaroundDoc};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{Listing, PageRequest};
use serde::{Deserialize, Serialize};

/// The catalog listing (its cursors, in the mesh's one format, carry a [`CursorPosition`]).
pub const CATALOG_ITEMS: Listing = Listing::new("catalog.items");
/// Longest `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 200;

/// Extra blocks a page carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Includes {
    pub requirements: bool,
    pub categories: bool,
    pub matrices: bool,
    pub turnarounds: bool,
}

impl Includes {
    /// Parses `include` values; unknown values are `invalid_request` (field `include`).
    pub fn parse(values: &[String]) -> Result<Self, ApiError> {
        let mut includes = Includes::default();
        for value in values.iter().flat_map(|value| value.split(',')).map(str::trim) {
            match value {
                "" | "bundles" => {}
                "requirements" => includes.requirements = true,
                "categories" => includes.categories = true,
                "matrices" => includes.matrices = true,
                "turnarounds" => includes.turnarounds = true,
                "all" => {
                    includes = Includes {
                        requirements: true,
                        categories: true,
                        matrices: true,
                        turnarounds: true,
                    };
                }
                other => {
                    let message = format!(
                        "unknown include value {other:?}; expected requirements, categories, matrices, turnarounds, bundles or all"
                    );
                    return Err(ApiError::field(ErrorCode::InvalidRequest, "include", message));
                }
            }
        }
        Ok(includes)
    }
}

/// The filters of a listing, normalized.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filters {
    #[serde(rename = "c")]
    pub category: Option<String>,
    #[serde(rename = "q")]
    pub query: Option<String>,
}

impl Filters {
    /// Normalizes the raw filters: blank values are absent, the query is trimmed and bounded.
    pub fn new(category: Option<String>, query: Option<String>) -> Result<Self, ApiError> {
        let category = category.filter(|category| !category.trim().is_empty());
        let query = query
            .map(|query| query.trim().to_owned())
            .filter(|query| !query.is_empty());
        if query
            .as_ref()
            .is_some_and(|query| query.chars().count() > MAX_QUERY_CHARS)
        {
            let message = format!("query has at most {MAX_QUERY_CHARS} characters");
            return Err(ApiError::field(ErrorCode::InvalidRequest, "query", message));
        }
        Ok(Self { category, query })
    }
}

/// Where a walk stands: its revision, its filters and the last id returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorPosition {
    #[serde(rename = "r")]
    pub revision: String,
    #[serde(rename = "f")]
    pub filters: Filters,
    #[serde(rename = "a")]
    pub after_id: String,
}

impl CursorPosition {
    /// Encodes the opaque cursor.
    pub fn encode(&self) -> String {
        CATALOG_ITEMS.encode(self)
    }

    /// Decodes a cursor and checks that it was issued for the same filters.
    pub fn decode(cursor: &str, filters: &Filters) -> Result<Self, ApiError> {
        let position: CursorPosition = CATALOG_ITEMS.decode(cursor)?;
        if &position.filters != filters {
            return Err(ApiError::field(
                ErrorCode::InvalidCursor,
                "cursor",
                "the cursor was issued for other category or query filters",
            ));
        }
        Ok(position)
    }
}

/// A validated listing request.
#[derive(Clone, Debug)]
pub struct ListRequest {
    pub filters: Filters,
    pub includes: Includes,
    pub page: PageRequest,
    pub cursor: Option<CursorPosition>,
}

impl ListRequest {
    /// Validates raw parameters: limit, include, filters, then the cursor against the filters.
    pub fn new(
        category: Option<String>,
        query: Option<String>,
        include: &[String],
        limit: Option<i32>,
        cursor: Option<String>,
    ) -> Result<Self, ApiError> {
        let page = PageRequest::new(limit, cursor)?;
        let includes = Includes::parse(include)?;
        let filters = Filters::new(category, query)?;
        let cursor = match &page.cursor {
            Some(cursor) => Some(CursorPosition::decode(cursor, &filters)?),
            None => None,
        };
        Ok(Self {
            filters,
            includes,
            page,
            cursor,
        })
    }
}

/// One page of the listing.
#[derive(Clone, Debug)]
pub struct CatalogPage {
    pub revision: String,
    pub items: Vec<CatalogItem>,
    pub next_cursor: Option<String>,
    pub categories: Vec<CategoryDoc>,
    pub matrices: Vec<MatrixDoc>,
    pub turnarounds: Vec<TurnaroundDoc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| (*value).to_owned()).collect()
    }

    #[test]
    fn include_values_may_be_repeated_or_comma_separated() {
        let includes =
            Includes::parse(&strings(&["requirements,matrices", " turnarounds ", "bundles"])).unwrap();
        assert_eq!(
            includes,
            Includes {
                requirements: true,
                categories: false,
                matrices: true,
                turnarounds: true
            }
        );
        let all = Includes::parse(&strings(&["all"])).unwrap();
        assert!(all.requirements && all.categories && all.matrices && all.turnarounds);
    }

    #[test]
    fn an_unknown_include_value_names_the_include_field() {
        let error = Includes::parse(&strings(&["prices"])).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert_eq!(error.details.unwrap()["field"], "include");
    }

    #[test]
    fn a_cursor_is_refused_with_other_filters() {
        let filters = Filters::new(Some("chemistry".into()), None).unwrap();
        let position = CursorPosition {
            revision: "rev-000001".into(),
            filters: filters.clone(),
            after_id: "a".into(),
        };
        let cursor = position.encode();
        assert_eq!(CursorPosition::decode(&cursor, &filters).unwrap(), position);
        let other = Filters::new(Some("chemistry".into()), Some("hplc".into())).unwrap();
        assert_eq!(
            CursorPosition::decode(&cursor, &other).unwrap_err().code,
            ErrorCode::InvalidCursor
        );
    }

    #[test]
    fn blank_filters_are_absent_and_the_query_is_trimmed() {
        let filters = Filters::new(Some(" ".into()), Some("  HPLC ".into())).unwrap();
        assert_eq!(
            filters,
            Filters {
                category: None,
                query: Some("HPLC".into())
            }
        );
        let long = "x".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(
            Filters::new(None, Some(long)).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
    }
}

//! Catalog shapes: the `GET /catalog` query and page, items, categories, matrices, turnarounds.

use proto::catalog as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Query of `GET /catalog`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CatalogQuery {
    /// Only items quotable in this category.
    pub category: Option<String>,
    /// Case-insensitive text match on id, name, description and method.
    pub query: Option<String>,
    /// Comma-separated extra blocks: `requirements`, `categories`, `matrices`, `turnarounds`,
    /// `bundles`, or `all`.
    pub include: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    /// It pins the catalog revision and the filters of the first page: later pages keep them.
    pub cursor: Option<String>,
}

impl CatalogQuery {
    /// The include list, split on commas, trimmed, empty parts dropped.
    pub fn includes(&self) -> Vec<String> {
        let raw = self.include.as_deref().unwrap_or_default();
        raw.split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// One catalog page: `{ data: [items], pagination, catalogRevision, categories?, matrices?,
/// turnarounds? }`; the three blocks appear only when requested through `include`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogPage {
    pub data: Vec<CatalogItem>,
    pub pagination: super::common::Pagination,
    /// Revision the page was read from; retain it for the order flow.
    pub catalog_revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<Category>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrices: Option<Vec<Matrix>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turnarounds: Option<Vec<Turnaround>>,
}

impl CatalogPage {
    /// Builds the page, showing each block when `includes` names it or `all`.
    pub fn from_proto(page: pb::ListCatalogItemsResponse, includes: &[String]) -> Self {
        let wants = |block: &str| includes.iter().any(|name| name == block || name == "all");
        Self {
            data: page.items.into_iter().map(CatalogItem::from).collect(),
            pagination: super::common::Pagination {
                next_cursor: page.next_cursor,
            },
            catalog_revision: page.catalog_revision,
            categories: wants("categories")
                .then(|| page.categories.into_iter().map(Category::from).collect()),
            matrices: wants("matrices").then(|| page.matrices.into_iter().map(Matrix::from).collect()),
            turnarounds: wants("turnarounds")
                .then(|| page.turnarounds.into_iter().map(Turnaround::from).collect()),
        }
    }
}

/// A test or a bundle of tests.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogItem {
    /// Stable kebab-case id, unique across tests and bundles.
    pub id: String,
    /// `test` or `bundle`.
    pub kind: String,
    pub name: String,
    pub description: String,
    /// Analytical method (tests), or `null`.
    pub method: Option<String>,
    pub category_ids: Vec<String>,
    /// Price per sample line in USD cents.
    pub price_cents: i64,
    /// Tests contained in a bundle (empty for a test).
    pub test_ids: Vec<String>,
    /// Present when `include` asks for `requirements` (tests only).
    pub sample_requirement: Option<SampleRequirement>,
}

impl From<pb::CatalogItem> for CatalogItem {
    fn from(item: pb::CatalogItem) -> Self {
        Self {
            id: item.id,
            kind: item.kind,
            name: item.name,
            description: item.description,
            method: super::common::non_empty(item.method),
            category_ids: item.category_ids,
            price_cents: item.price_cents,
            test_ids: item.test_ids,
            sample_requirement: item.sample_requirement.map(SampleRequirement::from),
        }
    }
}

/// What the customer ships for a test.
#[derive(Serialize, ToSchema)]
pub struct SampleRequirement {
    pub container: String,
    pub amount: String,
    pub notes: String,
}

impl From<pb::SampleRequirement> for SampleRequirement {
    fn from(requirement: pb::SampleRequirement) -> Self {
        Self {
            container: requirement.container,
            amount: requirement.amount,
            notes: requirement.notes,
        }
    }
}

/// A category; a quote covers exactly one.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Category {
    pub id: String,
    pub name: String,
    pub description: String,
    pub conformity_sample_price_cents: i64,
    pub matrix_ids: Vec<String>,
}

impl From<pb::Category> for Category {
    fn from(category: pb::Category) -> Self {
        Self {
            id: category.id,
            name: category.name,
            description: category.description,
            conformity_sample_price_cents: category.conformity_sample_price_cents,
            matrix_ids: category.matrix_ids,
        }
    }
}

/// A sample matrix.
#[derive(Serialize, ToSchema)]
pub struct Matrix {
    pub id: String,
    pub name: String,
    pub description: String,
}

impl From<pb::Matrix> for Matrix {
    fn from(matrix: pb::Matrix) -> Self {
        Self {
            id: matrix.id,
            name: matrix.name,
            description: matrix.description,
        }
    }
}

/// A turnaround option.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Turnaround {
    pub id: String,
    pub name: String,
    pub business_days: i32,
    /// Surcharge on the analysis subtotal in basis points (5000 = +50 %).
    pub surcharge_basis_points: i32,
}

impl From<pb::Turnaround> for Turnaround {
    fn from(turnaround: pb::Turnaround) -> Self {
        Self {
            id: turnaround.id,
            name: turnaround.name,
            business_days: turnaround.business_days,
            surcharge_basis_points: turnaround.surcharge_basis_points,
        }
    }
}

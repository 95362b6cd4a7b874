//! A quotable catalog item: a single test or a bundle of tests, with its price per sample line.

use super::document::SampleRequirement;
use platform::money::Cents;

/// Whether an item is a single test or a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Test,
    Bundle,
}

impl ItemKind {
    /// Wire name: `test` or `bundle`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Test => "test",
            ItemKind::Bundle => "bundle",
        }
    }

    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "test" => Some(ItemKind::Test),
            "bundle" => Some(ItemKind::Bundle),
            _ => None,
        }
    }
}

/// A quotable item.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogItem {
    pub id: String,
    pub kind: ItemKind,
    pub name: String,
    pub description: String,
    /// Analytical method (tests only; empty for bundles).
    pub method: String,
    pub category_ids: Vec<String>,
    /// Price per sample line.
    pub price: Cents,
    /// Tests of a bundle (empty for a test).
    pub test_ids: Vec<String>,
    /// Sample requirement (tests only).
    pub sample_requirement: Option<SampleRequirement>,
}

impl CatalogItem {
    /// Tests this item covers on a sample line: itself, or the bundle's tests.
    pub fn covered_tests(&self) -> Vec<String> {
        match self.kind {
            ItemKind::Test => vec![self.id.clone()],
            ItemKind::Bundle => self.test_ids.clone(),
        }
    }

    /// Whether the item can be quoted in `category_id`.
    pub fn allowed_in(&self, category_id: &str) -> bool {
        self.category_ids.iter().any(|id| id == category_id)
    }
}

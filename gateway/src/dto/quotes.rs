//! Quote shapes: the `POST /quotes` body and the immutable, server-priced quote with its
//! lines and charges (the line item and charge shapes are shared with orders).

use super::catalog::SampleRequirement;
use super::common::{required_time, rfc3339, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::catalog as pb;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Body of `POST /quotes`.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateQuoteRequest {
    /// The one category of the quote.
    pub category_id: String,
    /// Compounds; each becomes its own sample line.
    pub compound_names: Vec<String>,
    /// Test and bundle ids, each applied to every sample line.
    pub test_ids: Vec<String>,
    /// Turnaround id; `standard` when absent.
    #[serde(default)]
    pub turnaround: Option<String>,
    /// Number of conformity samples; 0 when absent.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub conformity_samples: Option<i64>,
}

impl From<CreateQuoteRequest> for pb::CreateQuoteRequest {
    fn from(body: CreateQuoteRequest) -> Self {
        Self {
            category_id: body.category_id,
            compound_names: body.compound_names,
            test_ids: body.test_ids,
            turnaround: body.turnaround,
            conformity_samples: body.conformity_samples,
        }
    }
}

/// An immutable, server-priced, expiring quote.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    /// Send it as `quoteId` to `POST /orders`.
    pub id: String,
    pub catalog_revision: String,
    pub category_id: String,
    pub turnaround: String,
    pub turnaround_business_days: i32,
    pub conformity_samples: i64,
    pub lines: Vec<QuoteLine>,
    pub charges: Vec<Charge>,
    pub analysis_subtotal_cents: i64,
    pub total_cents: i64,
    pub currency: String,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339")]
    pub expires_at: DateTime<Utc>,
}

single_envelope!(QuoteEnvelope, QuoteData, quote: Quote);

impl TryFrom<pb::Quote> for Quote {
    type Error = ApiError;

    fn try_from(quote: pb::Quote) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(quote.created_at.as_ref(), "quote createdAt")?,
            expires_at: required_time(quote.expires_at.as_ref(), "quote expiresAt")?,
            id: quote.id,
            catalog_revision: quote.catalog_revision,
            category_id: quote.category_id,
            turnaround: quote.turnaround,
            turnaround_business_days: quote.turnaround_business_days,
            conformity_samples: quote.conformity_samples,
            lines: quote.lines.into_iter().map(QuoteLine::from).collect(),
            charges: quote.charges.into_iter().map(Charge::from).collect(),
            analysis_subtotal_cents: quote.analysis_subtotal_cents,
            total_cents: quote.total_cents,
            currency: quote.currency,
        })
    }
}

/// One sample line of a quote: one compound and its priced items.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuoteLine {
    pub line_number: i32,
    pub compound_name: String,
    pub items: Vec<LineItem>,
    pub subtotal_cents: i64,
    pub sample_requirements: Vec<SampleRequirement>,
}

impl From<pb::QuoteLine> for QuoteLine {
    fn from(line: pb::QuoteLine) -> Self {
        Self {
            line_number: line.line_number,
            compound_name: line.compound_name,
            items: line.items.into_iter().map(LineItem::from).collect(),
            subtotal_cents: line.subtotal_cents,
            sample_requirements: line
                .sample_requirements
                .into_iter()
                .map(SampleRequirement::from)
                .collect(),
        }
    }
}

/// One priced test or bundle on a sample line (quotes and orders).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineItem {
    pub item_id: String,
    /// `test` or `bundle`.
    pub kind: String,
    pub name: String,
    pub price_cents: i64,
    /// Tests the item covers.
    pub test_ids: Vec<String>,
}

impl From<pb::QuoteItem> for LineItem {
    fn from(item: pb::QuoteItem) -> Self {
        Self {
            item_id: item.item_id,
            kind: item.kind,
            name: item.name,
            price_cents: item.price_cents,
            test_ids: item.test_ids,
        }
    }
}

/// A charge outside the sample lines (turnaround surcharge, conformity samples).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Charge {
    /// `turnaround_surcharge` or `conformity_samples`.
    pub kind: String,
    pub description: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub amount_cents: i64,
}

impl From<pb::QuoteCharge> for Charge {
    fn from(charge: pb::QuoteCharge) -> Self {
        Self {
            kind: charge.kind,
            description: charge.description,
            quantity: charge.quantity,
            unit_price_cents: charge.unit_price_cents,
            amount_cents: charge.amount_cents,
        }
    }
}

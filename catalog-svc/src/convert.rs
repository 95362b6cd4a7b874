//! Conversions between the protobuf messages of `lab.catalog.v1` and the domain types.

use crate::domain::catalog::CatalogItem;
use crate::domain::document::{CategoryDoc, MatrixDoc, SampleRequirement, TurnaroundDoc};
use crate::domain::listing::CatalogPage;
use crate::domain::quote::{Quote, QuoteCharge, QuoteItem, QuoteLine, QuoteRequest};
use crate::service::{ImportOutcome, ListParams};
use proto::catalog as pb;

impl From<pb::ListCatalogItemsRequest> for ListParams {
    fn from(request: pb::ListCatalogItemsRequest) -> Self {
        let pb::ListCatalogItemsRequest {
            category,
            query,
            include,
            limit,
            cursor,
            catalog_revision,
        } = request;
        Self {
            category,
            query,
            include,
            limit,
            cursor,
            catalog_revision,
        }
    }
}

impl From<pb::CreateQuoteRequest> for QuoteRequest {
    fn from(request: pb::CreateQuoteRequest) -> Self {
        let pb::CreateQuoteRequest {
            category_id,
            compound_names,
            test_ids,
            turnaround,
            conformity_samples,
        } = request;
        Self {
            category_id,
            compound_names,
            test_ids,
            turnaround,
            conformity_samples,
        }
    }
}

fn requirement(requirement: SampleRequirement) -> pb::SampleRequirement {
    let SampleRequirement {
        container,
        amount,
        notes,
    } = requirement;
    pb::SampleRequirement {
        container,
        amount,
        notes,
    }
}

fn item(item: CatalogItem) -> pb::CatalogItem {
    pb::CatalogItem {
        id: item.id,
        kind: item.kind.as_str().to_owned(),
        name: item.name,
        description: item.description,
        method: item.method,
        category_ids: item.category_ids,
        price_cents: item.price.0,
        test_ids: item.test_ids,
        sample_requirement: item.sample_requirement.map(requirement),
    }
}

fn category(category: CategoryDoc) -> pb::Category {
    pb::Category {
        id: category.id,
        name: category.name,
        description: category.description,
        conformity_sample_price_cents: category.conformity_sample_price_cents,
        matrix_ids: category.matrix_ids,
    }
}

fn matrix(matrix: MatrixDoc) -> pb::Matrix {
    pb::Matrix {
        id: matrix.id,
        name: matrix.name,
        description: matrix.description,
    }
}

fn turnaround(turnaround: TurnaroundDoc) -> pb::Turnaround {
    pb::Turnaround {
        id: turnaround.id,
        name: turnaround.name,
        business_days: turnaround.business_days,
        surcharge_basis_points: turnaround.surcharge_basis_points,
    }
}

impl From<CatalogPage> for pb::ListCatalogItemsResponse {
    fn from(page: CatalogPage) -> Self {
        Self {
            catalog_revision: page.revision,
            items: page.items.into_iter().map(item).collect(),
            next_cursor: page.next_cursor,
            categories: page.categories.into_iter().map(category).collect(),
            matrices: page.matrices.into_iter().map(matrix).collect(),
            turnarounds: page.turnarounds.into_iter().map(turnaround).collect(),
        }
    }
}

fn quote_item(item: QuoteItem) -> pb::QuoteItem {
    let QuoteItem {
        item_id,
        kind,
        name,
        price_cents,
        test_ids,
    } = item;
    pb::QuoteItem {
        item_id,
        kind,
        name,
        price_cents,
        test_ids,
    }
}

fn line(line: QuoteLine) -> pb::QuoteLine {
    pb::QuoteLine {
        line_number: line.line_number,
        compound_name: line.compound_name,
        items: line.items.into_iter().map(quote_item).collect(),
        subtotal_cents: line.subtotal_cents,
        sample_requirements: line.sample_requirements.into_iter().map(requirement).collect(),
    }
}

fn charge(charge: QuoteCharge) -> pb::QuoteCharge {
    let QuoteCharge {
        kind,
        description,
        quantity,
        unit_price_cents,
        amount_cents,
    } = charge;
    pb::QuoteCharge {
        kind,
        description,
        quantity,
        unit_price_cents,
        amount_cents,
    }
}

impl From<Quote> for pb::Quote {
    fn from(quote: Quote) -> Self {
        let priced = quote.priced;
        Self {
            id: quote.id.to_string(),
            customer_id: quote.customer_id.to_string(),
            catalog_revision: quote.catalog_revision,
            category_id: priced.category_id,
            turnaround: priced.turnaround,
            turnaround_business_days: priced.turnaround_business_days,
            conformity_samples: priced.conformity_samples,
            lines: priced.lines.into_iter().map(line).collect(),
            charges: priced.charges.into_iter().map(charge).collect(),
            analysis_subtotal_cents: priced.analysis_subtotal.0,
            total_cents: priced.total.0,
            currency: quote.currency,
            created_at: Some(platform::time::to_timestamp(quote.created_at)),
            expires_at: Some(platform::time::to_timestamp(quote.expires_at)),
        }
    }
}

impl From<ImportOutcome> for pb::ImportCatalogResponse {
    fn from(outcome: ImportOutcome) -> Self {
        Self {
            catalog_revision: outcome.revision,
            test_count: outcome.test_count,
            bundle_count: outcome.bundle_count,
            unchanged: outcome.unchanged,
        }
    }
}

//! Request and quote builders, and small readers of errors, shared by the tests.

use platform::error::ApiError;
use proto::catalog::{Quote, QuoteCharge, QuoteItem, QuoteLine, SampleRequirement};
use proto::orders::CreateOrderRequest;
use tonic::Status;
use uuid::Uuid;

/// A fresh, valid idempotency key.
pub fn new_key() -> String {
    format!("key-{}", Uuid::new_v4())
}

/// The error carried by a status.
pub fn error_of(status: &Status) -> ApiError {
    ApiError::from_status(status)
}

/// The `details.field` of an error.
pub fn field_of(error: &ApiError) -> String {
    error
        .details
        .as_ref()
        .and_then(|details| details["field"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A valid bank-invoice request for `quote_id`.
pub fn order_request(quote_id: &str) -> CreateOrderRequest {
    CreateOrderRequest {
        quote_id: quote_id.to_owned(),
        payment_method: "bank_invoice".into(),
        confirm: true,
        ..Default::default()
    }
}

fn item(id: &str, kind: &str, name: &str, price_cents: i64, tests: &[&str]) -> QuoteItem {
    QuoteItem {
        item_id: id.into(),
        kind: kind.into(),
        name: name.into(),
        price_cents,
        test_ids: tests.iter().map(|test| (*test).to_owned()).collect(),
    }
}

/// A two-line peptide quote: BPC-157 and TB-500, each with a purity test and a bundle, plus a
/// turnaround surcharge and two conformity samples. Total 2 × 24,000 + 12,000 + 5,000 = 65,000.
pub fn sample_quote(customer_id: Uuid, lifetime: chrono::Duration) -> Quote {
    let now = platform::time::now();
    let line = |number: i32, compound: &str| QuoteLine {
        line_number: number,
        compound_name: compound.into(),
        items: vec![
            item("hplc-purity", "test", "HPLC purity", 15_000, &["hplc-purity"]),
            item(
                "identity-pack",
                "bundle",
                "Identity pack",
                9_000,
                &["ms-identity", "nmr-identity"],
            ),
        ],
        subtotal_cents: 24_000,
        sample_requirements: vec![SampleRequirement {
            container: "2 mL amber glass vial".into(),
            amount: "5 mg".into(),
            notes: "keep cold".into(),
        }],
    };
    Quote {
        id: Uuid::now_v7().to_string(),
        customer_id: customer_id.to_string(),
        catalog_revision: "rev-2026-07-01".into(),
        category_id: "peptides".into(),
        turnaround: "rush".into(),
        turnaround_business_days: 3,
        conformity_samples: 2,
        lines: vec![line(1, "BPC-157"), line(2, "TB-500")],
        charges: vec![
            QuoteCharge {
                kind: "turnaround_surcharge".into(),
                description: "Rush turnaround (+25 %)".into(),
                quantity: 1,
                unit_price_cents: 12_000,
                amount_cents: 12_000,
            },
            QuoteCharge {
                kind: "conformity_samples".into(),
                description: "Conformity samples".into(),
                quantity: 2,
                unit_price_cents: 2_500,
                amount_cents: 5_000,
            },
        ],
        analysis_subtotal_cents: 48_000,
        total_cents: 65_000,
        currency: "USD".into(),
        created_at: Some(platform::time::to_timestamp(now)),
        expires_at: Some(platform::time::to_timestamp(now + lifetime)),
    }
}

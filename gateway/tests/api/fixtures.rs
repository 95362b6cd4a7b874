//! Canned answers of the fake services: timestamps, a sample order, and the failures scripted
//! by a reference (`missing` → 404, `conflict` → 409, `down` → 503, `busy` → 409 with
//! Retry-After, `plain-unavailable` → a bare gRPC UNAVAILABLE).

use platform::error::{ApiError, ErrorCode};
use proto::common::{InvoiceStatus, OrderStatus, PaymentMethod};
use proto::orders;
use tonic::Status;

pub fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp {
        seconds,
        nanos: 123_456_000,
    })
}

/// The scripted failure for a reference, if any.
pub fn scripted_failure(reference: &str) -> Option<Status> {
    let error = match reference {
        "missing" => ApiError::new(ErrorCode::NotFound, "no such order"),
        "conflict" => ApiError::new(
            ErrorCode::Conflict,
            "the order is not in a state that allows this",
        ),
        "down" => ApiError::new(
            ErrorCode::ServiceUnavailable,
            "payments-svc is unavailable, retry later",
        ),
        "busy" => ApiError::new(ErrorCode::IdempotencyRequestInProgress, "still running")
            .with_details(serde_json::json!({ "retryAfterSeconds": 3 })),
        "plain-unavailable" => return Some(Status::unavailable("connection reset")),
        _ => return None,
    };
    Some(Status::from(error))
}

pub fn sample_order(id: &str, customer_id: &str) -> orders::Order {
    orders::Order {
        payment_state: "unpaid".into(),
        accession_numbers: Vec::new(),
        amount: None,
        cancellation: None,
        addons: Vec::new(),
        id: id.to_owned(),
        order_number: "ORD-000001".into(),
        customer_id: customer_id.to_owned(),
        quote_id: "5f0c6f3e-0000-4000-8000-000000000001".into(),
        status: OrderStatus::InvoiceSent as i32,
        legacy_status: String::new(),
        payment_method: PaymentMethod::BankInvoice as i32,
        legacy_payment_method: String::new(),
        catalog_revision: "rev-1".into(),
        category_id: "peptides".into(),
        turnaround: "standard".into(),
        conformity_samples: 0,
        client_reference: Some("po-7".into()),
        notes: None,
        publish_raw_data: true,
        expected_payer_address: None,
        billing_address_id: None,
        shipping_address_id: None,
        lines: vec![orders::OrderLine {
            line_number: 1,
            compound_name: "BPC-157".into(),
            lot_number: Some("LOT-1".into()),
            matrix_notes: None,
            items: vec![orders::OrderLineItem {
                item_id: "hplc-purity".into(),
                kind: "test".into(),
                name: "HPLC purity".into(),
                price_cents: 12_500,
                test_ids: vec!["hplc-purity".into()],
            }],
            subtotal_cents: 12_500,
        }],
        charges: vec![],
        total_cents: 12_500,
        currency: "USD".into(),
        // As an orders-svc of the release before writes it (text only): the gateway reads either.
        status_history: vec![orders::StatusChange {
            from_status: 0,
            legacy_from_status: String::new(),
            to_status: 0,
            legacy_to_status: "invoice_sent".into(),
            changed_at: ts(1_784_000_000),
            reason: String::new(),
        }],
        payment: Some(orders::OrderPayment {
            invoice_id: "inv-1".into(),
            invoice_number: "INV-000001".into(),
            status: InvoiceStatus::Open as i32,
            legacy_status: "open".into(),
            amount_due_cents: 12_500,
            due_at: ts(1_785_000_000),
            bank_instructions: None,
            hosted_url: None,
            checkout_expires_at: None,
        }),
        created_at: ts(1_784_000_000),
        updated_at: ts(1_784_000_000),
    }
}

//! Every 400 of CreateOrder answers its code and `details.field`, before the quote is read,
//! and creates nothing; the key and scope checks come first.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::orders::{CreateOrderRequest, SampleMetadata};
use std::sync::atomic::Ordering;

fn metadata(name: &str, lot: Option<&str>, notes: Option<&str>) -> SampleMetadata {
    SampleMetadata {
        compound_name: name.into(),
        lot_number: lot.map(Into::into),
        matrix_notes: notes.map(Into::into),
    }
}

#[tokio::test]
async fn every_invalid_create_order_field_is_refused_with_its_code_and_field() {
    let app = spawn_app().await;
    let quote = app.quote();
    let base = order_request(&quote.id);
    let long = |n: usize| "x".repeat(n);
    let cases: Vec<(CreateOrderRequest, ErrorCode, &str)> = vec![
        (
            CreateOrderRequest {
                confirm: false,
                ..base.clone()
            },
            ErrorCode::ConfirmationRequired,
            "confirm",
        ),
        (
            CreateOrderRequest {
                payment_method: "wire".into(),
                ..base.clone()
            },
            ErrorCode::InvalidPaymentMethod,
            "paymentMethod",
        ),
        (
            CreateOrderRequest {
                payment_method: String::new(),
                ..base.clone()
            },
            ErrorCode::InvalidPaymentMethod,
            "paymentMethod",
        ),
        (
            CreateOrderRequest {
                quote_id: "q-1".into(),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "quoteId",
        ),
        (
            CreateOrderRequest {
                expected_payer_address: Some(long(101)),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "expectedPayerAddress",
        ),
        (
            CreateOrderRequest {
                client_reference: Some(String::new()),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "clientReference",
        ),
        (
            CreateOrderRequest {
                client_reference: Some(long(121)),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "clientReference",
        ),
        (
            CreateOrderRequest {
                notes: Some(long(4001)),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "notes",
        ),
        (
            CreateOrderRequest {
                billing_address_id: Some("home".into()),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "billingAddressId",
        ),
        (
            CreateOrderRequest {
                shipping_address_id: Some("lab".into()),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "shippingAddressId",
        ),
        (
            CreateOrderRequest {
                sample_metadata: (0..51)
                    .map(|i| metadata(&format!("c{i}"), Some("l"), None))
                    .collect(),
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "sampleMetadata",
        ),
        (
            CreateOrderRequest {
                sample_metadata: vec![
                    metadata("BPC-157", Some("l"), None),
                    metadata("", Some("l"), None),
                ],
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "sampleMetadata[1].compoundName",
        ),
        (
            CreateOrderRequest {
                sample_metadata: vec![metadata(&long(201), Some("l"), None)],
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "sampleMetadata[0].compoundName",
        ),
        (
            CreateOrderRequest {
                sample_metadata: vec![metadata("BPC-157", Some(&long(201)), None)],
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "sampleMetadata[0].lotNumber",
        ),
        (
            CreateOrderRequest {
                sample_metadata: vec![metadata("BPC-157", None, Some(&long(2001)))],
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "sampleMetadata[0].matrixNotes",
        ),
        (
            CreateOrderRequest {
                sample_metadata: vec![metadata("BPC-157", None, None)],
                ..base.clone()
            },
            ErrorCode::InvalidRequest,
            "sampleMetadata[0]",
        ),
        (
            CreateOrderRequest {
                sample_metadata: vec![
                    metadata("BPC-157", Some("1"), None),
                    metadata("BPC-157", None, Some("powder")),
                ],
                ..base.clone()
            },
            ErrorCode::DuplicateCompound,
            "sampleMetadata[1].compoundName",
        ),
    ];
    for (request, code, field) in cases {
        let status = app.create_order(&new_key(), request).await.expect_err(field);
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{field}");
        let error = error_of(&status);
        assert_eq!(
            (error.code, field_of(&error).as_str()),
            (code, field),
            "{}",
            error.message
        );
    }
    assert_eq!(
        app.peers.catalog.get_quote_calls.load(Ordering::SeqCst),
        0,
        "shape errors never read the quote"
    );
    assert_eq!(app.order_count().await, 0);
}

#[tokio::test]
async fn the_stablecoin_rail_is_unavailable_and_names_the_available_methods() {
    let app = spawn_app().await;
    let quote = app.quote();
    for spelling in ["chain_stablecoin", "stablecoin_erc20"] {
        let request = CreateOrderRequest {
            payment_method: spelling.into(),
            ..order_request(&quote.id)
        };
        let error = error_of(&app.create_order(&new_key(), request).await.unwrap_err());
        assert_eq!(error.code, ErrorCode::PaymentMethodUnavailable, "{spelling}");
        assert_eq!(
            error.details.unwrap()["availableMethods"],
            serde_json::json!(["bank_invoice", "card_checkout"])
        );
    }
    // A shape error still wins over the unavailable rail.
    let request = CreateOrderRequest {
        payment_method: "chain_stablecoin".into(),
        notes: Some("n".repeat(4001)),
        ..order_request(&quote.id)
    };
    assert_eq!(
        error_of(&app.create_order(&new_key(), request).await.unwrap_err()).code,
        ErrorCode::InvalidRequest
    );
    assert_eq!(app.peers.catalog.get_quote_calls.load(Ordering::SeqCst), 0);
    assert_eq!(app.order_count().await, 0);
}

#[tokio::test]
async fn a_missing_or_malformed_idempotency_key_is_refused() {
    let app = spawn_app().await;
    let quote = app.quote();
    let token = app.default_token();
    let missing = app
        .create_order_as(&token, None, order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(error_of(&missing).code, ErrorCode::IdempotencyKeyMissing);
    let short = app
        .create_order_as(&token, Some("short"), order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(error_of(&short).code, ErrorCode::IdempotencyKeyInvalid);
    assert_eq!(app.order_count().await, 0);
}

#[tokio::test]
async fn creating_needs_orders_write_and_reading_needs_orders_read() {
    let app = spawn_app().await;
    let quote = app.quote();
    let read_only = app.token(app.customer_id, &["orders:read"], None);
    let refused = app
        .create_order_as(&read_only, Some(&new_key()), order_request(&quote.id))
        .await
        .unwrap_err();
    let error = error_of(&refused);
    assert_eq!(error.code, ErrorCode::InsufficientScope);
    assert_eq!(
        error.details.unwrap()["required"],
        serde_json::json!(["orders:write"])
    );

    let order = app.place_order().await;
    let write_only = app.token(app.customer_id, &["orders:write"], None);
    assert_eq!(
        error_of(&app.get_order_as(&write_only, &order.id).await.unwrap_err()).code,
        ErrorCode::InsufficientScope
    );
    let listed = app
        .list_orders_as(&write_only, Default::default())
        .await
        .unwrap_err();
    assert_eq!(error_of(&listed).code, ErrorCode::InsufficientScope);

    let unauthenticated = app.get_order_as("not-a-token", &order.id).await.unwrap_err();
    assert_eq!(unauthenticated.code(), tonic::Code::Unauthenticated);
}

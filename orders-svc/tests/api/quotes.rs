//! Quote rules of CreateOrder: unknown, another customer's, expired, consumed, compounds not on
//! the quote, the spend envelope, and catalog-svc being unavailable.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::orders::{CreateOrderRequest, SampleMetadata};
use std::sync::atomic::Ordering;

#[tokio::test]
async fn an_unknown_quote_or_another_customers_quote_is_quote_not_found() {
    let app = spawn_app().await;
    let unknown = app
        .create_order(&new_key(), order_request(&uuid::Uuid::now_v7().to_string()))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert_eq!(error_of(&unknown).code, ErrorCode::QuoteNotFound);

    let foreign = app.quote_for(uuid::Uuid::now_v7(), chrono::Duration::minutes(15));
    let error = error_of(
        &app.create_order(&new_key(), order_request(&foreign.id))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::QuoteNotFound);
    assert_eq!(app.order_count().await, 0);
}

#[tokio::test]
async fn an_expired_quote_is_refused_with_quote_expired() {
    let app = spawn_app().await;
    let quote = app.quote_for(app.customer_id, chrono::Duration::seconds(-1));
    let status = app
        .create_order(&new_key(), order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(error_of(&status).code, ErrorCode::QuoteExpired);
    assert_eq!(app.order_count().await, 0);
}

#[tokio::test]
async fn a_quote_used_by_an_order_is_refused_for_a_new_key_with_quote_already_consumed() {
    let app = spawn_app().await;
    let quote = app.quote();
    app.create_order(&new_key(), order_request(&quote.id))
        .await
        .unwrap();
    let status = app
        .create_order(&new_key(), order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    let error = error_of(&status);
    assert_eq!(
        (error.code, field_of(&error).as_str()),
        (ErrorCode::QuoteAlreadyConsumed, "quoteId")
    );
    assert_eq!(app.order_count().await, 1);
}

#[tokio::test]
async fn sample_metadata_naming_a_compound_not_on_the_quote_is_unknown_compound() {
    let app = spawn_app().await;
    let quote = app.quote();
    let request = CreateOrderRequest {
        sample_metadata: vec![
            SampleMetadata {
                compound_name: "TB-500".into(),
                lot_number: Some("1".into()),
                matrix_notes: None,
            },
            SampleMetadata {
                compound_name: "bpc-157".into(),
                lot_number: Some("2".into()),
                matrix_notes: None,
            },
        ],
        ..order_request(&quote.id)
    };
    let error = error_of(&app.create_order(&new_key(), request).await.unwrap_err());
    assert_eq!(
        (error.code, field_of(&error).as_str()),
        (ErrorCode::UnknownCompound, "sampleMetadata[1].compoundName")
    );
    assert_eq!(app.order_count().await, 0);
}

#[tokio::test]
async fn a_total_above_the_keys_spend_envelope_is_refused_and_the_exact_limit_is_allowed() {
    let app = spawn_app().await;
    let over = app.token(app.customer_id, &ORDER_SCOPES, Some(64_999));
    let quote = app.quote();
    let status = app
        .create_order_as(&over, Some(&new_key()), order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    assert_eq!(error_of(&status).code, ErrorCode::SpendLimitExceeded);
    assert_eq!(app.order_count().await, 0);

    let exact = app.token(app.customer_id, &ORDER_SCOPES, Some(65_000));
    app.create_order_as(&exact, Some(&new_key()), order_request(&quote.id))
        .await
        .expect("at the limit");
}

#[tokio::test]
async fn catalog_unavailable_is_a_retryable_503_that_the_same_key_can_retry() {
    let app = spawn_app().await;
    let quote = app.quote();
    let key = new_key();
    app.peers.catalog.unavailable.store(true, Ordering::SeqCst);
    let status = app
        .create_order(&key, order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(error_of(&status).code, ErrorCode::ServiceUnavailable);
    assert_eq!(app.order_count().await, 0);

    app.peers.catalog.unavailable.store(false, Ordering::SeqCst);
    let response = app
        .create_order(&key, order_request(&quote.id))
        .await
        .expect("the retry runs");
    assert!(
        response.metadata().get("idempotent-replayed").is_none(),
        "a 503 is not stored"
    );
    assert_eq!(app.order_count().await, 1);
}

//! Idempotency of CreateOrder: replays, reused keys, stored client errors, and resuming after
//! payments-svc failed.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::orders::CreateOrderRequest;

#[tokio::test]
async fn a_replay_returns_the_same_order_with_the_replay_marker() {
    let app = spawn_app().await;
    let quote = app.quote();
    let key = new_key();
    let first = app.create_order(&key, order_request(&quote.id)).await.unwrap();
    let replay = app.create_order(&key, order_request(&quote.id)).await.unwrap();
    assert_eq!(
        replay
            .metadata()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(replay.into_inner(), first.into_inner());
    assert_eq!(app.order_count().await, 1);
    assert_eq!(app.peers.invoice_requests().len(), 1, "a replay calls no peer");
    assert_eq!(app.outbox_events_of("order.created").await.len(), 1);
}

#[tokio::test]
async fn the_same_key_with_a_different_body_is_idempotency_key_reused() {
    let app = spawn_app().await;
    let quote = app.quote();
    let key = new_key();
    app.create_order(&key, order_request(&quote.id)).await.unwrap();
    let changed = CreateOrderRequest {
        notes: Some("another body".into()),
        ..order_request(&quote.id)
    };
    let status = app.create_order(&key, changed).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::AlreadyExists);
    assert_eq!(error_of(&status).code, ErrorCode::IdempotencyKeyReused);
    assert_eq!(app.order_count().await, 1);
}

#[tokio::test]
async fn the_same_key_for_another_customer_is_an_independent_request() {
    let app = spawn_app().await;
    let key = new_key();
    let mine = app.quote();
    app.create_order(&key, order_request(&mine.id)).await.unwrap();
    let other = uuid::Uuid::now_v7();
    let theirs = app.quote_for(other, chrono::Duration::minutes(15));
    let token = app.token(other, &ORDER_SCOPES, None);
    let response = app
        .create_order_as(&token, Some(&key), order_request(&theirs.id))
        .await
        .unwrap();
    assert!(response.metadata().get("idempotent-replayed").is_none());
    assert_eq!(
        response.into_inner().order.unwrap().customer_id,
        other.to_string()
    );
    assert_eq!(app.order_count().await, 2);
}

#[tokio::test]
async fn a_client_error_is_stored_and_replays_identically() {
    let app = spawn_app().await;
    let quote = app.quote();
    let key = new_key();
    let request = CreateOrderRequest {
        confirm: false,
        ..order_request(&quote.id)
    };
    let first = app.create_order(&key, request.clone()).await.unwrap_err();
    assert!(first.metadata().get("idempotent-replayed").is_none());
    let replay = app.create_order(&key, request).await.unwrap_err();
    assert_eq!(
        replay
            .metadata()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(error_of(&replay), error_of(&first));
    assert_eq!(error_of(&replay).code, ErrorCode::ConfirmationRequired);
}

#[tokio::test]
async fn payments_failing_answers_503_and_a_retry_with_the_same_key_completes_one_order() {
    let app = spawn_app().await;
    let quote = app.quote();
    let key = new_key();
    app.peers.payments_failing(true);
    let status = app
        .create_order(&key, order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(error_of(&status).code, ErrorCode::ServiceUnavailable);
    // The order exists (transaction A committed) but has no payment block yet.
    assert_eq!(app.order_count().await, 1);
    let pending = app
        .list_orders_as(&app.default_token(), Default::default())
        .await
        .unwrap()
        .orders;
    assert_eq!(pending[0].payment, None);

    app.peers.payments_failing(false);
    let response = app
        .create_order(&key, order_request(&quote.id))
        .await
        .expect("the retry resumes");
    assert!(response.metadata().get("idempotent-replayed").is_none());
    let order = response.into_inner().order.unwrap();
    assert_eq!(order.id, pending[0].id, "the retry resumed the same order");
    assert_eq!(order.payment.expect("payment block").status().as_str(), "open");
    assert_eq!(app.order_count().await, 1);
    assert_eq!(app.outbox_events_of("order.created").await.len(), 1);
    let requests = app.peers.invoice_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0], requests[1],
        "the invoice request is identical on retry"
    );

    let replay = app.create_order(&key, order_request(&quote.id)).await.unwrap();
    assert_eq!(
        replay
            .metadata()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(replay.into_inner().order.unwrap().id, order.id);
    let another_key = app
        .create_order(&new_key(), order_request(&quote.id))
        .await
        .unwrap_err();
    assert_eq!(error_of(&another_key).code, ErrorCode::QuoteAlreadyConsumed);
}

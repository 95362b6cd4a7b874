//! Concurrent CreateOrder calls: identical requests create one order; different keys on one
//! quote yield one order and `quote_already_consumed` for the others.

use crate::helpers::*;
use platform::error::ErrorCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_concurrent_identical_requests_create_one_order_and_answer_it_to_all() {
    let app = spawn_app().await;
    let quote = app.quote();
    let key = new_key();
    let calls = (0..100).map(|_| app.create_order(&key, order_request(&quote.id)));
    let answers = futures::future::join_all(calls).await;
    let bodies: Vec<_> = answers
        .into_iter()
        .map(|answer| answer.expect("every request gets the order").into_inner())
        .collect();
    assert!(
        bodies.iter().all(|body| body == &bodies[0]),
        "all responses are identical"
    );
    assert_eq!(app.order_count().await, 1);
    assert_eq!(app.peers.invoice_requests().len(), 1);
    assert_eq!(app.outbox_events_of("order.created").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_concurrent_requests_on_one_quote_with_different_keys_yield_exactly_one_order() {
    let app = spawn_app().await;
    let quote = app.quote();
    let keys: Vec<String> = (0..10).map(|_| new_key()).collect();
    let calls = keys
        .iter()
        .map(|key| app.create_order(key, order_request(&quote.id)));
    let answers = futures::future::join_all(calls).await;
    let successes = answers.iter().filter(|answer| answer.is_ok()).count();
    assert_eq!(successes, 1);
    for answer in answers.iter().filter_map(|answer| answer.as_ref().err()) {
        assert_eq!(
            error_of(answer).code,
            ErrorCode::QuoteAlreadyConsumed,
            "{answer:?}"
        );
    }
    assert_eq!(app.order_count().await, 1);
    assert_eq!(app.outbox_events_of("order.created").await.len(), 1);
}

//! Idempotent order creation across the mesh: concurrent duplicates, replays, conflicts, and one
//! order per quote whatever the keys.

use crate::support::{order_body, place_order, quote};
use futures::future::join_all;
use serde_json::json;
use std::collections::HashSet;
use tests::Sandbox;

#[tokio::test]
async fn a_hundred_concurrent_identical_order_requests_create_one_order_and_all_get_the_same_answer() {
    // One order and one answer for all is under test, not latency: the hundred requests wait on
    // the first one's claim, which on a loaded 2-core machine can outlast the gateway's default
    // 10 s limit (speed is benchmarked, never timed in tests).
    let sandbox = Sandbox::start_with(|settings| {
        settings.gateway.front_door.request_timeout = std::time::Duration::from_secs(120);
    })
    .await;
    let agent = sandbox.customer("Concurrent Buyer", "all").await;
    let quote = quote(&sandbox, &agent, &["Semaglutide"]).await;
    let body = order_body(quote["id"].as_str().unwrap());

    let answers =
        join_all((0..100).map(|_| place_order(&sandbox, &agent, &body, "same-key-for-all-100"))).await;

    let statuses: HashSet<u16> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(
        statuses,
        HashSet::from([201]),
        "{:?}",
        answers.iter().find(|answer| answer.status != 201)
    );
    let bodies: HashSet<String> = answers.iter().map(|answer| answer.body.to_string()).collect();
    assert_eq!(bodies.len(), 1, "every caller receives the same order");
    let replays = answers
        .iter()
        .filter(|answer| answer.header("idempotent-replayed") == Some("true"))
        .count();
    assert_eq!(replays, 99, "all but the first are replays");
    let listed = sandbox.get(&agent.key, "/orders").await;
    assert_eq!(
        listed.body["data"].as_array().unwrap().len(),
        1,
        "exactly one order exists"
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn concurrent_orders_on_one_quote_with_different_keys_create_one_order() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Racing Buyer", "all").await;
    let quote = quote(&sandbox, &agent, &["Retatrutide"]).await;
    let body = order_body(quote["id"].as_str().unwrap());

    let keys: Vec<String> = (0..10).map(|n| format!("distinct-key-{n:04}")).collect();
    let answers = join_all(keys.iter().map(|key| place_order(&sandbox, &agent, &body, key))).await;

    let created = answers.iter().filter(|answer| answer.status == 201).count();
    assert_eq!(created, 1, "exactly one request wins the quote");
    for answer in answers.iter().filter(|answer| answer.status != 201) {
        assert_eq!(
            (answer.status, answer.error_code()),
            (409, "quote_already_consumed"),
            "{:?}",
            answer.body
        );
    }
    let listed = sandbox.get(&agent.key, "/orders").await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_replay_answers_like_the_first_response_and_another_body_with_the_same_key_is_a_conflict() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Retrying Buyer", "all").await;
    let quote = quote(&sandbox, &agent, &["Ipamorelin"]).await;
    let body = order_body(quote["id"].as_str().unwrap());

    let first = place_order(&sandbox, &agent, &body, "retry-key-0001").await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let replay = place_order(&sandbox, &agent, &body, "retry-key-0001").await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // The same order; its label link is signed afresh for each answer.
    let order = |answer: &tests::Answer| crate::support::without_label_link(&answer.body["data"]["order"]);
    assert_eq!(order(&replay), order(&first));
    assert!(
        first.body["data"]["order"]["shipping"]["labelUrl"].is_string(),
        "{:?}",
        first.body
    );

    let mut other = body.clone();
    other["notes"] = json!("changed my mind");
    let conflict = place_order(&sandbox, &agent, &other, "retry-key-0001").await;
    assert_eq!(
        (conflict.status, conflict.error_code()),
        (409, "idempotency_key_reused")
    );

    let second_quote_key = place_order(&sandbox, &agent, &body, "retry-key-0002").await;
    assert_eq!(
        (second_quote_key.status, second_quote_key.error_code()),
        (409, "quote_already_consumed")
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn the_same_key_used_by_another_customer_is_independent() {
    let sandbox = Sandbox::start().await;
    let alice = sandbox.customer("Alice Labs", "all").await;
    let bob = sandbox.customer("Bob Labs", "all").await;
    let alice_quote = quote(&sandbox, &alice, &["GHK-Cu"]).await;
    let bob_quote = quote(&sandbox, &bob, &["GHK-Cu"]).await;

    let a = place_order(
        &sandbox,
        &alice,
        &order_body(alice_quote["id"].as_str().unwrap()),
        "shared-key-0001",
    )
    .await;
    let b = place_order(
        &sandbox,
        &bob,
        &order_body(bob_quote["id"].as_str().unwrap()),
        "shared-key-0001",
    )
    .await;
    assert_eq!((a.status, b.status), (201, 201));
    assert_eq!(b.header("idempotent-replayed"), None);
    assert_ne!(a.body["data"]["order"]["id"], b.body["data"]["order"]["id"]);
    sandbox.stop().await;
}

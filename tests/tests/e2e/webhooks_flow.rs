//! Webhooks across the whole mesh: an agent registers an HTTPS endpoint, places and pays an order,
//! and receives every subscribed lifecycle event signed exactly as the docs tell receivers to
//! verify — while another customer's endpoint receives nothing of it.

use crate::support::{order_body, place_order, quote};
use hmac::{Hmac, Mac};
use platform::test_receiver::{RecordedRequest, TestReceiver};
use platform::testing::wait_for;
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::BTreeSet;
use std::time::Duration;
use tests::{Customer, Sandbox};

const EVENTS: [&str; 5] = [
    "order.created",
    "invoice.created",
    "invoice.updated",
    "payment.confirmed",
    "order.status_changed",
];

/// Verifies a delivery as docs/webhooks.md tells receivers to, and returns the parsed body.
pub(crate) fn verify(secret: &str, request: &RecordedRequest) -> Value {
    let header = request.header("x-svc-signature");
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value.to_owned()),
            _ => {}
        }
    }
    let t = timestamp.expect("the signature header carries t=");
    assert!(
        (chrono::Utc::now().timestamp() - t).abs() <= 300,
        "timestamp within tolerance"
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(&request.body);
    let expected = hex::encode(mac.finalize().into_bytes());
    assert!(
        signatures.contains(&expected),
        "a v1 signature matches the raw body: {header}"
    );
    serde_json::from_slice(&request.body).expect("the body is JSON")
}

async fn register(sandbox: &Sandbox, customer: &Customer, url: &str, key: &str) -> (String, String) {
    let body = json!({ "url": url, "events": EVENTS });
    let answer = sandbox
        .post(&customer.key, "/webhooks", &body, &[("Idempotency-Key", key)])
        .await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    let endpoint = answer.body["data"]["endpoint"]["id"].as_str().unwrap().to_owned();
    let secret = answer.body["data"]["signingSecret"].as_str().unwrap().to_owned();
    (endpoint, secret)
}

#[tokio::test]
async fn an_agent_receives_its_order_lifecycle_as_signed_webhooks_and_another_customer_receives_none() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let alice = sandbox.customer("Hook Alice", "all").await;
    let bob = sandbox.customer("Hook Bob", "all").await;
    let (alice_endpoint, alice_secret) =
        register(&sandbox, &alice, &receiver.url("/alice"), "hook-alice-1").await;
    register(&sandbox, &bob, &receiver.url("/bob"), "hook-bob-1").await;

    let listed = sandbox.get(&alice.key, "/webhooks").await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1);
    assert!(
        !listed.body.to_string().contains(&alice_secret),
        "the secret is never listed"
    );

    let quote = quote(&sandbox, &alice, &["BPC-157"]).await;
    let order = place_order(
        &sandbox,
        &alice,
        &order_body(quote["id"].as_str().unwrap()),
        "hook-order-1",
    )
    .await;
    assert_eq!(order.status, 201, "{:?}", order.body);
    let order = &order.body["data"]["order"];
    let order_id = order["id"].as_str().unwrap();
    let total = order["totalCents"].as_i64().unwrap().to_string();
    let invoice = order["payment"]["invoiceNumber"].as_str().unwrap();
    // Ship-first: the label moves the order to label_generated; the payment then moves nothing.
    crate::support::wait_for_label(&sandbox, &alice, order_id).await;
    crate::support::record_bank_payment(&sandbox, invoice, &total, "HOOK-1").await;

    let deliveries = wait_for(
        "every subscribed event at the receiver",
        Duration::from_secs(30),
        || async {
            let requests = receiver.requests_to("/alice");
            let types: BTreeSet<String> = requests
                .iter()
                .map(|request| request.header("x-svc-event-type"))
                .collect();
            (types.len() == EVENTS.len()).then_some(requests)
        },
    )
    .await;
    let mut seen_ids = BTreeSet::new();
    for request in &deliveries {
        let body = verify(&alice_secret, request);
        assert_eq!(request.header("x-svc-event-id"), body["id"].as_str().unwrap());
        assert!(!request.header("x-svc-delivery-id").is_empty());
        assert!(
            request.header("traceparent").starts_with("00-"),
            "deliveries carry trace context"
        );
        assert_eq!(body["apiVersion"], "2026-07-17");
        assert_eq!(body["data"]["order_id"], order_id, "{}", body["type"]);
        seen_ids.insert(body["id"].as_str().unwrap().to_owned());
        if body["type"] == "order.status_changed" {
            assert_eq!(
                (
                    body["data"]["from_status"].as_str(),
                    body["data"]["to_status"].as_str()
                ),
                (Some("invoice_sent"), Some("label_generated"))
            );
        }
        if body["type"] == "invoice.updated" {
            assert_eq!(
                (
                    body["data"]["status"].as_str(),
                    body["data"]["previous_status"].as_str()
                ),
                (Some("paid"), Some("open"))
            );
        }
    }
    assert_eq!(
        seen_ids.len(),
        EVENTS.len(),
        "one event id per event; any duplicate repeats its id"
    );
    assert!(
        receiver.requests_to("/bob").is_empty(),
        "another customer's endpoint receives nothing"
    );

    // Attempts are recorded just after the receiver answers: poll until every one is recorded.
    let listed = wait_for(
        "every delivery recorded as succeeded",
        Duration::from_secs(10),
        || async {
            let listed = sandbox
                .get(&alice.key, &format!("/webhooks/{alice_endpoint}/deliveries"))
                .await;
            let deliveries = listed.body["data"].as_array()?.clone();
            let all_succeeded = deliveries.len() == EVENTS.len()
                && deliveries
                    .iter()
                    .all(|delivery| delivery["status"] == "succeeded");
            all_succeeded.then_some(deliveries)
        },
    )
    .await;
    assert!(listed.iter().all(|delivery| {
        delivery["attempts"]
            .as_array()
            .is_some_and(|attempts| attempts.len() == 1)
    }));
    let foreign = sandbox
        .get(&bob.key, &format!("/webhooks/{alice_endpoint}/deliveries"))
        .await;
    assert_eq!(foreign.status, 404, "another customer's endpoint is not found");

    let test = sandbox
        .call(
            reqwest::Method::POST,
            &format!("/webhooks/{alice_endpoint}/test"),
            Some(&alice.key),
            None,
            &[("Idempotency-Key", "hook-test-1")],
        )
        .await;
    assert_eq!(test.status, 200, "{:?}", test.body);
    assert_eq!(test.body["data"]["delivery"]["status"], "succeeded");
    let test_request = receiver
        .requests_to("/alice")
        .into_iter()
        .find(|request| request.header("x-svc-event-type") == "webhook.test");
    verify(&alice_secret, &test_request.expect("the test delivery arrived"));
    sandbox.stop().await;
}

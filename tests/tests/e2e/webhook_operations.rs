//! What lab staff do with webhook deliveries, through labctl against the whole mesh: see dead
//! deliveries with every attempt, redeliver them once the receiver is back, and replay an
//! endpoint's events since a time with their original event ids.

use crate::support::{order_body, place_order, quote};
use platform::test_receiver::{Behaviour, TestReceiver};
use platform::testing::wait_for;
use serde_json::json;
use std::time::Duration;
use tests::Sandbox;
use webhooks_svc::domain::RetrySchedule;

#[tokio::test]
async fn staff_see_dead_deliveries_redeliver_them_and_replay_events_with_their_original_ids() {
    let receiver = TestReceiver::start().await;
    receiver.respond_with(Behaviour::status(500));
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
        settings.webhooks.delivery.retry_schedule =
            RetrySchedule::new(vec![Duration::from_millis(50), Duration::from_millis(50)]);
        settings.webhooks.delivery.poll_interval = Duration::from_millis(100);
    })
    .await;
    let agent = sandbox.customer("Watched Ops", "all").await;
    let body = json!({ "url": receiver.url("/ops"), "events": ["order.created"] });
    let endpoint = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &body,
            &[("Idempotency-Key", "ops-endpoint-1")],
        )
        .await;
    assert_eq!(endpoint.status, 201, "{:?}", endpoint.body);
    let endpoint_id = endpoint.body["data"]["endpoint"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let since = platform::time::rfc3339(platform::time::now() - chrono::Duration::minutes(5));

    let quote = quote(&sandbox, &agent, &["Kisspeptin"]).await;
    let order = place_order(
        &sandbox,
        &agent,
        &order_body(quote["id"].as_str().unwrap()),
        "ops-order-1",
    )
    .await;
    assert_eq!(order.status, 201);

    let dead = wait_for(
        "the delivery to exhaust its retries",
        Duration::from_secs(20),
        || async {
            let listed = sandbox
                .labctl(&[
                    "webhooks",
                    "deliveries",
                    "--endpoint",
                    &endpoint_id,
                    "--status",
                    "dead",
                ])
                .await
                .ok()?;
            listed
                .as_array()
                .filter(|deliveries| deliveries.len() == 1)
                .map(|deliveries| deliveries[0].clone())
        },
    )
    .await;
    let attempts = dead["attempts"].as_array().unwrap();
    assert_eq!(
        attempts.len(),
        3,
        "the first attempt and the two scheduled retries"
    );
    assert!(
        attempts
            .iter()
            .all(|attempt| attempt["statusCode"] == 500 && attempt["outcome"] == "failed")
    );
    let event_id = dead["eventId"].as_str().unwrap().to_owned();

    receiver.respond_with(Behaviour::ok());
    let redelivered = sandbox
        .labctl(&["webhooks", "redeliver", "--endpoint", &endpoint_id])
        .await
        .unwrap();
    assert_eq!(redelivered["queued"], 1);
    let successes = |receiver: &TestReceiver| {
        receiver
            .requests_to("/ops")
            .into_iter()
            .filter(|request| request.behaviour.status == 200)
            .map(|request| request.header("x-svc-event-id"))
            .collect::<Vec<_>>()
    };
    wait_for("the redelivery to arrive", Duration::from_secs(10), || async {
        (successes(&receiver) == [event_id.clone()]).then_some(())
    })
    .await;

    let replayed = sandbox
        .labctl(&[
            "webhooks",
            "replay",
            "--endpoint",
            &endpoint_id,
            "--since",
            &since,
        ])
        .await
        .unwrap();
    assert_eq!(replayed["queued"], 1, "one stored event since then");
    wait_for(
        "the replay to arrive with the original event id",
        Duration::from_secs(10),
        || async { (successes(&receiver) == [event_id.clone(), event_id.clone()]).then_some(()) },
    )
    .await;
    sandbox.stop().await;
}

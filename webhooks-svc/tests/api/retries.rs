//! Failures and recovery: 500s, timeouts and refused connections lose nothing; the schedule is
//! followed; exhausted deliveries die and can be redelivered; 410 disables; Retry-After holds.

use crate::envelopes::order_created;
use crate::helpers::{Options, REQUEST_TIMEOUT, new_path, spawn_app, spawn_app_with};
use crate::verify::assert_verified;
use platform::test_receiver::Behaviour;
use proto::webhooks as pb;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use uuid::Uuid;

fn millis_between(earlier: &pb::DeliveryAttempt, later: &pb::DeliveryAttempt) -> i64 {
    let time = |attempt: &pb::DeliveryAttempt| {
        let at = attempt.attempted_at.as_ref().unwrap();
        at.seconds * 1000 + i64::from(at.nanos) / 1_000_000
    };
    time(later) - time(earlier)
}

#[tokio::test]
async fn a_receiver_that_fails_times_out_and_refuses_then_recovers_gets_every_event() {
    let app = spawn_app_with(Options {
        schedule_ms: vec![
            100, 150, 200, 250, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        ],
        ..Options::default()
    })
    .await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let created = app.register(customer, &path, &["order.created"]).await;
    let endpoint_id = created.endpoint.unwrap().id;

    app.respond(&path, Behaviour::status(500));
    let events: Vec<_> = (0..8).map(|_| order_created(customer)).collect();
    for event in &events {
        app.publish(platform::streams::ORDERS, event).await;
    }
    app.wait_for_requests(&path, 12).await;
    app.respond(&path, Behaviour::ok().delayed(REQUEST_TIMEOUT * 2));
    app.wait_for_deliveries(customer, &endpoint_id, "attempts that timed out", |deliveries| {
        let timeouts = deliveries
            .iter()
            .flat_map(|delivery| delivery.attempts.iter())
            .filter(|attempt| {
                attempt
                    .error
                    .as_deref()
                    .is_some_and(|error| error.starts_with("timed out"))
            })
            .count();
        timeouts >= 4
    })
    .await;
    app.receiver.stop().await;
    app.wait_for_deliveries(
        customer,
        &endpoint_id,
        "attempts refused at connect",
        |deliveries| {
            deliveries
                .iter()
                .flat_map(|delivery| delivery.attempts.iter())
                .any(|attempt| {
                    attempt
                        .error
                        .as_deref()
                        .is_some_and(|error| error.starts_with("connection failed"))
                })
        },
    )
    .await;
    app.respond(&path, Behaviour::ok());
    app.receiver.resume().await;

    let deliveries = app
        .wait_for_deliveries(customer, &endpoint_id, "every delivery succeeded", |deliveries| {
            deliveries.len() == events.len()
                && deliveries.iter().all(|delivery| delivery.status == "succeeded")
        })
        .await;
    let requests = app.receiver.requests_to(&path);
    let published: HashSet<String> = events.iter().map(|event| event.id.clone()).collect();
    let delivered: HashSet<String> = requests
        .iter()
        .filter(|request| request.succeeded_within(REQUEST_TIMEOUT))
        .map(|request| request.header("x-svc-event-id"))
        .collect();
    assert_eq!(delivered, published, "every event arrived");
    let mut bodies: HashMap<String, Vec<u8>> = HashMap::new();
    for request in &requests {
        let id = request.header("x-svc-event-id");
        assert!(published.contains(&id), "only published events arrive");
        let body = bodies.entry(id).or_insert_with(|| request.body.clone());
        assert_eq!(body, &request.body, "a retry carries the identical body");
    }
    assert_verified(&requests, &created.signing_secret);

    let errors: Vec<String> = deliveries
        .iter()
        .flat_map(|delivery| delivery.attempts.iter())
        .filter_map(|attempt| attempt.error.clone())
        .collect();
    assert!(
        errors.iter().any(|error| error == "unexpected status 500"),
        "{errors:?}"
    );
    assert!(
        errors.iter().all(|error| !error.contains(&path)),
        "no URL in errors: {errors:?}"
    );
    assert!(
        errors.iter().any(|error| error.starts_with("timed out")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|error| error.starts_with("connection failed")),
        "{errors:?}"
    );
    for delivery in &deliveries {
        let last = delivery.attempts.last().unwrap();
        assert_eq!(last.outcome, "succeeded");
        assert_eq!(delivery.attempt_count as usize, delivery.attempts.len());
        assert_eq!(delivery.next_attempt_at, None);
    }
}

#[tokio::test]
async fn attempts_follow_the_schedule_then_die_and_staff_can_redeliver_them() {
    let schedule = [300u64, 600, 900];
    let app = spawn_app_with(Options {
        schedule_ms: schedule.to_vec(),
        ..Options::default()
    })
    .await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let created = app.register(customer, &path, &["order.created"]).await;
    let endpoint_id = created.endpoint.unwrap().id;
    app.respond(&path, Behaviour::status(503));
    app.publish(platform::streams::ORDERS, &order_created(customer))
        .await;
    let deliveries = app
        .wait_for_deliveries(customer, &endpoint_id, "a dead delivery", |deliveries| {
            deliveries
                .first()
                .is_some_and(|delivery| delivery.status == "dead")
        })
        .await;
    let attempts = &deliveries[0].attempts;
    assert_eq!(attempts.len(), schedule.len() + 1);
    for (index, wait) in schedule.iter().enumerate() {
        let gap = millis_between(&attempts[index], &attempts[index + 1]);
        let wait = *wait as i64;
        assert!(
            gap >= wait * 9 / 10 - 5 && gap <= wait * 11 / 10 + 250,
            "wait {index}: {gap} ms, scheduled {wait} ms ±10 %"
        );
    }
    assert!(attempts.iter().all(|attempt| attempt.status_code == Some(503)));
    assert_eq!(deliveries[0].next_attempt_at, None);

    app.respond(&path, Behaviour::ok());
    let customer_try = app
        .client
        .clone()
        .redeliver_dead_letters(platform::grpc::outgoing(
            pb::RedeliverDeadLettersRequest {
                endpoint_id: Some(endpoint_id.clone()),
            },
            &app.token(customer),
        ))
        .await
        .unwrap_err();
    assert_eq!(crate::helpers::code_of(&customer_try), "forbidden");
    let queued = app
        .client
        .clone()
        .redeliver_dead_letters(platform::grpc::outgoing(
            pb::RedeliverDeadLettersRequest {
                endpoint_id: Some(endpoint_id.clone()),
            },
            &app.staff(),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(queued.queued, 1);
    let deliveries = app
        .wait_for_deliveries(customer, &endpoint_id, "the redelivery succeeded", |deliveries| {
            deliveries[0].status == "succeeded"
        })
        .await;
    assert_eq!(deliveries[0].attempt_count, 5);
    let requests = app.receiver.requests_to(&path);
    assert_eq!(requests.len(), 5);
    assert_verified(&requests, &created.signing_secret);
}

#[tokio::test]
async fn a_410_disables_the_endpoint_and_abandons_its_deliveries() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let endpoint_id = app
        .register(customer, &path, &["order.created"])
        .await
        .endpoint
        .unwrap()
        .id;
    app.respond(&path, Behaviour::status(500));
    for _ in 0..3 {
        app.publish(platform::streams::ORDERS, &order_created(customer))
            .await;
    }
    app.wait_for_deliveries(customer, &endpoint_id, "three queued deliveries", |deliveries| {
        deliveries.len() == 3
    })
    .await;
    app.respond(&path, Behaviour::status(410));
    let deliveries = app
        .wait_for_deliveries(customer, &endpoint_id, "abandoned deliveries", |deliveries| {
            deliveries.len() == 3 && deliveries.iter().all(|delivery| delivery.status == "abandoned")
        })
        .await;
    let attempted = deliveries
        .iter()
        .filter(|delivery| !delivery.attempts.is_empty())
        .count();
    assert!(attempted >= 1);
    let listing = app
        .client
        .clone()
        .list_endpoints(platform::grpc::outgoing(
            pb::ListEndpointsRequest::default(),
            &app.token(customer),
        ))
        .await
        .unwrap()
        .into_inner();
    let endpoint = &listing.endpoints[0];
    assert_eq!(endpoint.status, "disabled");
    assert_eq!(
        endpoint.disabled_reason.as_deref(),
        Some("the endpoint answered 410 Gone")
    );

    let requests_before = app.receiver.requests_to(&path).len();
    app.publish(platform::streams::ORDERS, &order_created(customer))
        .await;
    platform::testing::nothing_more_arrives(
        "a delivery to the disabled endpoint",
        Duration::from_millis(500),
        || async { app.receiver.requests_to(&path).len() },
    )
    .await;
    assert_eq!(
        app.receiver.requests_to(&path).len(),
        requests_before,
        "a disabled endpoint gets nothing"
    );
    let test = app
        .client
        .clone()
        .send_test_delivery(platform::grpc::outgoing_idempotent(
            pb::SendTestDeliveryRequest {
                endpoint_id: endpoint_id.clone(),
            },
            &app.token(customer),
            &crate::helpers::new_key(),
        ))
        .await
        .unwrap_err();
    assert_eq!(crate::helpers::code_of(&test), "conflict");
}

#[tokio::test]
async fn retry_after_on_429_and_503_delays_the_next_attempt() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let (seconds_path, date_path) = (new_path(), new_path());
    let seconds_endpoint = app.register(customer, &seconds_path, &["order.created"]).await;
    let date_endpoint = app.register(customer, &date_path, &["invoice.created"]).await;
    app.script(&seconds_path, [Behaviour::status(429).with_retry_after("2")]);
    let in_two_seconds = (chrono::Utc::now() + chrono::Duration::seconds(3))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    app.script(
        &date_path,
        [Behaviour::status(503).with_retry_after(&in_two_seconds)],
    );
    app.publish(platform::streams::ORDERS, &order_created(customer))
        .await;
    let invoice = crate::envelopes::envelope(
        customer,
        "invoice.created",
        proto::events::event_envelope::Data::InvoiceCreated(Default::default()),
    );
    app.publish(platform::streams::PAYMENTS, &invoice).await;

    for (endpoint, minimum_ms) in [(seconds_endpoint, 2000), (date_endpoint, 1000)] {
        let endpoint_id = endpoint.endpoint.unwrap().id;
        let deliveries = app
            .wait_for_deliveries(
                customer,
                &endpoint_id,
                "a success after Retry-After",
                |deliveries| {
                    deliveries
                        .first()
                        .is_some_and(|delivery| delivery.status == "succeeded")
                },
            )
            .await;
        let attempts = &deliveries[0].attempts;
        assert_eq!(attempts.len(), 2);
        let gap = millis_between(&attempts[0], &attempts[1]);
        assert!(gap >= minimum_ms, "waited only {gap} ms");
        assert!(gap < 4_500, "waited {gap} ms");
    }
}

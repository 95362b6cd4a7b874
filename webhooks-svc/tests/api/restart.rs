//! Killing webhooks-svc mid-delivery and starting a new one on the same database loses nothing.

use crate::envelopes::order_created;
use crate::helpers::{Options, REQUEST_TIMEOUT, new_path, spawn_app_with};
use crate::verify::assert_verified;
use platform::test_receiver::Behaviour;
use std::collections::HashSet;
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn a_service_killed_mid_delivery_loses_nothing_after_a_restart() {
    let options = Options {
        lease: Duration::from_millis(1600),
        shutdown_grace: Duration::ZERO,
        ..Options::default()
    };
    let mut app = spawn_app_with(options.clone()).await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let created = app.register(customer, &path, &["order.created"]).await;
    let endpoint_id = created.endpoint.unwrap().id;

    // The receiver hangs, so attempts are in flight when the service dies.
    app.respond(&path, Behaviour::ok().delayed(Duration::from_secs(5)));
    let before: Vec<_> = (0..5).map(|_| order_created(customer)).collect();
    for event in &before {
        app.publish(platform::streams::ORDERS, event).await;
    }
    app.wait_for_requests(&path, 5).await;
    app.stop().await;

    // Events keep coming while it is down; the receiver recovers.
    let during: Vec<_> = (0..5).map(|_| order_created(customer)).collect();
    for event in &during {
        app.publish(platform::streams::ORDERS, event).await;
    }
    app.respond(&path, Behaviour::ok());
    app.start_again(options).await;

    app.wait_for_deliveries(customer, &endpoint_id, "ten succeeded deliveries", |deliveries| {
        deliveries.len() == 10 && deliveries.iter().all(|delivery| delivery.status == "succeeded")
    })
    .await;
    let requests = app.receiver.requests_to(&path);
    let published: HashSet<String> = before
        .iter()
        .chain(&during)
        .map(|event| event.id.clone())
        .collect();
    let delivered: HashSet<String> = requests
        .iter()
        .filter(|request| request.succeeded_within(REQUEST_TIMEOUT))
        .map(|request| request.header("x-svc-event-id"))
        .collect();
    assert_eq!(delivered, published);
    assert!(
        requests
            .iter()
            .all(|request| published.contains(&request.header("x-svc-event-id")))
    );
    assert_verified(&requests, &created.signing_secret);
}

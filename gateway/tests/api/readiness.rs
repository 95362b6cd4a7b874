//! Readiness, per-peer health (`labctl health`), the request time limit, the concurrency limit
//! and the bounded drain.

use crate::helpers::{error_envelope, json_with_status, spawn_app, spawn_app_with};
use clap::Parser;
use std::time::{Duration, Instant};

fn closed_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[tokio::test]
async fn readiness_stays_200_while_a_peer_is_down_and_labctl_health_names_it() {
    let app =
        spawn_app_with(|settings| settings.peers.webhooks = format!("http://{}", closed_address())).await;
    let ready = app.http.get(app.url("/api/ready")).send().await.unwrap();
    assert_eq!(
        json_with_status(ready, 200).await,
        serde_json::json!({ "status": "ready" })
    );
    // Peers that answer but do not serve do not matter to readiness either.
    app.fakes.set_serving(false).await;
    json_with_status(app.http.get(app.url("/api/ready")).send().await.unwrap(), 200).await;

    let cli = labctl::Cli::parse_from([
        "labctl",
        "--identity-addr",
        &app.identity.url,
        "--gateway-addr",
        &app.grpc_url,
        "--credential",
        identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL,
        "health",
    ]);
    let report = labctl::execute(cli).await.unwrap();
    assert_eq!(report["healthy"], false, "{report}");
    let status = |name: &str| {
        report["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|component| component["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from {report}"))["status"]
            .clone()
    };
    assert_eq!(status("identity-svc"), "serving");
    assert_eq!(status("gateway-redis"), "serving");
    assert_eq!(status("webhooks-svc"), "unreachable");
    assert_eq!(status("catalog-svc"), "not_serving");
    app.fakes.set_serving(true).await;
    let cli = labctl::Cli::parse_from([
        "labctl",
        "--identity-addr",
        &app.identity.url,
        "--gateway-addr",
        &app.grpc_url,
        "--credential",
        identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL,
        "health",
    ]);
    let report = labctl::execute(cli).await.unwrap();
    assert_eq!(status_of(&report, "orders-svc"), "serving");
    assert_eq!(status_of(&report, "webhooks-svc"), "unreachable");
}

fn status_of(report: &serde_json::Value, name: &str) -> String {
    report["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|component| component["name"] == name)
        .map(|component| component["status"].as_str().unwrap().to_owned())
        .unwrap()
}

#[tokio::test]
async fn readiness_is_503_naming_nothing_when_the_gateways_redis_is_down() {
    let app =
        spawn_app_with(|settings| settings.common.redis_url = format!("redis://{}", closed_address())).await;
    let response = app.http.get(app.url("/api/ready")).send().await.unwrap();
    assert_eq!(
        json_with_status(response, 503).await,
        serde_json::json!({ "status": "not_ready" })
    );
}

#[tokio::test]
async fn a_request_over_the_time_limit_is_a_504_in_the_envelope() {
    let app =
        spawn_app_with(|settings| settings.front_door.request_timeout = Duration::from_millis(300)).await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    json_with_status(app.get("/orders/slow-10", &customer.plaintext).await, 200).await;
    let started = Instant::now();
    let response = app.get("/orders/slow-3000", &customer.plaintext).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    error_envelope(response, 504, "timeout").await;
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_are_shed_with_503_overloaded() {
    let app = spawn_app_with(|settings| settings.front_door.max_concurrent_requests = 1).await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let slow = tokio::spawn({
        let request = app
            .http
            .get(app.agent("/orders/slow-1500"))
            .bearer_auth(&customer.plaintext);
        async move { request.send().await.unwrap().status() }
    });
    platform::testing::wait_for(
        "the slow call to be in flight",
        Duration::from_secs(5),
        || async { (!app.fakes.calls_of("GetOrderView").is_empty()).then_some(()) },
    )
    .await;
    let shed = app.get("/orders", &customer.plaintext).await;
    assert_eq!(shed.headers()["retry-after"], "1");
    error_envelope(shed, 503, "overloaded").await;
    assert_eq!(slow.await.unwrap(), 200);
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
}

#[tokio::test]
async fn a_draining_gateway_finishes_requests_in_flight_and_stops_accepting() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let in_flight = tokio::spawn({
        let request = app
            .http
            .get(app.agent("/orders/slow-700"))
            .bearer_auth(&customer.plaintext);
        async move { request.send().await.unwrap().status() }
    });
    platform::testing::wait_for("the call to be in flight", Duration::from_secs(5), || async {
        (!app.fakes.calls_of("GetOrderView").is_empty()).then_some(())
    })
    .await;
    let ready_url = app.url("/api/ready");
    app.shutdown.cancel();
    assert_eq!(in_flight.await.unwrap(), 200);
    tokio::time::timeout(Duration::from_secs(5), app.server)
        .await
        .expect("the gateway stopped")
        .unwrap()
        .unwrap();
    let refused = reqwest::Client::new().get(ready_url).send().await;
    assert!(refused.is_err(), "still accepting: {refused:?}");
}

#[tokio::test]
async fn the_drain_is_bounded_by_its_grace_period() {
    let app = spawn_app_with(|settings| settings.front_door.drain_grace = Duration::from_millis(300)).await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let _stuck = tokio::spawn({
        let request = app
            .http
            .get(app.agent("/orders/slow-5000"))
            .bearer_auth(&customer.plaintext);
        async move { request.send().await }
    });
    platform::testing::wait_for("the call to be in flight", Duration::from_secs(5), || async {
        (!app.fakes.calls_of("GetOrderView").is_empty()).then_some(())
    })
    .await;
    let started = Instant::now();
    app.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(3), app.server)
        .await
        .expect("the drain ended at its grace period")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
}

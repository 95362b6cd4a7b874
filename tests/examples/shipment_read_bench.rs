//! `GET /shipments/{reference}` throughput through the whole mesh: starts a sandbox, places a bank
//! order, waits for its label, records three scans, then reads the shipment by tracking number
//! from C concurrent clients for S seconds and prints requests per second and latency
//! percentiles; then, as the side-by-side reference of the same run, reads the same order with
//! `GET /orders/{id}` (gateway auth, gRPC to orders-svc, which also asks shipping-svc for the
//! `shipping` block) the same way. `cargo run --release -p tests --example shipment_read_bench
//! [-- C S]` (needs TEST_DATABASE_URL and TEST_REDIS_URL, as the tests).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tests::Sandbox;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let clients: usize = args.first().and_then(|text| text.parse().ok()).unwrap_or(16);
    let seconds: u64 = args.get(1).and_then(|text| text.parse().ok()).unwrap_or(10);
    let sandbox = Sandbox::start().await;
    let (agent, order_id) = sandbox.seeded_bank_order("Bench Bo", "bench-order-0001").await;
    let tracking = platform::testing::wait_for("the label", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        answer.body["data"]["order"]["shipping"]["trackingNumber"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    for (status, at) in [
        ("in_transit", "2026-11-20T10:00:00Z"),
        ("in_transit", "2026-11-20T18:00:00Z"),
        ("out_for_delivery", "2026-11-21T08:00:00Z"),
    ] {
        sandbox
            .labctl(&[
                "shipments",
                "scan",
                &tracking,
                "--status",
                status,
                "--occurred-at",
                at,
            ])
            .await
            .unwrap();
    }
    let shipment_url = format!("{}/api/v1/agent/shipments/{tracking}", sandbox.base_url);
    let order_url = format!("{}/api/v1/agent/orders/{order_id}", sandbox.base_url);
    for (route, url) in [
        ("GET /shipments/{reference}", shipment_url),
        ("GET /orders/{id} (reference)", order_url),
    ] {
        let timings = drive(&sandbox.http, &url, &agent.key, clients, seconds).await;
        let at = |quantile: f64| timings[((timings.len() as f64 * quantile) as usize).min(timings.len() - 1)];
        println!(
            "{route}: {clients} clients, {seconds} s: {} requests, {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms",
            timings.len(),
            timings.len() as f64 / seconds as f64,
            at(0.50).as_secs_f64() * 1000.0,
            at(0.99).as_secs_f64() * 1000.0,
        );
    }
    sandbox.stop().await;
}

/// Reads `url` with `key` from `clients` concurrent clients for `seconds`; the sorted latencies.
async fn drive(http: &reqwest::Client, url: &str, key: &str, clients: usize, seconds: u64) -> Vec<Duration> {
    let (url, key) = (Arc::new(url.to_owned()), Arc::new(key.to_owned()));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for _ in 0..clients {
        let (http, url, key) = (http.clone(), url.clone(), key.clone());
        workers.push(tokio::spawn(async move {
            let mut timings = Vec::new();
            while Instant::now() < deadline {
                let started = Instant::now();
                let response = http
                    .get(url.as_str())
                    .bearer_auth(key.as_str())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let _ = response.bytes().await.unwrap();
                timings.push(started.elapsed());
            }
            timings
        }));
    }
    let mut timings = Vec::new();
    for worker in workers {
        timings.extend(worker.await.unwrap());
    }
    timings.sort();
    timings
}

//! What the trace span layer costs per API read, in-process and without the network: the spans
//! one `GET /orders/{id}` makes across the gateway and orders-svc (HTTP server, RPC client, RPC
//! server, one statement), with their fields, recorded values, polls (enter and exit) and
//! trace-context hand-over, done in a loop under the subscriber `telemetry::install` builds:
//!
//! * `off`: the log layer only (filtered by `warn`), as without an exporter: the spans are
//!   disabled;
//! * `on`: with the span layer, every span sampled and encoded into the export queue, which a
//!   thread empties as the exporter would (without sending).
//!
//! `cargo run --release -p platform --example span_cost [-- --requests 200000 --threads 1]`
//! prints ns per request for each, best of five rounds (`--threads 2`: two threads at once, as
//! a runtime's workers share the subscriber). The mesh benchmark (`deploy/bench/tracing.sh`)
//! measures the whole cost; this one isolates the layer's share of it, to work on it.

use platform::telemetry::otlp::Queue;
use platform::telemetry::spans::{Sampler, SpanLayer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tracing::field::Empty;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer};

const POLLS: usize = 6;

/// One read through the gateway and orders-svc, as their code makes its spans.
fn one_request(request_id: &str) {
    // gateway: the HTTP server span (gateway::http::layers::request_span, record_metrics)
    let http = tracing::info_span!(
        "http.request",
        otel.name = %http::Method::GET,
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %http::Method::GET,
        http.route = Empty,
        http.response.status_code = Empty,
        url.path = "/api/v1/agent/orders/0f0e8c8e-5b1a-4f55-9a53-000000000001",
        url.scheme = "http",
        "http.request.header.x-request-id" = request_id,
        lab.api_key.id = Empty,
        lab.customer.id = Empty,
    );
    http.record("http.route", "/api/v1/agent/orders/{id}");
    platform::telemetry::rename(&http, format!("GET {}", "/api/v1/agent/orders/{id}"));
    http.record("lab.api_key.id", "key_01J9ZK3QW0000000000000000");
    http.record("lab.customer.id", "cus_01J9ZK3QW0000000000000000");
    // gateway: the RPC client span and the traceparent it sends
    let traceparent = {
        let _http = http.enter();
        let client = platform::telemetry::semconv::rpc_client(
            "/lab.orders.v1.OrdersService/GetOrderView",
            "orders-svc:50052",
        );
        for _ in 0..POLLS {
            let _entered = client.enter();
        }
        let (traceparent, _) = platform::telemetry::trace_context_of(&client).unwrap_or_default();
        platform::telemetry::semconv::record_grpc_status(&client, 0, false);
        traceparent
    };
    // orders-svc: the RPC server span continuing it, and the statement
    let server = platform::telemetry::semconv::rpc_server("/lab.orders.v1.OrdersService/GetOrderView");
    platform::telemetry::continue_trace(&server, &traceparent, "");
    {
        let _server = server.enter();
        let statement = tracing::info_span!(
            "db",
            otel.name = "SELECT orders.order_views",
            otel.kind = "client",
            db.system.name = "postgresql",
            db.operation.name = "SELECT",
            db.collection.name = "orders.order_views"
        );
        for _ in 0..POLLS {
            let _entered = statement.enter();
        }
    }
    for _ in 0..POLLS {
        let _entered = server.enter();
    }
    platform::telemetry::semconv::record_grpc_status(&server, 0, true);
    drop(server);
    for _ in 0..POLLS {
        let _entered = http.enter();
    }
    http.record("http.response.status_code", 200u16);
}

/// The log layer as `telemetry::install` sets it, with `RUST_LOG=warn`.
fn fmt<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_subscriber::fmt::layer()
        .with_target(false)
        .compact()
        .boxed()
        .with_filter(EnvFilter::new("warn"))
}

fn measure(requests: usize) -> f64 {
    let ids: Vec<String> = (0..64).map(|index| format!("req-{index:032}")).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        for index in 0..requests {
            one_request(&ids[index % ids.len()]);
        }
        best = best.min(started.elapsed().as_nanos() as f64 / requests as f64);
    }
    best
}

/// Runs [`measure`] on `threads` threads at once under `dispatch` (as a runtime's workers share
/// one subscriber) and answers the mean of their ns per request.
fn on_threads(dispatch: tracing::Dispatch, threads: usize, requests: usize) -> f64 {
    let handles: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let dispatch = dispatch.clone();
            std::thread::spawn(move || tracing::dispatcher::with_default(&dispatch, || measure(requests)))
        })
        .collect();
    let each: Vec<f64> = handles
        .into_iter()
        .map(|handle| handle.join().unwrap_or(f64::NAN))
        .collect();
    each.iter().sum::<f64>() / each.len() as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let requests = args
        .iter()
        .position(|arg| arg == "--requests")
        .and_then(|at| args.get(at + 1)?.parse().ok())
        .unwrap_or(200_000);
    let off = tracing_subscriber::registry().with(fmt());
    let threads: usize = args
        .iter()
        .position(|arg| arg == "--threads")
        .and_then(|at| args.get(at + 1)?.parse().ok())
        .unwrap_or(1);
    let off_ns = on_threads(tracing::Dispatch::new(off), threads, requests);

    let queue = Arc::new(Queue::new(2048, 8192));
    let stop = Arc::new(AtomicBool::new(false));
    let drain = {
        let (queue, stop) = (Arc::clone(&queue), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut spans = 0;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(1));
                for batch in queue.take() {
                    spans += batch.spans;
                    queue.recycle(batch.bytes);
                }
            }
            spans
        })
    };
    // The span layer as `telemetry::install` sets it.
    let layer =
        SpanLayer::new(Sampler::from_env(None, None), Arc::clone(&queue)).with_logs(EnvFilter::new("warn"));
    let on = tracing_subscriber::registry().with(layer).with(fmt());
    let on_ns = on_threads(tracing::Dispatch::new(on), threads, requests);
    stop.store(true, Ordering::Relaxed);
    let spans = drain.join().unwrap_or_default();
    println!("requests per round: {requests}, best of 5 rounds, {threads} thread(s) at once");
    println!("off: {off_ns:.0} ns per request");
    println!(
        "on:  {on_ns:.0} ns per request (+{:.0} ns; {spans} spans encoded, {} dropped)",
        on_ns - off_ns,
        queue.dropped()
    );
}

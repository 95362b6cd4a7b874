//! The Prometheus endpoint: a scrape parses with the reference OpenMetrics parser (PyPI
//! `prometheus_client`) and its values move when traffic flows through the mesh.
//!
//! The registry is the process's, shared by every sandbox of this test binary: assertions are
//! about increases and this sandbox's own streams, never absolute counts. The first sandbox runs
//! the stablecoin rail (against anvil) so that its gauges are in the scrape the alerting rules
//! are checked against.

use crate::stablecoin::anvil::Anvil;
use crate::stablecoin::rail_settings;
use crate::support::bank_order;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use tests::Sandbox;

/// One sample of a scrape: metric name with its labels in a stable order, and value.
type Samples = HashMap<String, f64>;

async fn scrape(sandbox: &Sandbox) -> (String, String) {
    let addr = sandbox
        .in_process()
        .metrics_addr
        .expect("a sandbox serves metrics");
    let response = reqwest::get(format!("http://{addr}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    (content_type, response.text().await.unwrap())
}

/// Parses a scrape with the reference OpenMetrics parser of PyPI `prometheus_client` and
/// returns every sample as `name{label="value",…}` (labels sorted) → value. `None` when
/// Python or the package is missing and the suite does not require them.
fn parse_with_reference_parser(text: &str) -> Option<Samples> {
    let available = std::process::Command::new("python3")
        .args(["-c", "import prometheus_client.openmetrics.parser"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !available {
        // The README's test command installs it and sets LAB_REQUIRE_PYTHON_TOOLS.
        assert!(
            std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_none(),
            "LAB_REQUIRE_PYTHON_TOOLS is set but `import prometheus_client` fails"
        );
        return None;
    }
    let script = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
        print(f"{sample.name}{{{labels}}}\t{sample.value!r}")
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the OpenMetrics parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(sample, value)| (sample.to_owned(), value.parse().unwrap_or(f64::NAN)))
            .collect(),
    )
}

/// Our own reading of the text format, for the values the assertions need (the reference
/// parser above checks the syntax).
fn samples(text: &str) -> Samples {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| line.rsplit_once(' '))
        .map(|(sample, value)| {
            let (name, labels) = match sample.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (sample, ""),
            };
            let mut labels: Vec<&str> = labels.split("\",").filter(|l| !l.is_empty()).collect();
            labels.sort_unstable();
            let labels: Vec<String> = labels
                .iter()
                .map(|label| format!("{}\"", label.trim_end_matches('"')))
                .collect();
            (
                format!("{name}{{{}}}", labels.join(",")),
                value.parse().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

/// The value of the sample whose name is `name` and whose labels include every one of `labels`.
fn value(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(sample, _)| {
            sample.starts_with(&format!("{name}{{"))
                && labels
                    .iter()
                    .all(|(key, value)| sample.contains(&format!("{key}=\"{value}\"")))
        })
        .map(|(_, value)| *value)
        .sum()
}

#[tokio::test]
async fn a_scrape_parses_as_openmetrics_and_its_counters_move_when_an_order_flows_through_the_mesh() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    // The rail needs no token here: the scanner reads an address without logs.
    let anvil = Anvil::start().await;
    let rail = rail_settings(&anvil, anvil.accounts[8], anvil.accounts[9]);
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.stablecoin = Some(rail);
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Metrics Buyer", "all").await;
    let hook = json!({ "url": receiver.url("/metrics-hook"), "events": ["order.created"] });
    let registered = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &hook,
            &[("Idempotency-Key", "metrics-hook-0001")],
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let (content_type, before_text) = scrape(&sandbox).await;
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let before = samples(&before_text);
    if let Some(parsed) = parse_with_reference_parser(&before_text) {
        assert!(!parsed.is_empty());
    }

    let (order_id, invoice_number, total) = bank_order(&sandbox, &agent, "metrics-order-0001").await;
    crate::support::record_bank_payment(&sandbox, &invoice_number, &total, "BANK-METRICS-0001").await;
    let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(answer.status, 200);
    let missing = sandbox.get(&agent.key, "/orders/ORD-DOES-NOT-EXIST").await;
    assert_eq!(missing.status, 404);

    // payments-svc consumes order.created and answers with the invoice events; wait until the
    // consumer groups on this sandbox's orders stream report nothing pending or lagging.
    let orders_stream = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::ORDERS);
    let after = wait_for(
        "the order's events to be consumed",
        Duration::from_secs(30),
        || async {
            let (_, text) = scrape(&sandbox).await;
            let samples = samples(&text);
            let consumed = value(
                &samples,
                "stream_events_consumed_total",
                &[("stream", &orders_stream), ("outcome", "applied")],
            );
            let pending = value(
                &samples,
                "stream_consumer_pending_entries",
                &[("stream", &orders_stream)],
            );
            // Every group must have read the stream too: one group done says nothing of the others.
            let lag = value(
                &samples,
                "stream_consumer_lag_entries",
                &[("stream", &orders_stream)],
            );
            let delivered = value(&samples, "webhook_deliveries_total", &[("outcome", "delivered")])
                - value(&before, "webhook_deliveries_total", &[("outcome", "delivered")]);
            (consumed >= 1.0 && pending == 0.0 && lag == 0.0 && delivered >= 1.0).then_some((text, samples))
        },
    )
    .await;
    let (after_text, after) = after;
    if let Some(parsed) = parse_with_reference_parser(&after_text) {
        assert!(
            parsed
                .keys()
                .any(|sample| sample.starts_with("rpc_server_requests_total{")),
            "the reference parser reads the RPC counters"
        );
    }

    let grew =
        |name: &str, labels: &[(&str, &str)]| value(&after, name, labels) - value(&before, name, labels);
    assert!(
        grew(
            "http_server_requests_total",
            &[
                ("http_route", "/api/v1/agent/orders"),
                ("http_request_method", "POST"),
                ("http_response_status_code", "201")
            ]
        ) >= 1.0,
        "the order's POST is counted under its route template"
    );
    assert!(
        grew(
            "http_server_requests_total",
            &[
                ("http_route", "/api/v1/agent/orders/{reference}"),
                ("http_response_status_code", "404")
            ]
        ) >= 1.0,
        "a miss is counted under the template, not the concrete path"
    );
    assert!(
        !after_text.contains("ORD-DOES-NOT-EXIST"),
        "no concrete path becomes a label"
    );
    assert!(
        grew(
            "http_server_request_duration_seconds_count",
            &[("http_route", "/api/v1/agent/orders/{reference}")]
        ) >= 2.0
    );
    assert!(
        grew(
            "rpc_server_requests_total",
            &[("rpc_method", "CreateOrder"), ("rpc_grpc_status_code", "0")]
        ) >= 1.0,
        "orders-svc counts the call"
    );
    assert!(
        grew(
            "rpc_server_requests_total",
            &[("rpc_method", "GetOrderView"), ("rpc_grpc_status_code", "5")]
        ) >= 1.0,
        "a NOT_FOUND answer is counted with its status code"
    );
    assert!(grew("outbox_published_events_total", &[("service", "orders-svc")]) >= 1.0);
    assert!(
        grew(
            "payment_settlements_total",
            &[("rail", "bank"), ("outcome", "paid")]
        ) >= 1.0,
        "the bank payment that paid the invoice is counted"
    );
    assert!(
        grew(
            "webhook_delivery_duration_seconds_count",
            &[("outcome", "delivered")]
        ) >= 1.0,
        "the order.created webhook's attempt is timed"
    );
    assert!(!receiver.requests().is_empty(), "the receiver got the webhook");
    assert!(grew("outbox_publish_lag_seconds_count", &[("service", "orders-svc")]) >= 1.0);
    assert_eq!(
        value(
            &after,
            "stream_consumer_lag_entries",
            &[("stream", &orders_stream)]
        ),
        0.0,
        "every consumer of the orders stream has read it all"
    );
    assert!(value(&after, "db_client_connections_max", &[("service", "orders-svc")]) >= 1.0);
    assert!(
        after_text.contains(&format!(
            "stream_dead_letter_entries{{stream=\"{orders_stream}:dead\"}} 0"
        )),
        "the dead-letter stream's length is reported"
    );
    assert!(
        after
            .keys()
            .any(|sample| sample.starts_with("outbox_backlog_events{")),
        "the outbox backlog is reported"
    );
    // The alerting rules name only metrics a live scrape has.
    let rules = std::fs::read_to_string(format!(
        "{}/../deploy/prometheus/alerts.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let prefixes = [
        "outbox_",
        "stream_",
        "http_server_",
        "rpc_server_",
        "db_client_",
        "webhook_",
        "payment_",
        "stablecoin_",
    ];
    let named: std::collections::BTreeSet<&str> = rules
        .lines()
        .filter(|line| !line.trim_start().starts_with('#') && !line.contains("runbook:"))
        .flat_map(|line| line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|word| prefixes.iter().any(|prefix| word.starts_with(prefix)))
        .collect();
    assert!(named.len() >= 8, "the rules use the mesh's metrics: {named:?}");
    for name in named {
        assert!(
            after
                .keys()
                .any(|sample| sample.starts_with(&format!("{name}{{"))),
            "alerts.yaml names {name}, which no scrape exposes"
        );
    }
    sandbox.stop().await;
}

#[tokio::test]
async fn the_metrics_port_serves_only_metrics() {
    let sandbox = Sandbox::start().await;
    let addr = sandbox.in_process().metrics_addr.unwrap();
    let client = reqwest::Client::new();
    let other = client.get(format!("http://{addr}/")).send().await.unwrap();
    assert_eq!(other.status(), 404);
    let post = client
        .post(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["allow"], "GET, HEAD");
    sandbox.stop().await;
}

/// Scrapes the endpoint at `addr`: checks the content type and the reference parser, and
/// returns the samples.
async fn scrape_process(addr: std::net::SocketAddr) -> Samples {
    let response = reqwest::get(format!("http://{addr}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    if let Some(parsed) = parse_with_reference_parser(&text) {
        assert!(
            !parsed.is_empty(),
            "the reference parser read samples from {addr}"
        );
    }
    samples(&text)
}

/// A process, a metric of its registry and the labels of the samples that must grow.
type Moving = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

#[tokio::test]
async fn every_service_process_serves_metrics_that_parse_and_move_when_an_order_flows() {
    let receiver = TestReceiver::start().await;
    let ca_file = std::env::temp_dir().join(format!("lab-metrics-ca-{}.pem", uuid::Uuid::new_v4()));
    std::fs::write(&ca_file, receiver.ca_pem()).unwrap();
    let plan = tests::processes::Plan::new(env!("CARGO_BIN_EXE_lab-process"))
        .env("WEBHOOKS_ALLOW_LOOPBACK_TARGETS", "1")
        .env("WEBHOOKS_EXTRA_ROOT_CERTS_FILE", ca_file.to_string_lossy());
    let sandbox = Sandbox::start_processes(&plan).await;
    let agent = sandbox.customer("Process Metrics", "all").await;
    let hook = json!({ "url": receiver.url("/process-hook"), "events": ["order.created"] });
    let registered = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &hook,
            &[("Idempotency-Key", "process-hook-1")],
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let mesh = sandbox.processes();
    // What must move in each process's own registry when an order flows.
    let moving: [Moving; 8] = [
        (
            "gateway",
            "http_server_requests_total",
            &[("http_route", "/api/v1/agent/orders")],
        ),
        // shipping-svc reads the customer's contact for the label (GetCustomer).
        ("identity-svc", "rpc_server_requests_total", &[]),
        ("catalog-svc", "rpc_server_requests_total", &[]),
        (
            "orders-svc",
            "rpc_server_requests_total",
            &[("rpc_method", "CreateOrder")],
        ),
        ("payments-svc", "rpc_server_requests_total", &[]),
        (
            "shipping-svc",
            "stream_events_consumed_total",
            &[("outcome", "applied")],
        ),
        (
            "results-svc",
            "stream_events_consumed_total",
            &[("outcome", "applied")],
        ),
        (
            "webhooks-svc",
            "webhook_deliveries_total",
            &[("outcome", "delivered")],
        ),
    ];
    let mut before = HashMap::new();
    for (service, name, labels) in moving {
        let samples = scrape_process(mesh.metrics_addr(service, 0)).await;
        before.insert(service, value(&samples, name, labels));
    }
    bank_order(&sandbox, &agent, "process-metrics-order-1").await;
    for (service, name, labels) in moving {
        let addr = mesh.metrics_addr(service, 0);
        let was = before[service];
        wait_for(
            &format!("{service}'s {name} to move"),
            Duration::from_secs(30),
            || async move {
                let now = value(&scrape_process(addr).await, name, labels);
                (now > was).then_some(())
            },
        )
        .await;
    }
    sandbox.stop().await;
}

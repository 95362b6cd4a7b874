//! The mesh over mutual TLS end to end, as a deployment runs it: the gateway and every domain
//! service in a process of its own (`lab-process`), each with its own certificate of one
//! throw-away CA (`GRPC_TLS_CERT_FILE`, `GRPC_TLS_KEY_FILE`, `GRPC_TLS_CA_FILE`), peers named
//! by host name (`dns:///localhost:<port>`, verified against the certificates while the
//! connections go to the resolved addresses), each service's readiness on its plaintext health
//! port, and labctl with an operator's client certificate over `https://`
//! (`tests::processes`, `Plan::tls`).

use crate::support::{bank_order, wait_for_label};
use clap::Parser;
use std::time::Duration;
use tests::Sandbox;
use tests::processes::Plan;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

#[tokio::test]
async fn the_mesh_places_an_order_over_mutual_tls_and_labctl_reaches_it_only_over_tls() {
    // Starting imports the catalog with labctl (catalog-svc) and waits until `labctl health`
    // (the gateway's internal API, which checks every peer) reports every process serving:
    // both over TLS.
    let plan = Plan::new(env!("CARGO_BIN_EXE_lab-process")).tls();
    let sandbox = Sandbox::start_processes(&plan).await;
    let mesh = sandbox.processes();

    // labctl → identity-svc (customer and key); REST → gateway → identity-svc (the key) and
    // orders-svc → catalog-svc
    // and payments-svc; then shipping-svc consumes order.created and buys the label, reading
    // the customer at identity-svc and the quote at catalog-svc.
    let customer = sandbox.customer("Tls Tessa", "all").await;
    let (order_id, invoice_number, _) = bank_order(&sandbox, &customer, "tls-order-0001").await;
    assert!(invoice_number.starts_with("INV-"), "{invoice_number}");
    let order = wait_for_label(&sandbox, &customer, &order_id).await;
    assert!(
        order["shipping"]["trackingNumber"]
            .as_str()
            .is_some_and(|tracking| !tracking.is_empty()),
        "{order}"
    );
    let operators = sandbox
        .labctl(&["operators", "list"])
        .await
        .expect("labctl over TLS");
    assert!(
        operators
            .as_array()
            .unwrap()
            .iter()
            .any(|operator| operator["name"] == "dev-operator"),
        "{operators}"
    );

    // Without TLS material labctl speaks plaintext, which identity-svc's TLS port never answers.
    let identity = mesh.uri("identity-svc");
    let plaintext = identity.replacen("https://", "http://", 1);
    let cli = labctl::Cli::try_parse_from([
        "labctl",
        "--identity-addr",
        &plaintext,
        "--credential",
        &sandbox.credential,
        "operators",
        "list",
    ])
    .unwrap();
    // (The HTTP/2 preface goes out; the TLS listener answers it with an alert and closes.)
    tokio::time::timeout(Duration::from_secs(30), labctl::execute(cli))
        .await
        .expect("labctl gives up")
        .expect_err("a plaintext labctl is not answered");
    // And an https:// address without TLS material is refused before anything is sent.
    let cli = labctl::Cli::try_parse_from([
        "labctl",
        "--identity-addr",
        &identity,
        "--credential",
        &sandbox.credential,
        "operators",
        "list",
    ])
    .unwrap();
    let error = labctl::execute(cli).await.expect_err("https without a CA");
    assert!(format!("{error:#}").contains("--ca-file"), "{error:#}");

    // Kubernetes' readiness probe: each service's plaintext health port answers SERVING.
    for service in [
        "catalog-svc",
        "orders-svc",
        "payments-svc",
        "shipping-svc",
        "results-svc",
        "webhooks-svc",
    ] {
        let address = mesh.health_addr(service, 0).expect("a health port");
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
            .unwrap()
            .connect()
            .await
            .unwrap_or_else(|error| panic!("{service}'s health port: {error}"));
        let status = HealthClient::new(channel)
            .check(HealthCheckRequest::default())
            .await
            .unwrap_or_else(|error| panic!("{service}'s health port: {error}"))
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::Serving as i32, "{service}");
    }

    // Each process reports when the certificate it loaded expires (the GrpcCertificateExpiring
    // alert of deploy/prometheus/alerts.yaml reads it).
    let metrics = mesh.metrics_addr("orders-svc", 0);
    let text = reqwest::get(format!("http://{metrics}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let expiry: f64 = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("grpc_tls_certificate_expiry_timestamp_seconds{service=\"orders-svc\"} ")
        })
        .unwrap_or_else(|| panic!("no certificate expiry in {text}"))
        .trim()
        .parse()
        .unwrap();
    assert!(
        expiry > chrono::Utc::now().timestamp() as f64,
        "the expiry is in the future: {expiry}"
    );
    sandbox.stop().await;
}

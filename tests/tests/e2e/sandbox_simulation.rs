//! Sandbox customers (docs/sandbox.md): staff flag a customer as sandbox, every answer to its
//! keys says so, and it drives its own order through the lifecycle with
//! `POST /orders/{reference}/simulate`, the real events reaching its webhook signed; a live
//! customer's key meets a 404 for the route, and a service refuses a live customer's forged call.

use crate::lab_support::pay;
use crate::support::{bank_order, wait_for_label};
use crate::webhooks_flow::verify;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use tests::Sandbox;

const EVENTS: [&str; 6] = [
    "shipment.updated",
    "sample.received",
    "testing.started",
    "coa.published",
    "results.published",
    "order.status_changed",
];

/// `POST /orders/{order}/simulate` with `scenario` under `key`.
pub(crate) async fn simulate(sandbox: &Sandbox, key: &str, order: &str, scenario: &str) -> tests::Answer {
    sandbox
        .post(
            key,
            &format!("/orders/{order}/simulate"),
            &json!({ "scenario": scenario }),
            &[],
        )
        .await
}

async fn order_status(sandbox: &Sandbox, key: &str, order: &str) -> Value {
    sandbox.get(key, &format!("/orders/{order}")).await.body["data"]["order"].clone()
}

#[tokio::test]
async fn a_sandbox_customer_drives_its_order_from_delivery_to_an_amended_coa_with_real_webhooks() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Sandbox Developer", "all").await;
    let live = sandbox.customer("Live Customer", "all").await;
    let flagged = sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();
    assert_eq!(flagged["sandbox"], true, "{flagged}");
    assert_eq!(flagged["changed"], true);
    let hook = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &json!({ "url": receiver.url("/sandbox"), "events": EVENTS }),
            &[("Idempotency-Key", "sandbox-hook-0001")],
        )
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    assert_eq!(hook.headers["x-svc-environment"], "sandbox");
    let secret = hook.body["data"]["signingSecret"].as_str().unwrap().to_owned();

    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "sandbox-order-0001").await;
    wait_for_label(&sandbox, &agent, &order_id).await;
    let order = order_status(&sandbox, &agent.key, &order_id).await;
    assert_eq!(order["sandbox"], true, "{order}");
    // Out of order: a COA before the samples are even received is refused, naming what comes first.
    let early = simulate(&sandbox, &agent.key, &order_id, "coa_published").await;
    assert_eq!(early.status, 409, "{:?}", early.body);
    assert_eq!(early.body["error"]["code"], "scenario_not_applicable");
    let early = simulate(&sandbox, &agent.key, &order_id, "testing").await;
    assert_eq!(early.status, 409, "{:?}", early.body);
    assert_eq!(early.body["error"]["details"]["status"], "label_generated");

    let delivered = simulate(&sandbox, &agent.key, &order_id, "delivered").await;
    assert_eq!(delivered.status, 200, "{:?}", delivered.body);
    assert_eq!(delivered.headers["x-svc-environment"], "sandbox");
    let simulation = &delivered.body["data"]["simulation"];
    assert_eq!(simulation["subject"], "shipment");
    assert_eq!(simulation["status"], "delivered");
    assert_eq!(simulation["unchanged"], false);
    let again = simulate(&sandbox, &agent.key, &order_id, "delivered").await;
    assert_eq!(
        again.body["data"]["simulation"]["unchanged"], true,
        "{:?}",
        again.body
    );
    wait_for("the order in transit", Duration::from_secs(30), || async {
        (order_status(&sandbox, &agent.key, &order_id).await["status"] == "in_transit").then_some(())
    })
    .await;
    let lost = simulate(&sandbox, &agent.key, &order_id, "lost_in_transit").await;
    assert_eq!(
        lost.status, 409,
        "a delivered parcel cannot be lost: {:?}",
        lost.body
    );

    let received = simulate(&sandbox, &agent.key, &order_id, "received").await;
    assert_eq!(received.status, 200, "{:?}", received.body);
    assert_eq!(received.body["data"]["simulation"]["status"], "sample_received");
    let testing = simulate(&sandbox, &agent.key, &order_id, "testing").await;
    assert_eq!(testing.status, 200, "{:?}", testing.body);
    assert_eq!(testing.body["data"]["simulation"]["status"], "in_lab");
    // Payment gates the release only: pay, then publish.
    pay(&sandbox, &invoice, &total, "SANDBOX-PAY-1").await;
    wait_for("the order paid", Duration::from_secs(30), || async {
        (order_status(&sandbox, &agent.key, &order_id).await["paymentState"] == "paid").then_some(())
    })
    .await;
    let published = wait_for("the COA published", Duration::from_secs(30), || async {
        let answer = simulate(&sandbox, &agent.key, &order_id, "coa_published").await;
        (answer.status == 200).then_some(answer)
    })
    .await;
    let simulation = &published.body["data"]["simulation"];
    assert_eq!(simulation["status"], "published", "{simulation}");
    let order = wait_for("the order completed", Duration::from_secs(30), || async {
        let order = order_status(&sandbox, &agent.key, &order_id).await;
        (order["status"] == "completed").then_some(order)
    })
    .await;
    let accession = order["accessionNumbers"][0].as_str().unwrap().to_owned();
    let coa = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
    assert_eq!(coa.status, 200, "{:?}", coa.body);
    let first_coa = coa.body["data"]["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(coa.body["data"]["result"]["approvedBy"], "sandbox-qa");

    let amended = simulate(&sandbox, &agent.key, &order_id, "coa_amended").await;
    assert_eq!(amended.status, 200, "{:?}", amended.body);
    let original = sandbox.get(&agent.key, &format!("/results/{first_coa}")).await;
    assert_eq!(
        original.body["data"]["result"]["status"], "superseded",
        "{:?}",
        original.body
    );

    let deliveries = wait_for("every event at the receiver", Duration::from_secs(30), || async {
        let requests = receiver.requests_to("/sandbox");
        let types: BTreeSet<String> = requests
            .iter()
            .map(|request| request.header("x-svc-event-type"))
            .collect();
        let coas = requests
            .iter()
            .filter(|request| request.header("x-svc-event-type") == "coa.published")
            .count();
        (types.len() == EVENTS.len() && coas >= 2).then_some(requests)
    })
    .await;
    for request in &deliveries {
        let body = verify(&secret, request);
        assert_eq!(body["data"]["order_id"], order_id.as_str(), "{}", body["type"]);
    }

    // A live customer: the route does not exist for its key, before and whatever its scopes.
    let (live_order, _, _) = bank_order(&sandbox, &live, "live-order-0001").await;
    let refused = simulate(&sandbox, &live.key, &live_order, "delivered").await;
    assert_eq!(refused.status, 404, "{:?}", refused.body);
    assert_eq!(refused.body["error"]["code"], "not_found");
    let unknown = sandbox
        .post(
            &live.key,
            &format!("/orders/{live_order}/simulated"),
            &json!({}),
            &[],
        )
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        refused.body["error"]["message"].as_str().unwrap(),
        unknown.body["error"]["message"]
            .as_str()
            .unwrap()
            .trim_end_matches('d'),
        "the same answer as a route that does not exist"
    );
    assert!(!refused.headers.contains_key("x-svc-environment"));
    // The sandbox customer cannot reach the live customer's order either.
    let foreign = simulate(&sandbox, &agent.key, &live_order, "delivered").await;
    assert_eq!(foreign.status, 404, "{:?}", foreign.body);
    // Turning the flag off takes effect at once: the route is gone for that key too.
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "off"])
        .await
        .unwrap();
    let gone = wait_for("the flag off at the gateway", Duration::from_secs(10), || async {
        let answer = simulate(&sandbox, &agent.key, &order_id, "delivered").await;
        (answer.status == 404).then_some(answer)
    })
    .await;
    assert!(!gone.headers.contains_key("x-svc-environment"));
    sandbox.stop().await;
}

#[tokio::test]
async fn a_service_refuses_a_simulation_forged_for_a_live_customer() {
    let sandbox = Sandbox::start().await;
    let live = sandbox.customer("Forged Live", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &live, "forged-order-0001").await;
    let customer_id: uuid::Uuid = live.id.parse().unwrap();
    for sandbox_claim in [false, true] {
        let principal = platform::principal::Principal {
            kind: platform::principal::PrincipalKind::Customer,
            subject: uuid::Uuid::now_v7().to_string(),
            customer_id: Some(customer_id),
            scopes: vec!["orders:write".into()],
            roles: vec![],
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: sandbox_claim,
        };
        // The gateway's (development) key, as a forger holding it could sign.
        let token = platform::tokens::TokenIssuer::new(
            "gateway",
            platform::tokens::SigningKey::development("gateway"),
        )
        .token(&principal, platform::mesh::ORDERS_SVC);
        let mut client = proto::orders::orders_service_client::OrdersServiceClient::connect(
            sandbox.in_process().orders_uri.clone(),
        )
        .await
        .unwrap();
        let request = platform::grpc::outgoing(
            proto::orders::SimulateLabStepRequest {
                reference: order_id.clone(),
                scenario: "received".into(),
            },
            &token,
        );
        let status = client.simulate_lab_step(request).await.unwrap_err();
        // Without the claim the rpc does not exist for it; with a claim (a compromised
        // signer), the order itself was placed live and is not simulable.
        assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    }
    sandbox.stop().await;
}

//! The lab side across the whole mesh: an order is received, tested, its results recorded,
//! QA-approved (four eyes) and published, with every event delivered signed to a receiver; a
//! bank order approved before payment is held and released when the payment lands.

use crate::lab_support::{approve_and_publish, lab_staff, pay, receive_and_start, record_and_submit};
use crate::support::bank_order;
use crate::webhooks_flow::verify;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use tests::Sandbox;

const LAB_EVENTS: [&str; 5] = [
    "sample.received",
    "testing.started",
    "coa.published",
    "results.published",
    "order.status_changed",
];

async fn order_number(sandbox: &Sandbox, key: &str, order_id: &str) -> String {
    let order = sandbox.get(key, &format!("/orders/{order_id}")).await;
    order.body["data"]["order"]["orderNumber"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn wait_for_status(sandbox: &Sandbox, key: &str, order_id: &str, status: &str) -> Value {
    wait_for(
        &format!("the order to be {status}"),
        Duration::from_secs(30),
        || async {
            let answer = sandbox.get(key, &format!("/orders/{order_id}")).await;
            (answer.body["data"]["order"]["status"] == status).then(|| answer.body["data"]["order"].clone())
        },
    )
    .await
}

#[tokio::test]
async fn a_paid_order_walks_through_the_lab_to_a_published_coa_with_every_event_signed() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Lab Walker", "all").await;
    let hook = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &json!({ "url": receiver.url("/lab"), "events": LAB_EVENTS }),
            &[("Idempotency-Key", "lab-hook-0001")],
        )
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let secret = hook.body["data"]["signingSecret"].as_str().unwrap().to_owned();
    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "lab-order-0001").await;
    // Ship-first: the label comes at once; the payment then lands without moving the status.
    crate::support::wait_for_label(&sandbox, &agent, &order_id).await;
    pay(&sandbox, &invoice, &total, "LAB-PAY-1").await;
    wait_for("the order to be paid", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["paymentState"] == "paid").then_some(())
    })
    .await;
    let number = order_number(&sandbox, &agent.key, &order_id).await;
    // Before receipt: one item per order line, awaiting receipt with what the lab expects.
    let awaiting = sandbox
        .get(&agent.key, &format!("/orders/{number}/samples"))
        .await;
    assert_eq!(awaiting.status, 200, "{:?}", awaiting.body);
    let item = &awaiting.body["data"]["orderSamples"]["samples"][0];
    assert_eq!(
        awaiting.body["data"]["orderSamples"]["samples"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(item["status"], "awaiting_receipt", "{item}");
    assert_eq!(item["accessionNumber"], Value::Null);
    assert_eq!(item["receivedAt"], Value::Null);
    assert!(!item["testIds"].as_array().unwrap().is_empty());
    assert_eq!(item["statusHistory"], json!([]));

    let staff = lab_staff(&sandbox).await;
    let samples = receive_and_start(&sandbox, &staff, &number, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    assert!(accession.starts_with("ACC-"), "{accession}");
    record_and_submit(&sandbox, &staff, &samples[0]).await;
    let unpublished = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
    assert_eq!(unpublished.status, 404, "submitted results are not visible");
    let published = approve_and_publish(&sandbox, &staff, &accession).await;
    assert_eq!(published["status"], "published", "{published}");
    let coa_id = published["id"].as_str().unwrap().to_owned();

    let order = wait_for_status(&sandbox, &agent.key, &order_id, "completed").await;
    let moves: Vec<(String, String)> = order["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| {
            (
                change["fromStatus"].as_str().unwrap_or_default().to_owned(),
                change["toStatus"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("", "invoice_sent"),
        ("invoice_sent", "label_generated"),
        ("label_generated", "sample_received"),
        ("sample_received", "in_lab"),
        ("in_lab", "reporting"),
        ("reporting", "completed"),
    ]
    .iter()
    .map(|(from, to)| ((*from).to_owned(), (*to).to_owned()))
    .collect();
    assert_eq!(moves, expected);
    assert_eq!(order["paymentState"], "paid");
    assert_eq!(order["accessionNumbers"], json!([accession]));

    let by_accession = sandbox.get(&agent.key, &format!("/orders/{accession}")).await;
    assert_eq!(by_accession.status, 200, "an accession finds its order");
    assert_eq!(by_accession.body["data"]["order"]["id"], order_id.as_str());
    let listed = sandbox
        .get(&agent.key, &format!("/results?orderId={order_id}"))
        .await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1);
    let result = sandbox.get(&agent.key, &format!("/results/{coa_id}")).await;
    assert_eq!(result.status, 200, "{:?}", result.body);
    let coa = &result.body["data"]["result"];
    assert_eq!(coa["accessionNumber"], accession.as_str());
    assert_eq!(coa["status"], "published");
    assert_eq!(coa["approvedBy"], "quinn");
    assert_eq!(coa["analysts"], json!(["ana"]));
    assert!(!coa["signature"].as_str().unwrap().is_empty());
    let analytes = sandbox
        .get(&agent.key, &format!("/results/{accession}/analytes"))
        .await;
    assert_eq!(analytes.status, 200);
    let rows = analytes.body["data"].as_array().unwrap();
    assert_eq!(rows.len(), samples[0]["testIds"].as_array().unwrap().len());
    assert!(
        rows.iter()
            .all(|row| row["value"] == "99.2" && row["outcome"] == "pass")
    );

    let samples_view = sandbox
        .get(&agent.key, &format!("/orders/{number}/samples"))
        .await;
    assert_eq!(samples_view.status, 200, "{:?}", samples_view.body);
    let sample = &samples_view.body["data"]["orderSamples"]["samples"][0];
    assert_eq!(sample["units"], 2);
    assert_eq!(sample["coaIds"], json!([coa_id]));
    assert_eq!(sample["status"], "reported");
    let moves: Vec<&str> = sample["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["status"].as_str().unwrap())
        .collect();
    assert_eq!(moves, ["received", "in_testing", "reported"]);
    let custody = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/custody"))
        .await;
    assert_eq!(custody.status, 200);
    let custody = &custody.body["data"]["custody"];
    assert_eq!(custody["chainIntact"], true);
    let actions: Vec<&str> = custody["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["received", "stored", "testing_started", "coa_published"]
    );
    assert!(custody["retainUntil"].is_string());
    let published_entry = &custody["entries"][3];
    assert_eq!(published_entry["accessionNumber"], accession.as_str());
    assert!(
        published_entry["details"].as_str().unwrap().contains(&coa_id),
        "{published_entry}"
    );
    dispose_after_retention_and_detect_tampering(&sandbox, &agent.key, &staff, &order_id, &accession).await;
    let eta = sandbox.get(&agent.key, &format!("/orders/{order_id}/eta")).await;
    assert_eq!(eta.status, 200);
    let stages = eta.body["data"]["eta"]["stages"].as_array().unwrap();
    assert!(stages.iter().all(|stage| stage["state"] == "done"), "{stages:?}");

    let deliveries = wait_for(
        "every lab event at the receiver",
        Duration::from_secs(30),
        || async {
            let requests = receiver.requests_to("/lab");
            let types: BTreeSet<String> = requests
                .iter()
                .map(|request| request.header("x-svc-event-type"))
                .collect();
            (types.len() == LAB_EVENTS.len() && requests.len() >= 8).then_some(requests)
        },
    )
    .await;
    let mut published_payloads = Vec::new();
    for request in &deliveries {
        let body = verify(&secret, request);
        assert_eq!(body["data"]["order_id"], order_id.as_str(), "{}", body["type"]);
        if matches!(body["type"].as_str(), Some("coa.published" | "results.published")) {
            assert_eq!(body["data"]["coa_id"], coa_id.as_str());
            assert_eq!(body["data"]["accession_number"], accession.as_str());
            assert_eq!(body["data"]["compound"], "BPC-157");
            published_payloads.push(body["data"].clone());
        }
        if body["type"] == "sample.received" {
            assert_eq!(body["data"]["samples"][0]["accession_number"], accession.as_str());
        }
    }
    assert_eq!(published_payloads.len(), 2);
    assert_eq!(published_payloads[0], published_payloads[1], "the same payload");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

/// The retained sample is disposed of only after its retention period, with a custody entry that
/// keeps the chain intact; an edited custody row then shows as a broken chain.
async fn dispose_after_retention_and_detect_tampering(
    sandbox: &Sandbox,
    key: &str,
    staff: &crate::lab_support::LabStaff,
    order_id: &str,
    accession: &str,
) {
    let dispose = || async {
        sandbox
            .labctl_as(
                &staff.analyst,
                &[
                    "samples",
                    "dispose",
                    "--accession",
                    accession,
                    "--method",
                    "incinerated",
                ],
            )
            .await
    };
    let early = dispose().await.unwrap_err().to_string();
    assert!(
        early.contains("conflict") && early.contains("retained until"),
        "{early}"
    );
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    sqlx::query(
        "UPDATE orders.samples SET retain_until = now() - interval '1 day' WHERE accession_number = $1",
    )
    .bind(accession)
    .execute(&pool)
    .await
    .unwrap();
    let disposed = dispose().await.unwrap();
    assert_eq!(disposed["alreadyDisposed"], false, "{disposed}");
    assert!(disposed["disposedAt"].is_string(), "{disposed}");
    let again = dispose().await.unwrap();
    assert_eq!(again["alreadyDisposed"], true);
    assert_eq!(again["disposedAt"], disposed["disposedAt"]);

    let samples = sandbox.get(key, &format!("/orders/{order_id}/samples")).await;
    assert_eq!(
        samples.body["data"]["orderSamples"]["samples"][0]["disposedAt"],
        disposed["disposedAt"]
    );
    let custody = sandbox.get(key, &format!("/orders/{order_id}/custody")).await;
    let custody = &custody.body["data"]["custody"];
    assert_eq!(custody["chainIntact"], true, "{custody}");
    let last = custody["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["action"].as_str(), last["actor"].as_str()),
        (Some("disposed"), Some("ana"))
    );

    sqlx::query(
        "UPDATE orders.custody_entries SET details = 'nothing happened' \
         WHERE order_id = $1::uuid AND action = 'coa_published'",
    )
    .bind(order_id)
    .execute(&pool)
    .await
    .unwrap();
    let tampered = sandbox.get(key, &format!("/orders/{order_id}/custody")).await;
    assert_eq!(
        tampered.body["data"]["custody"]["chainIntact"], false,
        "an edited entry breaks the chain"
    );
}

#[tokio::test]
async fn a_coa_approved_before_payment_is_held_and_published_when_the_payment_lands() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Late Payer", "all").await;
    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "late-order-0001").await;
    let number = order_number(&sandbox, &agent.key, &order_id).await;
    let staff = lab_staff(&sandbox).await;
    let samples = receive_and_start(&sandbox, &staff, &number, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(&sandbox, &staff, &samples[0]).await;
    let held = approve_and_publish(&sandbox, &staff, &accession).await;
    assert_eq!(held["status"], "held", "{held}");

    let order = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    let order = &order.body["data"]["order"];
    assert_eq!(
        order["status"], "in_lab",
        "physical progress moved ahead of payment"
    );
    assert_eq!(order["paymentState"], "unpaid");
    for path in [
        format!("/results/{accession}"),
        format!("/results/{}", held["id"].as_str().unwrap()),
    ] {
        assert_eq!(sandbox.get(&agent.key, &path).await.status, 404, "{path}");
    }
    let listed = sandbox.get(&agent.key, "/results").await;
    assert_eq!(listed.body["data"], json!([]), "nothing of a held COA is listed");
    let again = sandbox
        .labctl_as(&staff.qa, &["results", "publish", "--accession", &accession])
        .await
        .unwrap();
    assert_eq!(
        (again["status"].as_str(), again["unchanged"].as_bool()),
        (Some("held"), Some(true))
    );

    pay(&sandbox, &invoice, &total, "LATE-PAY-1").await;
    let released = wait_for(
        "the held COA to be published",
        Duration::from_secs(30),
        || async {
            let answer = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
            (answer.status == 200).then_some(answer)
        },
    )
    .await;
    assert_eq!(released.body["data"]["result"]["status"], "published");
    let order = wait_for_status(&sandbox, &agent.key, &order_id, "completed").await;
    assert_eq!(order["paymentState"], "paid");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn qa_approval_by_the_analyst_who_entered_the_results_is_refused() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Four Eyes", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "eyes-order-0001").await;
    let number = order_number(&sandbox, &agent.key, &order_id).await;
    let staff = lab_staff(&sandbox).await;
    let samples = receive_and_start(&sandbox, &staff, &number, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    // The sandbox's operator holds every role: recording makes them an analyst of the results.
    let all_roles = crate::lab_support::LabStaff {
        analyst: sandbox.credential.clone(),
        qa: staff.qa.clone(),
    };
    record_and_submit(&sandbox, &all_roles, &samples[0]).await;
    let refused = sandbox
        .labctl(&["results", "approve", "--accession", &accession])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("forbidden") && refused.contains("four eyes"),
        "{refused}"
    );
    let shown = sandbox
        .labctl(&["results", "show", "--accession", &accession])
        .await
        .unwrap();
    assert_eq!(shown["status"], "submitted", "the refusal changed nothing");
    let approved = sandbox
        .labctl_as(&staff.qa, &["results", "approve", "--accession", &accession])
        .await
        .unwrap();
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["approvedBy"], "quinn");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn four_eyes_compares_the_operator_ids_identity_svc_puts_in_staff_tokens_not_names() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Operator Ids", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "ids-order-0001").await;
    let number = order_number(&sandbox, &agent.key, &order_id).await;
    let staff = lab_staff(&sandbox).await;
    let samples = receive_and_start(&sandbox, &staff, &number, 1).await;
    record_and_submit(&sandbox, &staff, &samples[0]).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    let operators = sandbox.labctl(&["operators", "list"]).await.unwrap();
    let id_of = |name: &str| -> uuid::Uuid {
        let operator = operators
            .as_array()
            .unwrap()
            .iter()
            .find(|operator| operator["name"] == name)
            .unwrap();
        operator["id"].as_str().unwrap().parse().unwrap()
    };
    let (ana, quinn) = (id_of("ana"), id_of("quinn"));

    // The analyst's operator id under the QA officer's name (a renamed operator), signed as
    // identity-svc signs in development mode: still the analyst.
    let renamed =
        platform::tokens::testing::DevTokens::new("results-svc").staff_with_id("quinn", ana, &["lab.qa"]);
    let mut results = proto::results::results_service_client::ResultsServiceClient::connect(
        sandbox.in_process().results_uri.clone(),
    )
    .await
    .unwrap();
    let request = proto::results::AccessionRequest {
        accession_number: accession.clone(),
    };
    let refused = results
        .approve_results(platform::grpc::outgoing(request, &renamed))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert!(refused.message().contains("four eyes"), "{refused:?}");

    let approved = sandbox
        .labctl_as(&staff.qa, &["results", "approve", "--accession", &accession])
        .await
        .unwrap();
    assert_eq!(approved["status"], "approved");
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    let recorded: (Option<uuid::Uuid>, Option<uuid::Uuid>, Option<uuid::Uuid>) = sqlx::query_as(
        "SELECT c.submitted_by_id, c.approved_by_id, r.analyst_id FROM results.coas c \
         JOIN results.analyte_results r ON r.coa_id = c.id WHERE c.accession_number = $1 LIMIT 1",
    )
    .bind(&accession)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(recorded, (Some(ana), Some(quinn), Some(ana)));
    sandbox.stop().await;
}

#[tokio::test]
async fn the_labctl_demo_walks_a_paid_order_to_a_published_coa_with_plausible_results() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Demo Customer", "all").await;
    let (order_id, invoice, total) = bank_order(&sandbox, &agent, "demo-order-0001").await;
    // Ship-first: the label moves the order; the payment then lands without moving it.
    crate::support::wait_for_label(&sandbox, &agent, &order_id).await;
    pay(&sandbox, &invoice, &total, "DEMO-PAY-1").await;
    wait_for("the order to be paid", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["paymentState"] == "paid").then_some(())
    })
    .await;
    let staff = lab_staff(&sandbox).await;
    let number = order_number(&sandbox, &agent.key, &order_id).await;
    let walked = sandbox
        .labctl_as(
            &staff.analyst,
            &["demo", "--order", &number, "--qa-credential", &staff.qa],
        )
        .await
        .unwrap();
    assert_eq!(walked["coas"][0]["status"], "published", "{walked}");
    let accession = walked["samples"][0]["accessionNumber"].as_str().unwrap();
    let result = wait_for("the demo COA to be readable", Duration::from_secs(20), || async {
        let answer = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
        (answer.status == 200).then_some(answer)
    })
    .await;
    let rows = result.body["data"]["result"]["results"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|row| {
        (row["value"].is_string() || row["qualifier"].is_string())
            && (row["specification"].is_null() || row["outcome"] == "pass")
    }));
    // The demo imported the instrument's report behind each sample: it parsed into one
    // measurement per recorded row and the published COA released it.
    let import = &walked["imports"][0];
    assert_eq!(import["parseStatus"], "parsed", "{walked}");
    assert_eq!(import["measurementCount"], rows.len(), "{import}");
    assert!(import["integrityVerifiedAt"].is_string());
    let manifest = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/raw-data"))
        .await;
    assert_eq!(manifest.status, 200, "{:?}", manifest.body);
    let files = manifest.body["data"]["rawData"]["files"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(files.len(), walked["samples"].as_array().unwrap().len());
    assert_eq!(files[0]["sha256"], import["sha256"]);
    let data = sandbox
        .get(&agent.key, &format!("/results/{accession}/instrument-data"))
        .await;
    let measurements = &data.body["data"]["instrumentData"]["runs"][0]["measurements"];
    assert_eq!(
        measurements.as_array().map(Vec::len),
        Some(rows.len()),
        "{:?}",
        data.body
    );
    wait_for_status(&sandbox, &agent.key, &order_id, "completed").await;
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

//! Shipping across the whole mesh: the ship-first label of a bank order (a real 4×6 PDF whose
//! Code128 barcode decodes to the tracking number), the label email when the payment lands
//! (exactly one message at a real SMTP server), scripted carrier scans moving the order to
//! `in_transit` with signed `shipment.updated` webhooks, duplicate and out-of-order scans, the
//! stablecoin rail's label after settlement, and tenant isolation of every shipment route.

use crate::support::{bank_order, stream_events};
use crate::webhooks_flow::verify;
use platform::test_receiver::TestReceiver;
use platform::testing::events::xadd;
use platform::testing::{holds_for, nothing_more_arrives, wait_for};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use serde_json::{Value, json};
use std::time::Duration;
use tests::Sandbox;
use tests::smtp::SmtpServer;
use uuid::Uuid;

pub use crate::support::wait_for_label as labelled_order;

/// Renders the PDF at 300 dpi with pdftoppm and decodes its barcodes with zbarimg.
fn decode_barcodes(pdf: &[u8]) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("lab-label-{}", Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let pdf_path = dir.join("label.pdf");
    std::fs::write(&pdf_path, pdf).unwrap();
    let rendered = std::process::Command::new("pdftoppm")
        .args(["-r", "300", "-png"])
        .arg(&pdf_path)
        .arg(dir.join("page"))
        .status()
        .expect("pdftoppm runs (Debian poppler-utils)");
    assert!(rendered.success(), "pdftoppm renders the label");
    let page = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "png"))
        .expect("a rendered page");
    let output = std::process::Command::new("zbarimg")
        .args(["--raw", "-q"])
        .arg(&page)
        .output()
        .expect("zbarimg runs (Debian zbar-tools)");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|line| !line.is_empty())
        .collect()
}

fn is_valid_ups(number: &str) -> bool {
    number.len() == 18 && number.starts_with("1Z") && {
        let body = &number[2..17];
        let sum: u32 = body
            .chars()
            .enumerate()
            .map(|(index, character)| {
                let value = if character.is_ascii_digit() {
                    character as u32 - '0' as u32
                } else {
                    (character as u32 - 63) % 10
                };
                if index % 2 == 1 { value * 2 } else { value }
            })
            .sum();
        number[17..].parse::<u32>().ok() == Some((10 - sum % 10) % 10)
    }
}

#[tokio::test]
async fn a_bank_order_gets_a_scannable_label_at_creation_and_exactly_one_label_email_when_paid() {
    let smtp = SmtpServer::start().await;
    let smtp_url = smtp.url();
    let sandbox = Sandbox::start_with(|settings| {
        settings.shipping.mail = shipping_svc::mail::MailTransport::Smtp(smtp_url);
    })
    .await;
    let agent = sandbox.customer("Label Lena", "all").await;
    let (order_id, invoice_number, total) = bank_order(&sandbox, &agent, "label-order-0001").await;

    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let shipping = &order["shipping"];
    let tracking = shipping["trackingNumber"].as_str().unwrap().to_owned();
    assert!(is_valid_ups(&tracking), "{tracking}");
    assert_eq!(shipping["carrierCode"], "ups");
    assert_eq!(shipping["serviceCode"], "ups_ground");
    assert_eq!(shipping["status"], "pre_transit");
    assert_eq!(shipping["shipTo"]["city"], "Madison");
    assert!(shipping["trackingUrl"].as_str().unwrap().contains(&tracking));
    let steps = shipping["packingSteps"].as_array().unwrap();
    let containers: Vec<&str> = steps
        .iter()
        .filter_map(|step| step["container"].as_str())
        .collect();
    assert!(
        containers.iter().any(|container| container.contains("vial")),
        "the catalog's containers: {containers:?}"
    );
    assert!(
        steps
            .iter()
            .any(|step| step["sampleReference"].as_str().unwrap().ends_with("-L1"))
    );
    let history: Vec<&str> = order["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["toStatus"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["invoice_sent", "label_generated"]);

    // The label answers the same, by tracking number too; the order is found by it.
    let label = sandbox
        .get(&agent.key, &format!("/shipments/{tracking}/label"))
        .await;
    assert_eq!(label.status, 200, "{:?}", label.body);
    assert_eq!(label.body["data"]["label"]["trackingNumber"], tracking.as_str());
    let by_tracking = sandbox.get(&agent.key, &format!("/orders/{tracking}")).await;
    assert_eq!(by_tracking.status, 200);
    assert_eq!(by_tracking.body["data"]["order"]["id"], order_id.as_str());

    // The signed URL serves a PDF whose barcode decodes to the tracking number.
    let url = label.body["data"]["label"]["labelUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = url.replace("http://127.0.0.1:8080", &sandbox.base_url);
    let pdf = sandbox.http.get(&url).send().await.unwrap();
    assert_eq!(pdf.status(), 200);
    assert_eq!(pdf.headers()["content-type"], "application/pdf");
    let pdf = pdf.bytes().await.unwrap().to_vec();
    assert!(pdf.starts_with(b"%PDF"));
    assert_eq!(decode_barcodes(&pdf), vec![tracking.clone()]);
    let tampered = url.replace("signature=", "signature=00");
    assert_eq!(sandbox.http.get(&tampered).send().await.unwrap().status(), 404);

    // Exactly one shipment.label_created.
    let labels = |events: Vec<EventEnvelope>| {
        events
            .into_iter()
            .filter(|event| event.r#type == "shipment.label_created")
            .collect::<Vec<_>>()
    };
    let created = labels(stream_events(&sandbox, "shipping").await);
    assert_eq!(created.len(), 1);
    match &created[0].data {
        Some(Data::ShipmentLabelCreated(data)) => assert_eq!(data.tracking_number, tracking),
        other => panic!("unexpected payload {other:?}"),
    }

    // The payment lands: one email with the label reaches the SMTP server.
    assert!(smtp.messages().is_empty(), "no email before payment");
    crate::support::record_bank_payment(&sandbox, &invoice_number, &total, "LABEL-BANK-1").await;
    let message = wait_for("the label email", Duration::from_secs(30), || async {
        smtp.messages().into_iter().next()
    })
    .await;
    assert!(message.contains("label.lena@example.com"), "{message}");
    assert!(message.contains(&tracking));
    assert!(message.contains("application/pdf"));

    // A redelivered payment.confirmed sends nothing more, and the order keeps its status.
    let confirmed = stream_events(&sandbox, "payments")
        .await
        .into_iter()
        .find(|event| event.r#type == "payment.confirmed")
        .expect("payment.confirmed");
    let mut redis = platform::testing::events::redis_connection().await;
    let payments = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::PAYMENTS);
    xadd(&mut redis, &payments, &confirmed).await;
    nothing_more_arrives("label emails", Duration::from_secs(3), || async {
        smtp.messages().len()
    })
    .await;
    assert_eq!(smtp.messages().len(), 1);
    let after = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(after.body["data"]["order"]["status"], "label_generated");
    assert_eq!(after.body["data"]["order"]["payment"]["status"], "paid");
    assert_eq!(
        labels(stream_events(&sandbox, "shipping").await).len(),
        1,
        "the label is bought once"
    );
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn scripted_scans_move_the_order_to_in_transit_and_deliver_signed_shipment_updated_webhooks() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Scan Sam", "all").await;
    let body =
        json!({ "url": receiver.url("/sam"), "events": ["shipment.label_created", "shipment.updated"] });
    let endpoint = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &body,
            &[("Idempotency-Key", "scan-hook-0001")],
        )
        .await;
    assert_eq!(endpoint.status, 201, "{:?}", endpoint.body);
    let secret = endpoint.body["data"]["signingSecret"]
        .as_str()
        .unwrap()
        .to_owned();
    let (order_id, _, _) = bank_order(&sandbox, &agent, "scan-order-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();

    let played = sandbox
        .labctl(&["shipments", "simulate", &tracking, "--script", "delayed"])
        .await
        .unwrap();
    assert_eq!(played["recorded"], 6);
    assert_eq!(played["shipment"]["status"], "delivered");

    let moved = wait_for("the order in transit", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["status"] == "in_transit").then_some(answer)
    })
    .await;
    let reasons: Vec<&str> = moved.body["data"]["order"]["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["reason"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(reasons.last(), Some(&"shipment.updated"));
    let shipment = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    assert_eq!(shipment.status, 200);
    let events = shipment.body["data"]["shipment"]["events"]
        .as_array()
        .unwrap()
        .clone();
    let statuses: Vec<&str> = events
        .iter()
        .map(|event| event["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "in_transit",
            "exception",
            "in_transit",
            "in_transit",
            "out_for_delivery",
            "delivered"
        ]
    );
    assert_eq!(events[1]["statusCode"], "X");
    assert_eq!(events[0]["location"], "Chicago, IL, US");
    assert!(events[1]["description"].as_str().unwrap().contains("weather"));

    // Playing the script again records nothing.
    let again = sandbox
        .labctl(&["shipments", "simulate", &tracking, "--script", "delayed"])
        .await
        .unwrap();
    assert_eq!(again["recorded"], 0);

    // Seven signed deliveries: the label and six scans, each verifiable.
    let deliveries = wait_for("the shipment webhooks", Duration::from_secs(30), || async {
        let requests = receiver.requests_to("/sam");
        (requests.len() >= 7).then_some(requests)
    })
    .await;
    let bodies: Vec<Value> = deliveries
        .iter()
        .map(|request| verify(&secret, request))
        .collect();
    let updated: Vec<&Value> = bodies
        .iter()
        .filter(|body| body["type"] == "shipment.updated")
        .collect();
    assert_eq!(updated.len(), 6);
    assert!(
        updated
            .iter()
            .all(|body| body["data"]["tracking_number"] == tracking.as_str())
    );
    assert!(
        updated
            .iter()
            .any(|body| body["data"]["status_code"] == "KB" && body["data"]["status"] == "delivered")
    );
    nothing_more_arrives(
        "webhooks after the script replay",
        Duration::from_secs(2),
        || async { receiver.requests_to("/sam").len() },
    )
    .await;
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn duplicate_and_out_of_order_scans_never_move_a_shipment_or_its_order_backwards() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Order Olga", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "dup-order-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();
    let scan = |status: &'static str, at: &'static str, id: &'static str| {
        let tracking = tracking.clone();
        let sandbox = &sandbox;
        async move {
            sandbox
                .labctl(&[
                    "shipments",
                    "scan",
                    &tracking,
                    "--status",
                    status,
                    "--occurred-at",
                    at,
                    "--event-id",
                    id,
                    "--location",
                    "Madison, WI, US",
                ])
                .await
                .unwrap()
        }
    };
    let first = scan("in_transit", "2026-11-20T10:00:00Z", "ups-1").await;
    assert_eq!(first["recorded"], true);
    let duplicate = scan("in_transit", "2026-11-20T10:00:00Z", "ups-1").await;
    assert_eq!(duplicate["recorded"], false);
    let delivered = scan("delivered", "2026-11-22T09:00:00Z", "ups-3").await;
    assert_eq!(delivered["shipment"]["status"], "delivered");
    let late = scan("out_for_delivery", "2026-11-21T08:00:00Z", "ups-2").await;
    assert_eq!(late["recorded"], true, "an older scan joins the history");
    assert_eq!(
        late["shipment"]["status"], "delivered",
        "but does not move the shipment back"
    );
    let history: Vec<&str> = late["shipment"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["status"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["in_transit", "out_for_delivery", "delivered"]);
    let unknown = sandbox
        .labctl(&[
            "shipments",
            "scan",
            "1Z999AA10123456784",
            "--status",
            "in_transit",
        ])
        .await;
    assert!(unknown.unwrap_err().to_string().contains("not_found"));
    let bad_status = sandbox
        .labctl(&["shipments", "scan", &tracking, "--status", "teleported"])
        .await;
    assert!(bad_status.unwrap_err().to_string().contains("invalid_request"));

    wait_for("the order in transit", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["status"] == "in_transit").then_some(())
    })
    .await;
    let updated = |events: Vec<EventEnvelope>| {
        events
            .iter()
            .filter(|event| event.r#type == "shipment.updated")
            .count()
    };
    wait_for("two shipment.updated", Duration::from_secs(10), || async {
        (updated(stream_events(&sandbox, "shipping").await) == 2).then_some(())
    })
    .await;
    holds_for("the order stays in transit", Duration::from_secs(2), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        answer.body["data"]["order"]["status"] == "in_transit"
    })
    .await;
    let changes = stream_events(&sandbox, "orders")
        .await
        .into_iter()
        .filter(|event| event.r#type == "order.status_changed")
        .count();
    assert_eq!(changes, 2, "label_generated, then in_transit, nothing more");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn every_shipment_route_answers_another_customer_like_a_missing_resource() {
    let sandbox = Sandbox::start().await;
    let owner = sandbox.customer("Owner Otto", "all").await;
    let other = sandbox.customer("Other Olli", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &owner, "iso-order-0001").await;
    let order = labelled_order(&sandbox, &owner, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();
    let shipment_id = order["shipping"]["shipmentId"].as_str().unwrap().to_owned();
    let order_number = order["orderNumber"].as_str().unwrap().to_owned();

    for reference in [&tracking, &shipment_id, &order_id, &order_number] {
        for path in [
            format!("/shipments/{reference}"),
            format!("/shipments/{reference}/label"),
            format!("/orders/{reference}"),
            format!("/orders/{reference}/pickup"),
        ] {
            let theirs = sandbox.get(&other.key, &path).await;
            assert_eq!(theirs.status, 404, "{path}: {:?}", theirs.body);
            assert_eq!(theirs.error_code(), "not_found");
        }
        let request =
            json!({ "date": "2030-01-07", "window": "09:00-12:00", "quoteToken": "x.y", "confirm": true });
        let theirs = sandbox
            .post(
                &other.key,
                &format!("/orders/{reference}/pickup"),
                &request,
                &[("Idempotency-Key", &format!("iso-pickup-{reference}"))],
            )
            .await;
        assert_eq!(theirs.status, 404, "{:?}", theirs.body);
    }
    let missing = sandbox.get(&owner.key, "/shipments/1Z999AA10123456784").await;
    assert_eq!(missing.status, 404);
    let listed = sandbox.get(&other.key, "/shipments").await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 0);
    let mine = sandbox
        .get(&owner.key, &format!("/shipments?orderId={order_id}"))
        .await;
    assert_eq!(mine.body["data"].as_array().unwrap().len(), 1);
    let filtered = sandbox.get(&owner.key, "/shipments?status=delivered").await;
    assert_eq!(filtered.body["data"].as_array().unwrap().len(), 0);
    let bad_filter = sandbox.get(&owner.key, "/shipments?status=shipped").await;
    assert_eq!(bad_filter.status, 400);
    // Without shipments:read the routes are 403; the order itself needs orders:read only.
    let narrow = sandbox.customer("Owner Otto", "orders:read").await;
    assert_eq!(
        sandbox
            .get(&narrow.key, &format!("/shipments/{tracking}"))
            .await
            .status,
        403
    );
    let read = sandbox.get(&narrow.key, &format!("/orders/{tracking}")).await;
    assert_eq!(read.status, 200);
    assert_eq!(
        read.body["data"]["order"]["shipping"]["trackingNumber"],
        tracking.as_str()
    );
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

/// An `order.created` as orders-svc would announce a stablecoin order of `quote`.
fn stablecoin_order_created(customer_id: &str, order_id: Uuid, quote_id: &str) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "order.created".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer_id.into(),
        source: "orders-svc".into(),
        subject_id: order_id.to_string(),
        schema_version: 1,
        data: Some(Data::OrderCreated(proto::orders::OrderCreated {
            order_id: order_id.to_string(),
            order_number: "ORD-STABLE-1".into(),
            status: proto::common::OrderStatus::InvoiceSent as i32,
            payment_method: proto::common::PaymentMethod::ChainStablecoin as i32,
            quote_id: quote_id.into(),
            created_at: platform::time::rfc3339(platform::time::now()),
            ..Default::default()
        })),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_stablecoin_order_gets_no_label_before_its_payment_settles() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Stable Stella", "all").await;
    let quote = crate::support::quote(&sandbox, &agent, &["BPC-157"]).await;
    let order_id = Uuid::now_v7();
    let mut redis = platform::testing::events::redis_connection().await;
    let orders = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::ORDERS);
    let payments = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::PAYMENTS);
    xadd(
        &mut redis,
        &orders,
        &stablecoin_order_created(&agent.id, order_id, quote["id"].as_str().unwrap()),
    )
    .await;
    holds_for("no label before settlement", Duration::from_secs(3), || async {
        sandbox
            .get(&agent.key, &format!("/shipments/{order_id}"))
            .await
            .status
            == 404
    })
    .await;
    let settled = EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "payment.confirmed".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: agent.id.clone(),
        source: "payments-svc".into(),
        subject_id: Uuid::now_v7().to_string(),
        schema_version: 1,
        data: Some(Data::PaymentConfirmed(proto::payments::PaymentConfirmed {
            order_id: order_id.to_string(),
            order_number: "ORD-STABLE-1".into(),
            // As a payments-svc of the release before writes it (text only): shipping-svc reads
            // the rail from the text twin.
            legacy_rail: "chain_stablecoin".into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    xadd(&mut redis, &payments, &settled).await;
    let shipment = wait_for("the label after settlement", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/shipments/{order_id}")).await;
        (answer.status == 200).then_some(answer)
    })
    .await;
    assert!(is_valid_ups(
        shipment.body["data"]["shipment"]["trackingNumber"]
            .as_str()
            .unwrap()
    ));
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

/// The label row of a shipment: (inline PDF, blob key, SHA-256).
async fn label_row(pool: &sqlx::PgPool, tracking: &str) -> (Option<Vec<u8>>, Option<String>, String) {
    sqlx::query_as(
        "SELECT l.pdf, l.blob_key, l.sha256 FROM shipping.labels l \
         JOIN shipping.shipments s ON s.id = l.shipment_id WHERE s.tracking_number = $1",
    )
    .bind(tracking)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Makes the label of `tracking` a row of the time before the label store: `pdf` inline, no file
/// named.
async fn keep_inline(pool: &sqlx::PgPool, tracking: &str, pdf: &[u8]) {
    sqlx::query(
        "UPDATE shipping.labels SET pdf = $2, blob_key = NULL \
         WHERE shipment_id = (SELECT id FROM shipping.shipments WHERE tracking_number = $1)",
    )
    .bind(tracking)
    .bind(pdf)
    .execute(pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_label_pdf_lives_in_the_label_store_and_one_kept_in_the_database_moves_there_when_read() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Label Store Lou", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "label-store-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    // labd's sandbox keeps shipping-svc's files under the system's temp directory.
    let store = std::env::temp_dir()
        .join(format!("lab-blobs-{}", sandbox.stream_prefix))
        .join("shipping");

    let (inline, key, sha256) = label_row(&pool, &tracking).await;
    assert!(inline.is_none(), "no copy in the database");
    let key = key.expect("the row names its file");
    assert!(
        key.starts_with("labels/") && key.ends_with(&format!("/{sha256}.pdf")),
        "{key}"
    );
    let kept = std::fs::read(store.join(&key)).expect("the file is in the label store");
    assert_eq!(platform::production::sha256_hex(&kept), sha256);

    let label = sandbox
        .get(&agent.key, &format!("/shipments/{tracking}/label"))
        .await;
    let url = label.body["data"]["label"]["labelUrl"]
        .as_str()
        .unwrap()
        .replace("http://127.0.0.1:8080", &sandbox.base_url);
    let download = |url: String| {
        let http = sandbox.http.clone();
        async move {
            let response = http.get(&url).send().await.unwrap();
            (
                response.status().as_u16(),
                response.bytes().await.unwrap().to_vec(),
            )
        }
    };
    assert_eq!(download(url.clone()).await, (200, kept.clone()));

    // A label bought before the store existed: its PDF in the row, no file. Reading it serves
    // the PDF and moves it into the store.
    std::fs::remove_file(store.join(&key)).unwrap();
    keep_inline(&pool, &tracking, &kept).await;
    assert_eq!(download(url.clone()).await, (200, kept.clone()));
    let (inline, moved_key, _) = label_row(&pool, &tracking).await;
    assert_eq!((inline, moved_key.as_deref()), (None, Some(key.as_str())));
    assert_eq!(std::fs::read(store.join(&key)).unwrap(), kept);

    // A kept file that no longer matches its hash is refused, never served.
    let mut altered = kept.clone();
    let last = altered.len() - 10;
    altered[last] ^= 0x01;
    std::fs::write(store.join(&key), &altered).unwrap();
    let (status, body) = download(url).await;
    assert_eq!(status, 500);
    assert!(!body.starts_with(b"%PDF"));
    sandbox.stop().await;
}

#[tokio::test]
async fn labels_kept_in_the_database_move_to_the_label_store_when_shipping_svc_starts() {
    let plan = tests::processes::Plan::new(env!("CARGO_BIN_EXE_lab-process"));
    let sandbox = Sandbox::start_processes(&plan).await;
    let agent = sandbox.customer("Label Move Mo", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "label-move-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    let (_, key, sha256) = label_row(&pool, &tracking).await;
    let key = key.expect("kept in the store");
    let label = sandbox
        .get(&agent.key, &format!("/shipments/{tracking}/label"))
        .await;
    let url = label.body["data"]["label"]["labelUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let pdf = sandbox
        .http
        .get(&url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    assert_eq!(platform::production::sha256_hex(&pdf), sha256);

    // shipping-svc stops; its label becomes a row of the time before the store.
    sandbox.processes().kill("shipping-svc", 0).await;
    keep_inline(&pool, &tracking, &pdf).await;

    // Started again, it moves the label before anyone reads it.
    sandbox.processes().restart("shipping-svc", 0).await;
    let moved = wait_for(
        "the label to move to the store",
        Duration::from_secs(30),
        || async {
            let (inline, moved, _) = label_row(&pool, &tracking).await;
            (inline.is_none()).then_some(moved).flatten()
        },
    )
    .await;
    assert_eq!(moved, key);
    let again = sandbox.http.get(&url).send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.bytes().await.unwrap().to_vec(), pdf);
    sandbox.stop().await;
}

/// Waits until shipping-svc's consumer group has read and acknowledged everything on the orders
/// stream up to now (so `order.created` of the orders placed so far was handled).
async fn shipping_consumed_orders_stream(sandbox: &Sandbox) {
    let client = redis::Client::open(sandbox.redis_url.as_str()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let stream = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::ORDERS);
    let last: redis::streams::StreamRangeReply = redis::cmd("XREVRANGE")
        .arg(&stream)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query_async(&mut redis)
        .await
        .unwrap();
    let id_of = |id: &str| -> (u64, u64) {
        let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
        (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
    };
    let last = id_of(&last.ids[0].id);
    wait_for(
        "shipping-svc's group read the orders stream",
        Duration::from_secs(30),
        || {
            let mut redis = redis.clone();
            let stream = stream.clone();
            async move {
                let groups: redis::streams::StreamInfoGroupsReply = redis::cmd("XINFO")
                    .arg("GROUPS")
                    .arg(&stream)
                    .query_async(&mut redis)
                    .await
                    .ok()?;
                let group = groups
                    .groups
                    .into_iter()
                    .find(|group| group.name == platform::streams::GROUP_SHIPPING)?;
                (group.pending == 0 && id_of(&group.last_delivered_id) >= last).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn card_and_bank_orders_answer_with_their_label_already_bought_and_get_exactly_one() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Ship First Sam", "all").await;
    let mut placed = Vec::new();
    for (method, key) in [
        ("bank_invoice", "ship-first-bank-0001"),
        ("card_checkout", "ship-first-card-0001"),
    ] {
        let quote = crate::support::quote(&sandbox, &agent, &["BPC-157"]).await;
        let body = json!({ "quoteId": quote["id"], "paymentMethod": method, "confirm": true });
        let created = crate::support::place_order(&sandbox, &agent, &body, key).await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let order = created.body["data"]["order"].clone();
        // The answer itself carries the label: no second read needed.
        assert_eq!(order["status"], "label_generated", "{method}: {order}");
        let shipping = &order["shipping"];
        let tracking = shipping["trackingNumber"].as_str().unwrap().to_owned();
        assert!(is_valid_ups(&tracking), "{tracking}");
        assert_eq!(shipping["status"], "pre_transit");
        assert_eq!(shipping["shipTo"]["city"], "Madison");
        assert!(!shipping["packingSteps"].as_array().unwrap().is_empty());
        let url = shipping["labelUrl"]
            .as_str()
            .unwrap()
            .replace("http://127.0.0.1:8080", &sandbox.base_url);
        let pdf = sandbox.http.get(&url).send().await.unwrap();
        assert_eq!(pdf.status(), 200, "{url}");
        assert!(pdf.bytes().await.unwrap().starts_with(b"%PDF"));
        // GET answers the same order.
        let id = order["id"].as_str().unwrap().to_owned();
        let read = sandbox.get(&agent.key, &format!("/orders/{id}")).await;
        assert_eq!(
            crate::support::without_label_link(&read.body["data"]["order"]),
            crate::support::without_label_link(&order)
        );
        placed.push((id, tracking));
    }
    // order.created reaches shipping-svc afterwards and finds the label: one label per order,
    // one shipment.label_created each, and the orders moved to label_generated once.
    shipping_consumed_orders_stream(&sandbox).await;
    let events = stream_events(&sandbox, platform::streams::SHIPPING).await;
    for (id, tracking) in &placed {
        let labels = events
            .iter()
            .filter(|event| matches!(&event.data, Some(Data::ShipmentLabelCreated(label)) if &label.order_id == id))
            .count();
        assert_eq!(labels, 1, "one label for {id}");
        let shipments = sandbox.get(&agent.key, &format!("/shipments?orderId={id}")).await;
        let listed = shipments.body["data"].as_array().unwrap();
        assert_eq!(listed.len(), 1, "{:?}", shipments.body);
        assert_eq!(listed[0]["trackingNumber"], tracking.as_str());
        let order = sandbox.get(&agent.key, &format!("/orders/{id}")).await;
        let moves = order.body["data"]["order"]["statusHistory"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|change| change["toStatus"] == "label_generated")
            .count();
        assert_eq!(moves, 1);
    }

    // Through MCP too: svc.order.create answers with the label.
    let quote = crate::support::quote(&sandbox, &agent, &["TB-500"]).await;
    let arguments = json!({
        "quoteId": quote["id"], "paymentMethod": "card_checkout", "confirm": true,
        "idempotencyKey": "ship-first-mcp-0001",
    });
    let called = sandbox.call_tool(&agent.key, "svc.order.create", arguments).await;
    let order = &called["result"]["structuredContent"]["data"]["order"];
    assert_eq!(order["status"], "label_generated", "{called}");
    assert!(is_valid_ups(
        order["shipping"]["trackingNumber"].as_str().unwrap()
    ));
    sandbox.stop().await;
}

#[tokio::test]
async fn the_tracking_number_names_the_order_on_every_order_operation_and_only_for_its_customer() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Tracking Tess", "all").await;
    let stranger = sandbox.customer("Stranger Sven", "all").await;
    let quote = crate::support::quote(&sandbox, &agent, &["BPC-157"]).await;
    let body = crate::support::order_body(quote["id"].as_str().unwrap());
    let created = crate::support::place_order(&sandbox, &agent, &body, "tracking-ref-0001").await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = &created.body["data"]["order"];
    let id = order["id"].as_str().unwrap();
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap();
    for path in ["", "/samples", "/custody", "/eta"] {
        let read = sandbox
            .get(&agent.key, &format!("/orders/{tracking}{path}"))
            .await;
        assert_eq!(read.status, 200, "{path}: {:?}", read.body);
        let same = sandbox.get(&agent.key, &format!("/orders/{id}{path}")).await;
        assert_eq!(read.body, same.body, "{path}");
        let refused = sandbox
            .get(&stranger.key, &format!("/orders/{tracking}{path}"))
            .await;
        let missing = sandbox
            .get(&stranger.key, &format!("/orders/1Z000000000000000{path}"))
            .await;
        assert_eq!(
            (refused.status, refused.error_code()),
            (404, "not_found"),
            "{path}"
        );
        assert_eq!(
            refused.body, missing.body,
            "{path}: indistinguishable from a missing order"
        );
    }
    // A cancellation request names the order by its tracking number too.
    let filed = sandbox
        .post(
            &agent.key,
            &format!("/orders/{tracking}/cancel-request"),
            &json!({ "reason": "ordered by mistake", "confirm": true }),
            &[],
        )
        .await;
    assert_eq!(filed.status, 202, "{:?}", filed.body);
    let read = sandbox.get(&agent.key, &format!("/orders/{id}")).await;
    assert_eq!(read.body["data"]["order"]["cancellation"]["status"], "pending");
    sandbox.stop().await;
}

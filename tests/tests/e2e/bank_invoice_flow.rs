//! The walking skeleton: catalog → quote → order → bank invoice → recorded payment → paid,
//! through REST and labctl across the whole mesh, with the events it leaves on the streams.

use crate::support::{order_body, quote, stream_events};
use platform::testing::wait_for;
use proto::events::event_envelope::Data;
use serde_json::json;
use std::collections::HashSet;
use std::time::Duration;
use tests::Sandbox;

#[tokio::test]
async fn walking_the_catalog_cursor_returns_every_item_exactly_once_with_one_revision() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Cursor Walker", "catalog:read").await;
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tests::catalog_document()).unwrap()).unwrap();
    let expected =
        document["tests"].as_array().unwrap().len() + document["bundles"].as_array().unwrap().len();

    let mut seen = Vec::new();
    let mut revisions = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/catalog?limit=3&cursor={cursor}"),
            None => "/catalog?limit=3".to_owned(),
        };
        let page = sandbox.get(&agent.key, &path).await;
        assert_eq!(page.status, 200, "{:?}", page.body);
        revisions.insert(page.body["catalogRevision"].as_str().unwrap().to_owned());
        let items = page.body["data"].as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|item| item["id"].as_str().unwrap().to_owned()));
        match page.body["pagination"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no item is returned twice");
    assert_eq!(seen.len(), expected, "every test and bundle is returned");
    assert_eq!(revisions.len(), 1, "every page names the same catalog revision");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_bank_invoice_order_ships_first_and_its_invoice_is_paid_when_staff_record_the_transfer() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Acme Peptides", "all").await;

    let quote = quote(&sandbox, &agent, &["BPC-157", "TB-500"]).await;
    let total = quote["totalCents"].as_i64().unwrap();
    let line_sum: i64 = quote["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["subtotalCents"].as_i64().unwrap())
        .sum();
    assert_eq!(
        total, line_sum,
        "standard turnaround and no conformity samples add nothing"
    );

    let mut body = order_body(quote["id"].as_str().unwrap());
    body["clientReference"] = json!("PO-2026-17");
    body["sampleMetadata"] = json!([{ "compoundName": "BPC-157", "lotNumber": "LOT-A1" }]);
    // The caller's W3C trace continues through the gateway and orders-svc into the event.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let created = sandbox
        .post(
            &agent.key,
            "/orders",
            &body,
            &[
                ("Idempotency-Key", "order-key-0001"),
                ("traceparent", &traceparent),
            ],
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = &created.body["data"]["order"];
    crate::support::assert_fresh_bank_order(order);
    assert_eq!(order["totalCents"].as_i64(), Some(total));
    assert_eq!(order["clientReference"], "PO-2026-17");
    assert_eq!(order["publishRawData"], true);
    assert_eq!(order["lines"][0]["lotNumber"], "LOT-A1");
    assert_eq!(order["lines"][1]["lotNumber"], serde_json::Value::Null);
    let invoice_number = order["payment"]["invoiceNumber"].as_str().unwrap().to_owned();
    assert!(invoice_number.starts_with("INV-"));
    assert_eq!(
        order["payment"]["bankInstructions"]["reference"],
        invoice_number.as_str()
    );
    let order_id = order["id"].as_str().unwrap().to_owned();
    let order_number = order["orderNumber"].as_str().unwrap().to_owned();

    for reference in [&order_id, &order_number, &invoice_number] {
        let found = sandbox.get(&agent.key, &format!("/orders/{reference}")).await;
        assert_eq!(found.status, 200, "order by {reference}");
        assert_eq!(found.body["data"]["order"]["id"], order_id.as_str());
    }
    let invoice = sandbox
        .get(&agent.key, &format!("/invoices/{invoice_number}"))
        .await;
    assert_eq!(invoice.status, 200);
    assert_eq!(invoice.body["data"]["invoice"]["status"], "open");
    assert_eq!(
        invoice.body["data"]["invoice"]["totalCents"].as_i64(),
        Some(total)
    );

    // Ship-first: the prepaid label is bought at once and moves the order to label_generated.
    crate::support::wait_for_label(&sandbox, &agent, &order_id).await;

    let total_text = total.to_string();
    let recorded =
        crate::support::record_bank_payment(&sandbox, &invoice_number, &total_text, "BANK-REF-1").await;
    assert_eq!(recorded["invoice"]["status"], "paid");

    // Payment gates only the COA release: the order keeps its status, its payment block is paid.
    let paid = wait_for("the order to be paid", Duration::from_secs(20), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["payment"]["status"] == "paid").then_some(answer)
    })
    .await;
    assert_eq!(paid.body["data"]["order"]["status"], "label_generated");
    let history = paid.body["data"]["order"]["statusHistory"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1]["fromStatus"], "invoice_sent");
    assert_eq!(history[1]["toStatus"], "label_generated");

    let invoice = sandbox
        .get(&agent.key, &format!("/invoices/{invoice_number}"))
        .await;
    assert_eq!(invoice.body["data"]["invoice"]["status"], "paid");
    assert_eq!(invoice.body["data"]["invoice"]["previousStatus"], "open");
    let payments = sandbox.get(&agent.key, "/payments").await;
    let payments = payments.body["data"].as_array().unwrap();
    assert_eq!(payments.len(), 1);
    assert_eq!(payments[0]["amountCents"].as_i64(), Some(total));
    let payment_id = payments[0]["id"].as_str().unwrap();
    assert_eq!(
        sandbox
            .get(&agent.key, &format!("/payments/{payment_id}"))
            .await
            .status,
        200
    );

    let orders_events = wait_for(
        "the order events on the stream",
        Duration::from_secs(10),
        || async {
            let events = stream_events(&sandbox, "orders").await;
            (events.len() >= 2).then_some(events)
        },
    )
    .await;
    let types: Vec<&str> = orders_events.iter().map(|event| event.r#type.as_str()).collect();
    assert_eq!(types, ["order.created", "order.status_changed"]);
    assert!(
        orders_events[0].traceparent.contains(trace_id),
        "order.created carries the caller's trace: {:?}",
        orders_events[0].traceparent
    );
    match &orders_events[1].data {
        Some(Data::OrderStatusChanged(changed)) => {
            assert_eq!(
                (changed.from_status().as_str(), changed.to_status().as_str()),
                ("invoice_sent", "label_generated")
            );
            // The text twins, for readers of the release before, say the same.
            assert_eq!(
                (
                    changed.legacy_from_status.as_str(),
                    changed.legacy_to_status.as_str()
                ),
                ("invoice_sent", "label_generated")
            );
        }
        other => panic!("unexpected payload {other:?}"),
    }
    let payments_events = wait_for(
        "the payment events on the stream",
        Duration::from_secs(10),
        || async {
            let events = stream_events(&sandbox, "payments").await;
            (events.len() >= 3).then_some(events)
        },
    )
    .await;
    let types: Vec<&str> = payments_events
        .iter()
        .map(|event| event.r#type.as_str())
        .collect();
    assert_eq!(types, ["invoice.created", "invoice.updated", "payment.confirmed"]);
    for event in orders_events.iter().chain(&payments_events) {
        assert_eq!(event.customer_id, agent.id, "every event names its customer");
        assert!(!event.id.is_empty() && !event.occurred_at.is_empty());
    }
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

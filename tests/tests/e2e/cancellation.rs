//! Cancelling an order across the mesh: the customer files a request through REST or MCP, lab
//! staff decide it with labctl, and every outcome reaches the customer on the order and as a
//! webhook. An approval before receipt voids the unpaid invoice, or refunds a paid one (a bank
//! refund is due until staff record the transfer back), exactly once under concurrent approvals.

use crate::support::bank_order;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Customer, Sandbox};

const EVENTS: [&str; 6] = [
    "order.cancellation_requested",
    "order.cancellation_declined",
    "order.cancelled",
    "invoice.updated",
    "payment.refunded",
    "order.status_changed",
];

async fn sandbox_with_receiver() -> (TestReceiver, Sandbox) {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    (receiver, sandbox)
}

async fn subscribe(sandbox: &Sandbox, customer: &Customer, receiver: &TestReceiver) {
    let endpoint = sandbox
        .post(
            &customer.key,
            "/webhooks",
            &json!({ "url": receiver.url("/cancel"), "events": EVENTS }),
            &[("Idempotency-Key", "cancel-endpoint-1")],
        )
        .await;
    assert_eq!(endpoint.status, 201, "{:?}", endpoint.body);
}

/// The deliveries of `event_type` for `order_id` once `count` of them arrived.
async fn deliveries(receiver: &TestReceiver, event_type: &str, order_id: &str, count: usize) -> Vec<Value> {
    wait_for(
        &format!("{count} {event_type} deliveries"),
        Duration::from_secs(30),
        || async {
            let found: Vec<Value> = receiver
                .requests_to("/cancel")
                .into_iter()
                .filter_map(|request| serde_json::from_slice::<Value>(&request.body).ok())
                .filter(|body| body["type"] == event_type && body["data"]["order_id"] == order_id)
                .collect();
            (found.len() >= count).then_some(found)
        },
    )
    .await
}

async fn order(sandbox: &Sandbox, customer: &Customer, order_id: &str) -> Value {
    let answer = sandbox.get(&customer.key, &format!("/orders/{order_id}")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["data"]["order"].clone()
}

async fn invoice_status(sandbox: &Sandbox, customer: &Customer, invoice_number: &str) -> String {
    let answer = sandbox
        .get(&customer.key, &format!("/invoices/{invoice_number}"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["data"]["invoice"]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_request_filed_through_rest_and_approved_twice_at_once_cancels_and_voids_the_order_once() {
    let (receiver, sandbox) = sandbox_with_receiver().await;
    let agent = sandbox.customer("Cancelling Agent", "all").await;
    subscribe(&sandbox, &agent, &receiver).await;
    let (order_id, invoice_number, _) = bank_order(&sandbox, &agent, "cancel-order-1").await;

    // REST: filed with a key; the retry answers the same request; MCP cannot file a second.
    let body = json!({ "reason": "Ordered the wrong <compound> & lot", "confirm": true });
    let filed = sandbox
        .post(
            &agent.key,
            &format!("/orders/{invoice_number}/cancel-request"),
            &body,
            &[("Idempotency-Key", "cancel-request-1")],
        )
        .await;
    assert_eq!(filed.status, 202, "{:?}", filed.body);
    let request = filed.body["data"]["cancelRequest"].clone();
    assert_eq!(request["status"], "pending");
    assert_eq!(request["reason"], "Ordered the wrong <compound> & lot");
    let replay = sandbox
        .post(
            &agent.key,
            &format!("/orders/{invoice_number}/cancel-request"),
            &body,
            &[("Idempotency-Key", "cancel-request-1")],
        )
        .await;
    assert_eq!(replay.status, 202);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body["data"]["cancelRequest"], request);
    let reused = sandbox
        .post(
            &agent.key,
            &format!("/orders/{order_id}/cancel-request"),
            &body,
            &[("Idempotency-Key", "cancel-request-1")],
        )
        .await;
    assert_eq!(reused.status, 409, "the same key for another request");
    assert_eq!(reused.body["error"]["code"], "idempotency_key_reused");
    let second = sandbox
        .call_tool(
            &agent.key,
            "svc.order.cancel_request",
            json!({ "reference": order_id, "reason": "again", "confirm": true, "idempotencyKey": "cancel-mcp-1" }),
        )
        .await;
    assert_eq!(second["result"]["isError"], true, "{second}");
    assert_eq!(
        second["result"]["structuredContent"]["error"]["code"],
        "cancel_request_pending"
    );
    let unconfirmed = sandbox
        .post(
            &agent.key,
            &format!("/orders/{order_id}/cancel-request"),
            &json!({ "reason": "why", "confirm": false }),
            &[],
        )
        .await;
    assert_eq!(unconfirmed.status, 400);
    assert_eq!(unconfirmed.body["error"]["code"], "confirmation_required");
    let requested = deliveries(&receiver, "order.cancellation_requested", &order_id, 1).await;
    assert_eq!(requested[0]["data"]["cancel_request_id"], request["id"]);
    assert_eq!(
        order(&sandbox, &agent, &order_id).await["cancellation"]["status"],
        "pending"
    );

    // Staff: listed, then two approvals at once: one cancels, the other changes nothing.
    let listed = sandbox
        .labctl(&["cancellations", "list", "--status", "pending"])
        .await
        .unwrap();
    let number = order(&sandbox, &agent, &order_id).await["orderNumber"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        listed["cancelRequests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|listed| listed["orderNumber"] == number.as_str()),
        "{listed}"
    );
    let approve = [
        "cancellations",
        "approve",
        "--order",
        &number,
        "--note",
        "Cancelled, no charge.",
    ];
    let (first, other) = tokio::join!(sandbox.labctl(&approve), sandbox.labctl(&approve));
    let (first, other) = (first.unwrap(), other.unwrap());
    assert_eq!(
        [first["unchanged"].as_bool(), other["unchanged"].as_bool()]
            .iter()
            .filter(|unchanged| **unchanged == Some(false))
            .count(),
        1,
        "{first} {other}"
    );
    assert_eq!(first["orderStatus"], "cancelled");

    let cancelled = order(&sandbox, &agent, &order_id).await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["cancellation"]["status"], "approved");
    assert_eq!(cancelled["cancellation"]["note"], "Cancelled, no charge.");
    assert_eq!(cancelled["cancellation"]["chargeCents"], 0);
    let event = deliveries(&receiver, "order.cancelled", &order_id, 1).await;
    assert_eq!(event[0]["data"]["charge_cents"], 0);
    assert_eq!(event[0]["data"]["cancel_request_id"], request["id"]);
    wait_for("the invoice to be voided", Duration::from_secs(30), || async {
        (invoice_status(&sandbox, &agent, &invoice_number).await == "void").then_some(())
    })
    .await;
    let voided = wait_for("invoice.updated (void)", Duration::from_secs(30), || async {
        receiver
            .requests_to("/cancel")
            .into_iter()
            .filter_map(|request| serde_json::from_slice::<Value>(&request.body).ok())
            .find(|body| body["type"] == "invoice.updated" && body["data"]["status"] == "void")
    })
    .await;
    assert_eq!(voided["data"]["invoice_number"], invoice_number.as_str());

    // Exactly once: one order.cancelled, one void invoice.updated, whatever the approvals.
    let later = sandbox
        .post(
            &agent.key,
            &format!("/orders/{order_id}/cancel-request"),
            &json!({ "reason": "once more", "confirm": true }),
            &[],
        )
        .await;
    assert_eq!(later.status, 409);
    assert_eq!(later.body["error"]["code"], "order_not_cancellable");
    let count = |event_type: &str| {
        receiver
            .requests_to("/cancel")
            .into_iter()
            .filter_map(|request| serde_json::from_slice::<Value>(&request.body).ok())
            .filter(|body| {
                body["type"] == event_type
                    && (event_type != "invoice.updated" || body["data"]["status"] == "void")
            })
            .count()
    };
    assert_eq!((count("order.cancelled"), count("invoice.updated")), (1, 1));
    sandbox.stop().await;
}

#[tokio::test]
async fn a_paid_order_cancelled_is_refunded_once_staff_record_the_transfer_back_and_a_declined_one_goes_on() {
    let (receiver, sandbox) = sandbox_with_receiver().await;
    let agent = sandbox.customer("Refunded Agent", "all").await;
    subscribe(&sandbox, &agent, &receiver).await;
    let (order_id, invoice_number, total) = bank_order(&sandbox, &agent, "cancel-order-2").await;
    sandbox
        .labctl(&[
            "payments",
            "record",
            "--invoice",
            &invoice_number,
            "--amount-cents",
            &total,
            "--bank-reference",
            "BANK-IN-CANCEL-1",
        ])
        .await
        .unwrap();
    wait_for("the invoice to be paid", Duration::from_secs(30), || async {
        (invoice_status(&sandbox, &agent, &invoice_number).await == "paid").then_some(())
    })
    .await;

    // Declined first: the order goes on, and the customer hears why.
    let filed = sandbox
        .call_tool(
            &agent.key,
            "svc.order.cancel_request",
            json!({ "reference": order_id, "reason": "changed my mind", "confirm": true }),
        )
        .await;
    assert_eq!(
        filed["result"]["structuredContent"]["data"]["cancelRequest"]["status"], "pending",
        "{filed}"
    );
    let number = order(&sandbox, &agent, &order_id).await["orderNumber"]
        .as_str()
        .unwrap()
        .to_owned();
    sandbox
        .labctl(&[
            "cancellations",
            "decline",
            "--order",
            &number,
            "--note",
            "Already packed.",
        ])
        .await
        .unwrap();
    let declined = deliveries(&receiver, "order.cancellation_declined", &order_id, 1).await;
    assert_eq!(declined[0]["data"]["note"], "Already packed.");
    assert_ne!(order(&sandbox, &agent, &order_id).await["status"], "cancelled");

    // Filed again and approved: the bank payment is due back until staff record the transfer.
    let again = sandbox
        .post(
            &agent.key,
            &format!("/orders/{order_id}/cancel-request"),
            &json!({ "reason": "please cancel after all", "confirm": true }),
            &[],
        )
        .await;
    assert_eq!(again.status, 202, "{:?}", again.body);
    sandbox
        .labctl(&[
            "cancellations",
            "approve",
            "--order",
            &number,
            "--note",
            "Refund on its way.",
        ])
        .await
        .unwrap();
    let due = wait_for("the bank refund to be due", Duration::from_secs(30), || async {
        let listed = sandbox
            .labctl(&["payments", "refunds", "--status", "due"])
            .await
            .ok()?;
        listed["refunds"]
            .as_array()?
            .iter()
            .find(|refund| refund["orderNumber"] == number.as_str())
            .cloned()
    })
    .await;
    assert_eq!(due["amountCents"].to_string(), total);
    assert_eq!(due["paidWith"], "BANK-IN-CANCEL-1");
    let refund_id = due["id"].as_str().unwrap().to_owned();
    let recorded = sandbox
        .labctl(&[
            "payments",
            "record-refund",
            "--refund",
            &refund_id,
            "--reference",
            "BANK-OUT-CANCEL-1",
        ])
        .await
        .unwrap();
    assert_eq!(recorded["refund"]["status"], "succeeded", "{recorded}");
    let refunded = deliveries(&receiver, "payment.refunded", &order_id, 1).await;
    assert_eq!(refunded[0]["data"]["reference"], "BANK-OUT-CANCEL-1");
    assert_eq!(refunded[0]["data"]["amount_cents"].to_string(), total);
    assert_eq!(invoice_status(&sandbox, &agent, &invoice_number).await, "void");
    let again = sandbox
        .labctl(&[
            "payments",
            "record-refund",
            "--refund",
            &refund_id,
            "--reference",
            "BANK-OUT-CANCEL-1",
        ])
        .await
        .unwrap();
    assert_eq!(again["alreadyRecorded"], true);
    assert_eq!(
        deliveries(&receiver, "payment.refunded", &order_id, 1)
            .await
            .len(),
        1
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn another_customers_order_cannot_be_cancelled_and_looks_missing() {
    let sandbox = Sandbox::start().await;
    let owner = sandbox.customer("Owner", "all").await;
    let stranger = sandbox.customer("Stranger", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &owner, "cancel-order-3").await;
    let body = json!({ "reason": "not mine", "confirm": true });
    let foreign = sandbox
        .post(
            &stranger.key,
            &format!("/orders/{order_id}/cancel-request"),
            &body,
            &[],
        )
        .await;
    let missing = sandbox
        .post(
            &stranger.key,
            "/orders/00000000-0000-7000-8000-000000000000/cancel-request",
            &body,
            &[],
        )
        .await;
    assert_eq!((foreign.status, missing.status), (404, 404));
    assert_eq!(foreign.body["error"]["code"], missing.body["error"]["code"]);
    let reader = sandbox.customer("Reader", "orders:read").await;
    let refused = sandbox
        .post(
            &reader.key,
            &format!("/orders/{order_id}/cancel-request"),
            &body,
            &[],
        )
        .await;
    assert_eq!(refused.status, 403);
    let bad = sandbox
        .post(
            &owner.key,
            &format!("/orders/{order_id}/cancel-request"),
            &json!({ "reason": "", "confirm": true, "extra": 1 }),
            &[],
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(order(&sandbox, &owner, &order_id).await["cancellation"].is_null());
    sandbox.stop().await;
}

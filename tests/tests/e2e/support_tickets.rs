//! Support tickets across the mesh: a customer opens a ticket about its order through REST and
//! MCP, lab staff list, answer and close it with labctl, the customer reads the thread and its
//! webhook endpoint receives `support.ticket_answered`; bodies come back byte for byte and
//! another customer sees nothing.

use crate::support::bank_order;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tests::Sandbox;

const SCRIPT: &str = "<script>alert(1)</script>\nSecond line & \"quotes\" é";

#[tokio::test]
async fn a_ticket_opened_through_rest_and_mcp_is_answered_and_closed_by_staff_with_an_event_each() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Ticket Agent", "all").await;
    let endpoint = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &json!({ "url": receiver.url("/support"), "events": ["support.ticket_answered", "support.ticket_closed"] }),
            &[("Idempotency-Key", "support-endpoint-1")],
        )
        .await;
    assert_eq!(endpoint.status, 201, "{:?}", endpoint.body);
    let (order_id, invoice_number, _) = bank_order(&sandbox, &agent, "support-order-1").await;

    // REST: open with a key; the retry answers the same ticket.
    let body = json!({ "subject": "Where is my label?", "body": SCRIPT, "reference": invoice_number });
    let opened = sandbox
        .post(
            &agent.key,
            "/support/tickets",
            &body,
            &[("Idempotency-Key", "support-ticket-1")],
        )
        .await;
    assert_eq!(opened.status, 201, "{:?}", opened.body);
    let ticket = opened.body["data"]["ticket"].clone();
    assert_eq!(ticket["status"], "open");
    assert_eq!(ticket["orderId"], order_id.as_str());
    assert_eq!(ticket["messages"][0]["body"], SCRIPT);
    assert_eq!(ticket["messages"][0]["author"], "customer");
    let replay = sandbox
        .post(
            &agent.key,
            "/support/tickets",
            &body,
            &[("Idempotency-Key", "support-ticket-1")],
        )
        .await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body["data"]["ticket"], ticket);
    let ticket_id = ticket["id"].as_str().unwrap().to_owned();
    let number = ticket["ticketNumber"].as_str().unwrap().to_owned();

    // MCP: a second ticket, without a reference, and the first read back.
    let by_tool = sandbox
        .call_tool(
            &agent.key,
            "svc.support.ticket.open",
            json!({ "subject": "General question", "body": "Do you test <i>kratom</i>?", "idempotencyKey": "support-mcp-1" }),
        )
        .await;
    let mcp_ticket = &by_tool["result"]["structuredContent"]["data"]["ticket"];
    assert_eq!(
        mcp_ticket["messages"][0]["body"], "Do you test <i>kratom</i>?",
        "{by_tool}"
    );
    assert_eq!(mcp_ticket["reference"], Value::Null);

    // Staff: list the open tickets of this customer, answer the first, then close it.
    let listed = sandbox
        .labctl(&["tickets", "list", "--status", "open", "--customer", &agent.id])
        .await
        .unwrap();
    assert_eq!(listed["tickets"].as_array().unwrap().len(), 2, "{listed}");
    let shown = sandbox.labctl(&["tickets", "show", &number]).await.unwrap();
    assert_eq!(shown["messages"][0]["body"], SCRIPT);
    let answered = sandbox
        .labctl(&[
            "tickets",
            "answer",
            &number,
            "--body",
            "Your label is <b>attached</b> to the order.",
        ])
        .await
        .unwrap();
    assert_eq!(answered["status"], "answered", "{answered}");

    let read = sandbox
        .call_tool(
            &agent.key,
            "svc.support.ticket.get",
            json!({ "ticketId": ticket_id }),
        )
        .await;
    let thread = &read["result"]["structuredContent"]["data"]["ticket"];
    assert_eq!(thread["status"], "answered", "{read}");
    assert_eq!(thread["messages"][1]["author"], "staff");
    assert_eq!(
        thread["messages"][1]["body"],
        "Your label is <b>attached</b> to the order."
    );
    assert!(thread["messages"][1]["authorName"].is_string());

    let answered_delivery = wait_for(
        "support.ticket_answered to be delivered",
        Duration::from_secs(20),
        || async {
            receiver.requests_to("/support").into_iter().find_map(|request| {
                let body: Value = serde_json::from_slice(&request.body).ok()?;
                (body["type"] == "support.ticket_answered").then_some(body)
            })
        },
    )
    .await;
    assert_eq!(answered_delivery["data"]["ticket_id"], ticket_id.as_str());
    assert_eq!(answered_delivery["data"]["ticket_number"], number.as_str());
    assert_eq!(answered_delivery["data"]["status"], "answered");
    assert_eq!(answered_delivery["data"]["reference"], invoice_number.as_str());
    assert_eq!(answered_delivery["data"]["order_id"], order_id.as_str());

    // The customer replies (the ticket is open again), then staff close it with a note.
    let replied = sandbox
        .post(
            &agent.key,
            &format!("/support/tickets/{number}/messages"),
            &json!({ "body": "Thanks!" }),
            &[("Idempotency-Key", "support-reply-1")],
        )
        .await;
    assert_eq!(replied.status, 201, "{:?}", replied.body);
    assert_eq!(replied.body["data"]["ticket"]["status"], "open");
    let closed = sandbox
        .labctl(&["tickets", "close", &ticket_id, "--note", "Closing: label found."])
        .await
        .unwrap();
    assert_eq!(closed["status"], "closed", "{closed}");
    wait_for(
        "support.ticket_closed to be delivered",
        Duration::from_secs(20),
        || async {
            receiver.requests_to("/support").into_iter().find_map(|request| {
                let body: Value = serde_json::from_slice(&request.body).ok()?;
                (body["type"] == "support.ticket_closed" && body["data"]["ticket_id"] == ticket_id.as_str())
                    .then_some(())
            })
        },
    )
    .await;
    let late = sandbox
        .post(
            &agent.key,
            &format!("/support/tickets/{ticket_id}/messages"),
            &json!({ "body": "One more" }),
            &[],
        )
        .await;
    assert_eq!(late.status, 409, "{:?}", late.body);
    assert_eq!(late.error_code(), "conflict");

    let closed_list = sandbox.get(&agent.key, "/support/tickets?status=closed").await;
    assert_eq!(closed_list.status, 200);
    assert_eq!(closed_list.body["data"][0]["id"], ticket_id.as_str());
    assert_eq!(closed_list.body["data"][0]["messages"], json!([]));
    sandbox.stop().await;
}

#[tokio::test]
async fn another_customers_tickets_and_orders_are_out_of_reach_and_bad_input_is_400() {
    let sandbox = Sandbox::start().await;
    let owner = sandbox.customer("Ticket Owner", "all").await;
    let stranger = sandbox.customer("Ticket Stranger", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &owner, "support-iso-order").await;
    let opened = sandbox
        .post(
            &owner.key,
            "/support/tickets",
            &json!({ "subject": "Mine", "body": "private", "reference": order_id }),
            &[],
        )
        .await;
    assert_eq!(opened.status, 201, "{:?}", opened.body);
    let ticket = &opened.body["data"]["ticket"];

    let missing = sandbox
        .get(
            &stranger.key,
            &format!("/support/tickets/{}", uuid::Uuid::now_v7()),
        )
        .await;
    assert_eq!(missing.status, 404);
    for reference in [
        ticket["id"].as_str().unwrap(),
        ticket["ticketNumber"].as_str().unwrap(),
    ] {
        let other = sandbox
            .get(&stranger.key, &format!("/support/tickets/{reference}"))
            .await;
        assert_eq!(other.status, 404);
        assert_eq!(
            other.body, missing.body,
            "indistinguishable from a missing ticket"
        );
    }
    let listed = sandbox.get(&stranger.key, "/support/tickets").await;
    assert_eq!(listed.body["data"], json!([]));
    let by_tool = sandbox
        .call_tool(
            &stranger.key,
            "svc.support.ticket.get",
            json!({ "ticketId": ticket["id"] }),
        )
        .await;
    assert_eq!(by_tool["result"]["isError"], true, "{by_tool}");
    assert_eq!(
        by_tool["result"]["structuredContent"]["error"]["code"],
        "not_found"
    );

    let foreign_order = sandbox
        .post(
            &stranger.key,
            "/support/tickets",
            &json!({ "subject": "Not mine", "body": "text", "reference": order_id }),
            &[],
        )
        .await;
    assert_eq!(foreign_order.status, 404);
    assert_eq!(foreign_order.body["error"]["details"]["field"], "reference");

    let too_long = sandbox
        .post(
            &owner.key,
            "/support/tickets",
            &json!({ "subject": "Long", "body": "x".repeat(10_001) }),
            &[],
        )
        .await;
    assert_eq!(too_long.status, 400);
    assert_eq!(too_long.error_code(), "invalid_request");
    assert_eq!(too_long.body["error"]["details"]["field"], "body");
    let unknown = sandbox
        .post(
            &owner.key,
            "/support/tickets",
            &json!({ "subject": "s", "body": "b", "priority": "high" }),
            &[],
        )
        .await;
    assert_eq!(unknown.status, 400);
    let reader = sandbox.customer("Ticket Reader", "orders:read").await;
    let refused = sandbox
        .post(
            &reader.key,
            "/support/tickets",
            &json!({ "subject": "s", "body": "b" }),
            &[],
        )
        .await;
    assert_eq!(refused.status, 403);
    sandbox.stop().await;
}

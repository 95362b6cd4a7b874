//! `POST /orders` and the order reads: shapes, idempotency passthrough, replays, trace context.

use crate::helpers::{json_with_status, order_body, spawn_app};

#[tokio::test]
async fn creating_an_order_answers_201_with_the_order_and_passes_the_idempotency_key() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:write"]).await;
    let response = app
        .post_json(
            "/orders",
            &customer.plaintext,
            &order_body(),
            Some("order-key-0001"),
        )
        .await;
    assert!(response.headers().get("idempotent-replayed").is_none());
    let body = json_with_status(response, 201).await;
    let order = &body["data"]["order"];
    assert_eq!(order["orderNumber"], "ORD-000001");
    assert_eq!(
        order["customerId"],
        serde_json::Value::Null,
        "customer ids are not exposed"
    );
    assert_eq!(order["status"], "invoice_sent");
    assert_eq!(order["statusHistory"][0]["fromStatus"], serde_json::Value::Null);
    assert_eq!(
        order["statusHistory"][0]["changedAt"],
        "2026-07-14T03:33:20.123456Z"
    );
    assert_eq!(order["lines"][0]["lotNumber"], "LOT-1");
    assert_eq!(order["lines"][0]["matrixNotes"], serde_json::Value::Null);
    assert_eq!(order["lines"][0]["items"][0]["priceCents"], 12_500);
    assert_eq!(order["totalCents"], 12_500);
    assert_eq!(order["payment"]["invoiceNumber"], "INV-000001");
    assert_eq!(order["payment"]["amountDueCents"], 12_500);
    assert_eq!(order["payment"]["bankInstructions"], serde_json::Value::Null);
    assert_eq!(order["publishRawData"], true);
    assert_eq!(order["clientReference"], "po-7");
    assert_eq!(order["notes"], serde_json::Value::Null);
    let calls = app.fakes.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].idempotency_key.as_deref(), Some("order-key-0001"));
}

#[tokio::test]
async fn a_replayed_order_answers_201_with_the_replay_header() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:write"]).await;
    let response = app
        .post_json(
            "/orders",
            &customer.plaintext,
            &order_body(),
            Some("replay-key-0001"),
        )
        .await;
    assert_eq!(response.headers()["idempotent-replayed"], "true");
    let body = json_with_status(response, 201).await;
    assert_eq!(
        body["data"]["order"]["id"],
        "0b7e8f52-0000-4000-8000-000000000002"
    );
}

#[tokio::test]
async fn order_reads_use_the_list_and_single_envelopes() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let list = json_with_status(
        app.get("/orders?status=paid&limit=10", &customer.plaintext).await,
        200,
    )
    .await;
    assert_eq!(list["data"][0]["orderNumber"], "ORD-000001");
    assert_eq!(list["pagination"], serde_json::json!({ "nextCursor": null }));
    let one = json_with_status(app.get("/orders/ORD-000001", &customer.plaintext).await, 200).await;
    assert_eq!(one["data"]["order"]["id"], "ORD-000001");
}

#[tokio::test]
async fn an_incoming_traceparent_reaches_the_services() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let response = app
        .http
        .get(app.agent("/orders"))
        .bearer_auth(&customer.plaintext)
        .header("traceparent", format!("00-{trace_id}-00f067aa0ba902b7-01"))
        .send()
        .await
        .unwrap();
    json_with_status(response, 200).await;
    let traceparent = app.fakes.calls()[0]
        .traceparent
        .clone()
        .expect("a traceparent reached the service");
    assert!(traceparent.contains(trace_id), "{traceparent}");
    // Without an exporter (as here) the context is passed on unchanged; with one, the gateway's
    // own spans sit in between (the e2e trace test checks that parenting).
    assert_eq!(traceparent, format!("00-{trace_id}-00f067aa0ba902b7-01"));
}

#[tokio::test]
async fn a_request_without_trace_context_reaches_the_services_with_a_new_trace() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    for invalid in [
        None,
        Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        Some("garbage"),
    ] {
        let mut request = app
            .http
            .get(app.agent("/orders"))
            .bearer_auth(&customer.plaintext);
        if let Some(value) = invalid {
            request = request.header("traceparent", value);
        }
        json_with_status(request.send().await.unwrap(), 200).await;
    }
    let parents: Vec<String> = app
        .fakes
        .calls()
        .iter()
        .map(|call| {
            call.traceparent
                .clone()
                .expect("a traceparent reached the service")
        })
        .collect();
    assert_eq!(parents.len(), 3);
    for parent in &parents {
        assert!(platform::telemetry::is_valid_traceparent(parent), "{parent}");
    }
    let distinct: std::collections::BTreeSet<&str> = parents.iter().map(|parent| &parent[3..35]).collect();
    assert_eq!(distinct.len(), 3, "each request starts its own trace");
}

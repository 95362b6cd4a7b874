//! Client mistakes answer enveloped 4xx (never 500), service errors keep their status and code,
//! and every response carries a request id.

use crate::helpers::{error_envelope, order_body, spawn_app, spawn_app_with};
use serde_json::json;

#[tokio::test]
async fn every_response_carries_a_request_id_and_a_sane_incoming_one_is_kept() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let requests = [
        app.http
            .get(app.agent("/orders"))
            .bearer_auth(&customer.plaintext),
        app.http.get(app.agent("/orders")),
        app.http.get(app.agent("/nowhere")),
        app.http.delete(app.agent("/orders")),
        app.http.get(app.url("/api/v1/openapi.json")),
    ];
    for request in requests {
        let response = request.send().await.unwrap();
        let id = response
            .headers()
            .get("x-request-id")
            .expect("x-request-id")
            .to_str()
            .unwrap();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    }
    let kept = app
        .http
        .get(app.agent("/orders"))
        .header("X-Request-Id", "agent-run_42.7")
        .send()
        .await
        .unwrap();
    assert_eq!(kept.headers()["x-request-id"], "agent-run_42.7");
    for insane in [
        "has spaces in it".to_owned(),
        "a".repeat(129),
        "<script>".to_owned(),
    ] {
        let response = app
            .http
            .get(app.agent("/orders"))
            .header("X-Request-Id", &insane)
            .send()
            .await
            .unwrap();
        let id = response.headers()["x-request-id"].to_str().unwrap();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{insane} was echoed as {id}");
    }
}

#[tokio::test]
async fn unknown_routes_are_enveloped_404s_and_wrong_methods_enveloped_405s() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["all"]).await;
    // A path inside the agent area that no operation serves (every operation of the spec is
    // built: GET /instruments, GET /support/tickets, POST /notifications/customer-coa and POST
    // /orders/{reference}/addons were the example until they were built).
    assert!(gateway::scopes::NOT_BUILT.is_empty());
    let missing = app
        .http
        .post(app.agent("/orders/ORD-2026-000001/refund"))
        .bearer_auth(&customer.plaintext)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    error_envelope(missing, 404, "not_found").await;
    let outside = app
        .http
        .get(app.url("/nope"))
        .bearer_auth(&customer.plaintext)
        .send()
        .await
        .unwrap();
    error_envelope(outside, 404, "not_found").await;
    let wrong = app
        .http
        .delete(app.agent("/orders"))
        .bearer_auth(&customer.plaintext)
        .send()
        .await
        .unwrap();
    let allow = wrong.headers()["allow"].to_str().unwrap().to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    let body = error_envelope(wrong, 405, "invalid_request").await;
    assert_eq!(body["error"]["details"]["method"], "DELETE");
}

#[tokio::test]
async fn malformed_bodies_are_invalid_body_errors_naming_the_path() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:write"]).await;
    let post_raw = |body: &'static str, content_type: &'static str| {
        app.http
            .post(app.agent("/orders"))
            .bearer_auth(&customer.plaintext)
            .header("Idempotency-Key", "order-key-0001")
            .header("Content-Type", content_type)
            .body(body)
            .send()
    };
    let body = error_envelope(
        post_raw("{\"quoteId\": ", "application/json").await.unwrap(),
        400,
        "invalid_body",
    )
    .await;
    assert!(
        body["error"]["details"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("the body is not valid JSON"),
        "{body}"
    );
    let body = error_envelope(post_raw("{}", "text/plain").await.unwrap(), 400, "invalid_body").await;
    assert!(
        body["error"]["details"]["reason"]
            .as_str()
            .unwrap()
            .contains("Content-Type")
    );

    let cases = [
        (json!({ "confirm": "yes" }), "confirm"),
        (json!({ "quoteId": "not-a-uuid" }), "quoteId"),
        (
            {
                let mut b = order_body();
                b["extra"] = json!(1);
                b
            },
            "extra",
        ),
        (
            {
                let mut b = order_body();
                b["sampleMetadata"][0]["color"] = json!("red");
                b
            },
            "sampleMetadata[0].color",
        ),
        (
            {
                let mut b = order_body();
                b["sampleMetadata"] = json!([{ "lotNumber": "L" }]);
                b
            },
            "sampleMetadata[0].compoundName",
        ),
        (
            {
                let mut b = order_body();
                b.as_object_mut().unwrap().remove("paymentMethod");
                b
            },
            "paymentMethod",
        ),
    ];
    for (payload, path) in cases {
        let response = app
            .post_json("/orders", &customer.plaintext, &payload, Some("order-key-0001"))
            .await;
        let body = error_envelope(response, 400, "invalid_body").await;
        assert_eq!(body["error"]["details"]["path"], path, "{body}");
        assert!(body["error"]["details"]["reason"].is_string());
    }
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn malformed_query_parameters_are_invalid_request_errors_naming_the_field() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["orders:read", "invoices:read"])
        .await;
    for (path, field) in [
        ("/orders?limit=many", "limit"),
        ("/orders?sort=asc", "sort"),
        ("/invoices?orderId=42", "orderId"),
    ] {
        let body = error_envelope(app.get(path, &customer.plaintext).await, 400, "invalid_request").await;
        assert_eq!(body["error"]["details"]["field"], field, "{body}");
    }
}

#[tokio::test]
async fn idempotency_keys_that_are_missing_short_or_long_are_refused() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:write"]).await;
    let missing = app
        .post_json("/orders", &customer.plaintext, &order_body(), None)
        .await;
    error_envelope(missing, 400, "idempotency_key_missing").await;
    for key in ["short".to_owned(), "k".repeat(256), "has a space".to_owned()] {
        let response = app
            .post_json("/orders", &customer.plaintext, &order_body(), Some(&key))
            .await;
        error_envelope(response, 400, "idempotency_key_invalid").await;
    }
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn service_errors_keep_their_status_code_and_details() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["orders:read", "catalog:read", "quotes:write"])
        .await;
    error_envelope(
        app.get("/orders/missing", &customer.plaintext).await,
        404,
        "not_found",
    )
    .await;
    error_envelope(
        app.get("/orders/conflict", &customer.plaintext).await,
        409,
        "conflict",
    )
    .await;
    error_envelope(
        app.get("/orders/down", &customer.plaintext).await,
        503,
        "service_unavailable",
    )
    .await;
    error_envelope(
        app.get("/orders/plain-unavailable", &customer.plaintext).await,
        503,
        "service_unavailable",
    )
    .await;
    let busy = app.get("/orders/busy", &customer.plaintext).await;
    assert_eq!(busy.headers()["retry-after"], "3");
    error_envelope(busy, 409, "idempotency_request_in_progress").await;
    let quote = json!({ "categoryId": "nope", "compoundNames": ["A"], "testIds": ["t"] });
    let body = error_envelope(
        app.post_json("/quotes", &customer.plaintext, &quote, None).await,
        400,
        "unknown_category",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "categoryId");
}

#[tokio::test]
async fn an_unreachable_service_is_a_503() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let app = spawn_app_with(|settings| settings.peers.orders = format!("http://{closed}")).await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let response = app.get("/orders", &customer.plaintext).await;
    error_envelope(response, 503, "service_unavailable").await;
}

//! `POST /webhooks` and `GET /webhooks`: the subscription scope rule (checked before the service
//! is called), body validation, the answer with the signing secret, replays, and the list that
//! never carries a secret.

use crate::helpers::{TestApp, error_envelope, json_with_status, spawn_app};
use crate::webhook_fake::{CREATED_SECRET, ENDPOINT_ID};
use prost::Message;
use proto::webhooks as pb;
use serde_json::{Value, json};

const URL: &str = "https://hooks.example.com/lab";

async fn register(app: &TestApp, key: &str, body: &Value, idempotency_key: &str) -> reqwest::Response {
    app.post_json("/webhooks", key, body, Some(idempotency_key)).await
}

fn sent_create_request(app: &TestApp) -> pb::CreateEndpointRequest {
    let calls = app.fakes.calls_of("CreateEndpoint");
    assert_eq!(calls.len(), 1, "one registration reached webhooks-svc");
    pb::CreateEndpointRequest::decode(calls[0].message.as_slice()).unwrap()
}

#[tokio::test]
async fn webhooks_write_alone_cannot_register_the_default_coa_published_subscription() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["webhooks:write"]).await;
    let response = register(&app, &customer.plaintext, &json!({ "url": URL }), "hook-key-0001").await;
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert!(challenge.contains("results:read"), "{challenge}");
    let body = error_envelope(response, 403, "insufficient_scope").await;
    assert_eq!(
        body["error"]["details"]["required"],
        json!(["webhooks:write", "results:read"])
    );
    assert_eq!(body["error"]["details"]["missing"], json!(["results:read"]));
    assert!(app.fakes.calls().is_empty(), "refused before any service call");
}

#[tokio::test]
async fn the_default_subscription_with_results_read_answers_201_with_the_secret_once() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["webhooks:write", "results:read"])
        .await;
    let body = json!({ "url": URL, "description": "ops pager" });
    let response = register(&app, &customer.plaintext, &body, "hook-key-0002").await;
    assert!(response.headers().get("idempotent-replayed").is_none());
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = json_with_status(response, 201).await;
    assert_eq!(body["data"]["signingSecret"], CREATED_SECRET);
    let endpoint = &body["data"]["endpoint"];
    assert_eq!(
        endpoint,
        &json!({
            "id": ENDPOINT_ID,
            "url": URL,
            "events": ["coa.published"],
            "status": "active",
            "disabledReason": null,
            "description": "ops pager",
            "createdAt": "2026-07-14T03:33:20.123456Z",
            "updatedAt": "2026-07-14T03:35:00.123456Z",
            "previousSecretExpiresAt": null,
        })
    );
    let sent = sent_create_request(&app);
    assert_eq!(
        sent.events,
        vec!["coa.published"],
        "the default is sent explicitly"
    );
    assert_eq!(sent.url, URL);
    assert_eq!(sent.description.as_deref(), Some("ops pager"));
    let call = &app.fakes.calls_of("CreateEndpoint")[0];
    assert_eq!(call.idempotency_key.as_deref(), Some("hook-key-0002"));
    assert_eq!(
        call.principal.customer_id.map(|id| id.to_string()),
        Some(customer.customer_id)
    );
}

#[tokio::test]
async fn explicit_events_each_need_their_own_read_scope() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["webhooks:write", "orders:read"])
        .await;
    let mixed = json!({ "url": URL, "events": ["order.created", "payment.confirmed", "invoice.created"] });
    let refused = register(&app, &customer.plaintext, &mixed, "hook-key-0003").await;
    let body = error_envelope(refused, 403, "insufficient_scope").await;
    assert_eq!(
        body["error"]["details"]["required"],
        json!(["webhooks:write", "orders:read", "payments:read", "invoices:read"])
    );
    assert_eq!(
        body["error"]["details"]["missing"],
        json!(["payments:read", "invoices:read"])
    );
    assert!(app.fakes.calls().is_empty());

    let orders_only =
        json!({ "url": URL, "events": ["order.created", "order.status_changed", "order.created"] });
    let created = register(&app, &customer.plaintext, &orders_only, "hook-key-0004").await;
    let body = json_with_status(created, 201).await;
    assert_eq!(
        body["data"]["endpoint"]["events"],
        json!(["order.created", "order.status_changed"])
    );
    assert_eq!(
        sent_create_request(&app).events,
        vec!["order.created", "order.status_changed"],
        "duplicates are dropped before the call"
    );
}

#[tokio::test]
async fn unknown_events_and_malformed_bodies_are_400_before_any_service_call() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["all"]).await;
    let key = &customer.plaintext;
    let unknown = json!({ "url": URL, "events": ["order.created", "payment.succeeded"] });
    let body = error_envelope(
        register(&app, key, &unknown, "hook-key-0005").await,
        400,
        "unknown_event",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "events[1]");
    assert!(body["error"]["details"]["allowed"].as_array().unwrap().len() == 20);

    let empty = json!({ "url": URL, "events": [] });
    let body = error_envelope(
        register(&app, key, &empty, "hook-key-0006").await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "events");

    let long = json!({ "url": URL, "description": "x".repeat(501) });
    let body = error_envelope(
        register(&app, key, &long, "hook-key-0007").await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "description");

    let extra = json!({ "url": URL, "secret": "mine" });
    let body = error_envelope(
        register(&app, key, &extra, "hook-key-0008").await,
        400,
        "invalid_body",
    )
    .await;
    assert_eq!(body["error"]["details"]["path"], "secret");

    let no_url = json!({ "events": ["coa.published"] });
    let body = error_envelope(
        register(&app, key, &no_url, "hook-key-0009").await,
        400,
        "invalid_body",
    )
    .await;
    assert_eq!(body["error"]["details"]["path"], "url");
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn service_refusals_of_a_registration_keep_their_status_and_code() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["all"]).await;
    let private = json!({ "url": "https://10.0.0.1/hook" });
    let body = error_envelope(
        register(&app, &customer.plaintext, &private, "hook-key-0010").await,
        400,
        "invalid_webhook_url",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "url");
    let reused = register(
        &app,
        &customer.plaintext,
        &json!({ "url": URL }),
        "reused-key-0001",
    )
    .await;
    error_envelope(reused, 409, "idempotency_key_reused").await;
}

#[tokio::test]
async fn a_replayed_registration_answers_201_again_with_the_replay_header_and_the_secret() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["webhooks:write", "results:read"])
        .await;
    let response = register(
        &app,
        &customer.plaintext,
        &json!({ "url": URL }),
        "replay-key-0001",
    )
    .await;
    assert_eq!(response.headers()["idempotent-replayed"], "true");
    let body = json_with_status(response, 201).await;
    assert_eq!(body["data"]["signingSecret"], CREATED_SECRET);
    assert_eq!(body["data"]["endpoint"]["id"], ENDPOINT_ID);
}

#[tokio::test]
async fn the_endpoint_list_is_safe_metadata_and_never_carries_a_signing_secret() {
    let app = spawn_app().await;
    let writer = app
        .identity
        .keyed_customer(&["webhooks:write", "webhooks:read", "results:read"])
        .await;
    let created = register(&app, &writer.plaintext, &json!({ "url": URL }), "hook-key-0011").await;
    json_with_status(created, 201).await;

    let response = app.get("/webhooks?limit=2&cursor=abc", &writer.plaintext).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(!text.contains("whsec_"), "{text}");
    assert!(!text.to_lowercase().contains("secret\""), "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list["pagination"], json!({ "nextCursor": "endpoints-2" }));
    let endpoints = list["data"].as_array().unwrap();
    assert_eq!(endpoints.len(), 2);
    let mut fields: Vec<&str> = endpoints[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        vec![
            "createdAt",
            "description",
            "disabledReason",
            "events",
            "id",
            "previousSecretExpiresAt",
            "status",
            "updatedAt",
            "url"
        ]
    );
    assert_eq!(
        endpoints[0]["previousSecretExpiresAt"],
        "2026-07-15T03:33:20.123456Z"
    );
    assert_eq!(endpoints[1]["status"], "disabled");
    assert_eq!(endpoints[1]["disabledReason"], "the receiver answered 410 Gone");
    let sent =
        pb::ListEndpointsRequest::decode(app.fakes.calls_of("ListEndpoints")[0].message.as_slice()).unwrap();
    assert_eq!((sent.limit, sent.cursor.as_deref()), (Some(2), Some("abc")));

    let reader_only = app.identity.keyed_customer(&["webhooks:read"]).await;
    let refused = register(
        &app,
        &reader_only.plaintext,
        &json!({ "url": URL }),
        "hook-key-0012",
    )
    .await;
    let body = error_envelope(refused, 403, "insufficient_scope").await;
    assert_eq!(body["error"]["details"]["required"], json!(["webhooks:write"]));
    let writer_only = app.identity.keyed_customer(&["webhooks:write"]).await;
    error_envelope(
        app.get("/webhooks", &writer_only.plaintext).await,
        403,
        "insufficient_scope",
    )
    .await;
    let bad_query = app.get("/webhooks?limit=many", &writer.plaintext).await;
    let body = error_envelope(bad_query, 400, "invalid_request").await;
    assert_eq!(body["error"]["details"]["field"], "limit");
}

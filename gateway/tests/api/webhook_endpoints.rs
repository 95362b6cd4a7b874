//! Delete, rotate-secret, test delivery and the deliveries list of one endpoint: the
//! `Idempotency-Key` requirement on every mutation, optional empty bodies, replays, the UUID
//! path segment, and the service's 404 and 409 kept as they are.

use crate::helpers::{TestApp, error_envelope, json_with_status, spawn_app};
use crate::webhook_fake::{CONFLICTING_ENDPOINT, ENDPOINT_ID, MISSING_ENDPOINT, ROTATED_SECRET};
use prost::Message;
use proto::webhooks as pb;
use reqwest::Method;
use serde_json::json;

/// The three mutations on one endpoint: method and path suffix.
const MUTATIONS: [(&str, &str); 3] = [("DELETE", ""), ("POST", "/rotate-secret"), ("POST", "/test")];

fn mutation(
    app: &TestApp,
    key: &str,
    method: &str,
    endpoint_id: &str,
    suffix: &str,
) -> reqwest::RequestBuilder {
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    app.authorized(method, &format!("/webhooks/{endpoint_id}{suffix}"), key)
}

#[tokio::test]
async fn the_four_mutations_require_a_valid_idempotency_key_before_any_service_call() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["all"]).await;
    let key = &customer.plaintext;
    let body = json!({ "url": "https://hooks.example.com" });
    let register = app.post_json("/webhooks", key, &body, None).await;
    error_envelope(register, 400, "idempotency_key_missing").await;
    for (method, suffix) in MUTATIONS {
        let missing = mutation(&app, key, method, ENDPOINT_ID, suffix)
            .send()
            .await
            .unwrap();
        error_envelope(missing, 400, "idempotency_key_missing").await;
        let short = mutation(&app, key, method, ENDPOINT_ID, suffix)
            .header("Idempotency-Key", "short")
            .send()
            .await
            .unwrap();
        error_envelope(short, 400, "idempotency_key_invalid").await;
    }
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn delete_rotate_and_test_answer_200_with_their_shapes_and_pass_the_key() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["webhooks:write"]).await;
    let key = &customer.plaintext;
    let deleted = mutation(&app, key, "DELETE", ENDPOINT_ID, "")
        .header("Idempotency-Key", "delete-key-0001")
        .send()
        .await
        .unwrap();
    assert!(deleted.headers().get("idempotent-replayed").is_none());
    let body = json_with_status(deleted, 200).await;
    assert_eq!(body["data"]["endpoint"]["status"], "deleted");
    assert_eq!(body["data"]["endpoint"]["id"], ENDPOINT_ID);
    assert!(body["data"].get("signingSecret").is_none());

    // No body at all, without a Content-Type.
    let rotated = mutation(&app, key, "POST", ENDPOINT_ID, "/rotate-secret")
        .header("Idempotency-Key", "rotate-key-0001")
        .send()
        .await
        .unwrap();
    assert_eq!(rotated.headers()["cache-control"], "no-store");
    let body = json_with_status(rotated, 200).await;
    assert_eq!(body["data"]["signingSecret"], ROTATED_SECRET);
    assert_eq!(
        body["data"]["endpoint"]["previousSecretExpiresAt"],
        "2026-07-15T03:33:20.123456Z"
    );

    // An explicit `{}`.
    let tested = mutation(&app, key, "POST", ENDPOINT_ID, "/test")
        .header("Idempotency-Key", "test-key-0001")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let body = json_with_status(tested, 200).await;
    assert_eq!(
        body["data"]["delivery"],
        json!({
            "id": "d-test",
            "endpointId": ENDPOINT_ID,
            "eventId": "evt-d-test",
            "eventType": "webhook.test",
            "status": "succeeded",
            "attemptCount": 1,
            "nextAttemptAt": null,
            "createdAt": "2026-07-14T03:36:40.123456Z",
            "attempts": [{
                "attemptNumber": 1,
                "attemptedAt": "2026-07-14T03:36:41.123456Z",
                "statusCode": 200,
                "latencyMs": 12,
                "error": null,
                "outcome": "succeeded"
            }]
        })
    );
    let calls = app.fakes.calls();
    let seen: Vec<(&str, Option<&str>)> = calls
        .iter()
        .map(|call| (call.rpc, call.idempotency_key.as_deref()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("DeleteEndpoint", Some("delete-key-0001")),
            ("RotateSecret", Some("rotate-key-0001")),
            ("SendTestDelivery", Some("test-key-0001")),
        ]
    );
    let sent = pb::RotateSecretRequest::decode(calls[1].message.as_slice()).unwrap();
    assert_eq!(sent.endpoint_id, ENDPOINT_ID);
}

#[tokio::test]
async fn replayed_mutations_answer_like_the_first_response_with_the_replay_header() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["webhooks:write"]).await;
    for (method, suffix) in MUTATIONS {
        let response = mutation(&app, &customer.plaintext, method, ENDPOINT_ID, suffix)
            .header("Idempotency-Key", "replay-key-0002")
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.headers()["idempotent-replayed"],
            "true",
            "{method} {suffix}"
        );
        let body = json_with_status(response, 200).await;
        assert!(body["data"].is_object(), "{body}");
    }
    let rotated = mutation(&app, &customer.plaintext, "POST", ENDPOINT_ID, "/rotate-secret")
        .header("Idempotency-Key", "replay-key-0003")
        .send()
        .await
        .unwrap();
    let body = json_with_status(rotated, 200).await;
    assert_eq!(
        body["data"]["signingSecret"], ROTATED_SECRET,
        "a replay recovers the secret"
    );
}

#[tokio::test]
async fn an_endpoint_id_that_is_not_a_uuid_is_400_invalid_request_without_a_service_call() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["webhooks:write", "webhooks:read"])
        .await;
    for (method, suffix) in MUTATIONS {
        let response = mutation(&app, &customer.plaintext, method, "not-a-uuid", suffix)
            .header("Idempotency-Key", "uuid-key-0001")
            .send()
            .await
            .unwrap();
        let body = error_envelope(response, 400, "invalid_request").await;
        assert_eq!(body["error"]["details"]["field"], "endpointId");
    }
    let list = app.get("/webhooks/12345/deliveries", &customer.plaintext).await;
    let body = error_envelope(list, 400, "invalid_request").await;
    assert_eq!(body["error"]["details"]["field"], "endpointId");
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn bodies_other_than_empty_or_an_empty_object_are_refused() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["webhooks:write"]).await;
    let extra = mutation(&app, &customer.plaintext, "POST", ENDPOINT_ID, "/test")
        .header("Idempotency-Key", "body-key-0001")
        .json(&json!({ "eventType": "order.created" }))
        .send()
        .await
        .unwrap();
    let body = error_envelope(extra, 400, "invalid_body").await;
    assert_eq!(body["error"]["details"]["path"], "eventType");
    let text = mutation(&app, &customer.plaintext, "POST", ENDPOINT_ID, "/rotate-secret")
        .header("Idempotency-Key", "body-key-0002")
        .body("{}")
        .send()
        .await
        .unwrap();
    error_envelope(text, 400, "invalid_body").await;
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn the_services_404_and_409_keep_their_status_and_code() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["webhooks:write", "webhooks:read"])
        .await;
    for (method, suffix) in MUTATIONS {
        let missing = mutation(&app, &customer.plaintext, method, MISSING_ENDPOINT, suffix)
            .header("Idempotency-Key", "error-key-0001")
            .send()
            .await
            .unwrap();
        error_envelope(missing, 404, "not_found").await;
        let conflict = mutation(&app, &customer.plaintext, method, CONFLICTING_ENDPOINT, suffix)
            .header("Idempotency-Key", "error-key-0002")
            .send()
            .await
            .unwrap();
        error_envelope(conflict, 409, "conflict").await;
    }
    let path = format!("/webhooks/{MISSING_ENDPOINT}/deliveries");
    error_envelope(app.get(&path, &customer.plaintext).await, 404, "not_found").await;
}

#[tokio::test]
async fn the_deliveries_of_an_endpoint_are_a_list_with_every_attempt() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["webhooks:read"]).await;
    let path = format!("/webhooks/{ENDPOINT_ID}/deliveries?status=pending&limit=5&cursor=c1");
    let list = json_with_status(app.get(&path, &customer.plaintext).await, 200).await;
    assert_eq!(list["pagination"], json!({ "nextCursor": "deliveries-2" }));
    let pending = &list["data"][0];
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["nextAttemptAt"], "2026-07-14T03:41:40.123456Z");
    assert_eq!(
        pending["attempts"][0],
        json!({
            "attemptNumber": 1,
            "attemptedAt": "2026-07-14T03:38:21.123456Z",
            "statusCode": null,
            "latencyMs": 3,
            "error": "connection refused",
            "outcome": "failed"
        })
    );
    assert_eq!(list["data"][1]["attempts"][0]["statusCode"], 200);
    let call = &app.fakes.calls_of("ListDeliveries")[0];
    let sent = pb::ListDeliveriesRequest::decode(call.message.as_slice()).unwrap();
    assert_eq!(sent.endpoint_id, ENDPOINT_ID);
    assert_eq!(sent.status.as_deref(), Some("pending"));
    assert_eq!((sent.limit, sent.cursor.as_deref()), (Some(5), Some("c1")));

    let unknown = app
        .get(
            &format!("/webhooks/{ENDPOINT_ID}/deliveries?state=dead"),
            &customer.plaintext,
        )
        .await;
    error_envelope(unknown, 400, "invalid_request").await;
    let writer = app.identity.keyed_customer(&["webhooks:write"]).await;
    let refused = app
        .get(&format!("/webhooks/{ENDPOINT_ID}/deliveries"), &writer.plaintext)
        .await;
    error_envelope(refused, 403, "insufficient_scope").await;
}

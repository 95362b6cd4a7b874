//! API-key authentication (401), scopes (403), rate limits (429) and what services receive.

use crate::helpers::{error_envelope, json_with_status, spawn_app, spawn_app_with};
use platform::principal::PrincipalKind;
use std::time::Duration;

const INVALID_TOKEN: &str = "Bearer realm=\"lab\", error=\"invalid_token\"";

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate header")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_request_without_a_key_is_refused_with_a_bare_bearer_challenge() {
    let app = spawn_app().await;
    let response = app.http.get(app.agent("/orders")).send().await.unwrap();
    assert_eq!(challenge(&response), "Bearer realm=\"lab\"");
    assert!(response.headers().contains_key("x-request-id"));
    error_envelope(response, 401, "unauthenticated").await;
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn malformed_unknown_and_wrongly_schemed_keys_are_refused_as_invalid_tokens() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let unknown = format!("svc_live_{}_{}", "q".repeat(16), "Z".repeat(32));
    for authorization in [
        "Bearer not-a-key".to_owned(),
        format!("Basic {}", customer.plaintext),
        format!("Bearer {unknown}"),
        format!("Bearer {}x", customer.plaintext),
        "Bearer".to_owned(),
    ] {
        let response = app
            .http
            .get(app.agent("/orders"))
            .header("Authorization", &authorization)
            .send()
            .await
            .unwrap();
        assert_eq!(challenge(&response), INVALID_TOKEN, "{authorization}");
        error_envelope(response, 401, "unauthenticated").await;
    }
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn a_key_with_the_wrong_secret_is_refused() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let (prefix, secret) = customer.plaintext.rsplit_once('_').unwrap();
    let other_secret: String = secret
        .chars()
        .rev()
        .map(|c| if c == 'a' { 'b' } else { 'a' })
        .collect();
    let response = app.get("/orders", &format!("{prefix}_{other_secret}")).await;
    assert_eq!(challenge(&response), INVALID_TOKEN);
    error_envelope(response, 401, "unauthenticated").await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
}

#[tokio::test]
async fn a_revoked_key_is_refused_within_seconds() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    let revoke = proto::identity::RevokeApiKeyRequest {
        key: customer.key.public_id.clone(),
    };
    let revoked = app
        .identity
        .client()
        .await
        .revoke_api_key(app.identity.admin(revoke))
        .await
        .unwrap()
        .into_inner();
    assert!(revoked.key.unwrap().revoked_at.is_some());
    let started = std::time::Instant::now();
    let response = platform::testing::wait_for(
        "the revocation to take effect",
        Duration::from_secs(7),
        || async {
            let response = app.get("/orders", &customer.plaintext).await;
            (response.status() == 401).then_some(response)
        },
    )
    .await;
    assert!(
        started.elapsed() <= Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(challenge(&response), INVALID_TOKEN);
    error_envelope(response, 401, "unauthenticated").await;
}

#[tokio::test]
async fn a_key_without_the_scope_is_refused_before_any_service_is_called() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["catalog:read"]).await;
    let response = app.get("/orders", &customer.plaintext).await;
    assert!(challenge(&response).contains("insufficient_scope"));
    let body = error_envelope(response, 403, "insufficient_scope").await;
    assert_eq!(
        body["error"]["details"]["required"],
        serde_json::json!(["orders:read"])
    );
    let response = app
        .post_json(
            "/orders",
            &customer.plaintext,
            &crate::helpers::order_body(),
            Some("key-12345678"),
        )
        .await;
    let body = error_envelope(response, 403, "insufficient_scope").await;
    assert_eq!(
        body["error"]["details"]["required"],
        serde_json::json!(["orders:write"])
    );
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn services_receive_a_principal_token_with_the_keys_customer_and_scopes() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["orders:read", "catalog:read"])
        .await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    let calls = app.fakes.calls();
    assert_eq!(calls.len(), 1);
    let principal = &calls[0].principal;
    assert_eq!(calls[0].rpc, "ListOrders");
    assert_eq!(principal.kind, PrincipalKind::Customer);
    assert_eq!(principal.subject, customer.key.id);
    assert_eq!(principal.customer_id.unwrap().to_string(), customer.customer_id);
    assert_eq!(principal.scopes, vec!["catalog:read", "orders:read"]);
    assert_eq!(
        principal.spend_limit_cents,
        Some(platform::testing::identity::KEYED_CUSTOMER_SPEND_LIMIT_CENTS)
    );
}

#[tokio::test]
async fn a_key_over_its_rate_is_refused_with_retry_after() {
    let app = spawn_app_with(|settings| {
        settings.rate_limit = gateway::RateLimitSettings {
            per_second: 1,
            burst: 2,
        }
    })
    .await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    let response = app.get("/orders", &customer.plaintext).await;
    assert_eq!(response.headers()["retry-after"], "1");
    let body = error_envelope(response, 429, "rate_limited").await;
    assert_eq!(body["error"]["details"]["retryAfterSeconds"], 1);
    let other = app.identity.keyed_customer(&["orders:read"]).await;
    json_with_status(app.get("/orders", &other.plaintext).await, 200).await;
}

#[tokio::test]
async fn key_use_is_recorded_in_the_background() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    let id: uuid::Uuid = customer.key.id.parse().unwrap();
    platform::testing::wait_for("last_used_at", Duration::from_secs(5), || async {
        let used: Option<chrono::DateTime<chrono::Utc>> =
            sqlx::query_scalar("SELECT last_used_at FROM identity.api_keys WHERE id = $1")
                .bind(id)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        used
    })
    .await;
}

//! The front door: limits before authentication, authentication before routing, and the IETF
//! rate-limit headers.

use crate::helpers::{error_envelope, json_with_status, spawn_app, spawn_app_with};
use futures::StreamExt;
use gateway::client_addr::TrustedProxies;
use gateway::{FrontDoorSettings, RateLimitSettings};
use std::time::{Duration, Instant};

/// A key of the right shape that no customer holds.
fn random_key() -> String {
    let public_id = &uuid::Uuid::new_v4().simple().to_string()[..16];
    format!("svc_live_{public_id}_{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test]
async fn a_flood_of_unknown_keys_from_one_address_is_limited_before_the_key_store_while_another_client_keeps_working()
 {
    // Production limits; the test client is a trusted proxy so that X-Forwarded-For names the
    // attacker and the honest client apart.
    let app = spawn_app_with(|settings| {
        settings.front_door = FrontDoorSettings {
            trusted_proxies: TrustedProxies::parse("127.0.0.1").unwrap(),
            ..FrontDoorSettings::default()
        };
    })
    .await;
    let honest = app.identity.keyed_customer(&["orders:read"]).await;
    let lookups_before = app.authenticator.lookups();
    let started = Instant::now();
    let flood = futures::stream::iter(0..10_000)
        .map(|_| {
            app.http
                .get(app.agent("/orders"))
                .bearer_auth(random_key())
                .header("X-Forwarded-For", "203.0.113.66")
                .send()
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>();
    let honest_calls = async {
        let mut statuses = Vec::new();
        for _ in 0..20 {
            let response = app
                .http
                .get(app.agent("/orders"))
                .bearer_auth(&honest.plaintext)
                .header("X-Forwarded-For", "198.51.100.7")
                .send()
                .await
                .unwrap();
            statuses.push(response.status().as_u16());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        statuses
    };
    let (flood, honest_statuses) = tokio::join!(flood, honest_calls);
    let elapsed = started.elapsed().as_secs_f64();

    let mut limited = 0;
    let mut sample_429 = None;
    for response in flood {
        let response = response.unwrap();
        match response.status().as_u16() {
            429 => {
                limited += 1;
                sample_429.get_or_insert(response);
            }
            401 => {}
            other => panic!("a made-up key answered {other}"),
        }
    }
    assert!(limited >= 9_800, "only {limited} of 10,000 were limited");
    // The key store saw the lookup budget of one address: a burst of 20, then 2 a second.
    let lookups = app.authenticator.lookups() - lookups_before;
    let budget = 20.0 + 2.0 * (elapsed + 1.0) + 1.0;
    assert!((lookups as f64) <= budget, "{lookups} lookups in {elapsed:.1} s");
    assert!(app.authenticator.cache_sizes().unknown as u64 <= lookups);
    assert_eq!(honest_statuses, vec![200; 20]);

    let response = sample_429.unwrap();
    assert!(response.headers().contains_key("retry-after"));
    let policy = response.headers()["ratelimit-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy == "\"key-lookups\";q=20;w=10" || policy == "\"per-address\";q=600;w=2",
        "{policy}"
    );
    assert!(
        response.headers()["ratelimit"]
            .to_str()
            .unwrap()
            .contains(";r=0;t=")
    );
    let body = error_envelope(response, 429, "rate_limited").await;
    assert!(body["error"]["details"]["retryAfterSeconds"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn the_unknown_key_cache_is_bounded_and_spares_the_key_store_repeated_lookups() {
    let app = spawn_app_with(|settings| settings.front_door.negative_cache_capacity = 5).await;
    let repeated = random_key();
    for _ in 0..10 {
        error_envelope(app.get("/orders", &repeated).await, 401, "unauthenticated").await;
    }
    assert_eq!(app.authenticator.lookups(), 1);
    for _ in 0..20 {
        error_envelope(app.get("/orders", &random_key()).await, 401, "unauthenticated").await;
    }
    assert_eq!(app.authenticator.cache_sizes().unknown, 5);
}

#[tokio::test]
async fn every_address_has_its_own_budget_and_forwarded_for_is_believed_only_from_trusted_proxies() {
    let tight = RateLimitSettings {
        per_second: 1,
        burst: 2,
    };
    let app = spawn_app_with(|settings| settings.front_door.per_address = tight).await;
    let spoofed = |address: &'static str| {
        app.http
            .get(app.url("/api/ready"))
            .header("X-Forwarded-For", address)
            .send()
    };
    // Not a trusted proxy: the header is ignored and every request counts against 127.0.0.1.
    json_with_status(spoofed("192.0.2.1").await.unwrap(), 200).await;
    json_with_status(spoofed("192.0.2.2").await.unwrap(), 200).await;
    let refused = spoofed("192.0.2.3").await.unwrap();
    assert_eq!(refused.headers()["ratelimit-policy"], "\"per-address\";q=2;w=2");
    error_envelope(refused, 429, "rate_limited").await;

    let behind_proxy = spawn_app_with(|settings| {
        settings.front_door.per_address = tight;
        settings.front_door.trusted_proxies = TrustedProxies::parse("127.0.0.0/8").unwrap();
    })
    .await;
    for address in ["192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.2"] {
        let response = behind_proxy
            .http
            .get(behind_proxy.url("/api/ready"))
            .header("X-Forwarded-For", address)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{address}");
    }
}

#[tokio::test]
async fn an_anonymous_unknown_path_is_401_and_an_authenticated_one_404() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    for path in [
        "/api/v1/agent/nowhere",
        "/nope",
        "/api/v1/agent/orders/ORD-1/secret",
    ] {
        let anonymous = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(
            anonymous.headers()["www-authenticate"],
            "Bearer realm=\"lab\"",
            "{path}"
        );
        error_envelope(anonymous, 401, "unauthenticated").await;
        let invalid = app
            .http
            .get(app.url(path))
            .bearer_auth(random_key())
            .send()
            .await
            .unwrap();
        assert!(
            invalid.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .contains("invalid_token")
        );
        error_envelope(invalid, 401, "unauthenticated").await;
        let known = app
            .http
            .get(app.url(path))
            .bearer_auth(&customer.plaintext)
            .send()
            .await
            .unwrap();
        error_envelope(known, 404, "not_found").await;
    }
    let anonymous_wrong_method = app.http.delete(app.agent("/orders")).send().await.unwrap();
    assert!(!anonymous_wrong_method.headers().contains_key("allow"));
    error_envelope(anonymous_wrong_method, 401, "unauthenticated").await;
    let wrong_method = app
        .http
        .delete(app.agent("/orders"))
        .bearer_auth(&customer.plaintext)
        .send()
        .await
        .unwrap();
    error_envelope(wrong_method, 405, "invalid_request").await;
    assert!(app.fakes.calls().is_empty());
}

#[tokio::test]
async fn public_addresses_stay_public() {
    let app = spawn_app().await;
    json_with_status(app.http.get(app.url("/api/ready")).send().await.unwrap(), 200).await;
    json_with_status(
        app.http
            .get(app.url("/api/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    // /verify is public: without a key a request reaches its validation (400), never a 401.
    let verify = app.http.get(app.agent("/verify")).send().await.unwrap();
    error_envelope(verify, 400, "invalid_request").await;
}

#[tokio::test]
async fn answers_carry_the_keys_rate_limit_and_a_429_says_when_to_retry() {
    let app = spawn_app_with(|settings| {
        settings.rate_limit = RateLimitSettings {
            per_second: 1,
            burst: 2,
        }
    })
    .await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let first = app.get("/orders", &customer.plaintext).await;
    assert_eq!(first.headers()["ratelimit-policy"], "\"per-key\";q=2;w=2");
    assert_eq!(first.headers()["ratelimit"], "\"per-key\";r=1;t=1");
    json_with_status(first, 200).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    let refused = app.get("/orders", &customer.plaintext).await;
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(refused.headers()["ratelimit-policy"], "\"per-key\";q=2;w=2");
    assert_eq!(refused.headers()["ratelimit"], "\"per-key\";r=0;t=2");
    let body = error_envelope(refused, 429, "rate_limited").await;
    assert_eq!(body["error"]["details"]["policy"], "per-key");
    assert_eq!(body["error"]["details"]["retryAfterSeconds"], 1);
}

#[tokio::test]
async fn refreshing_a_known_keys_expired_cache_entry_is_not_charged_to_the_lookup_budget() {
    // Entries expire as they are stored: every presentation after the first refreshes one.
    let app = spawn_app_with(|settings| {
        settings.key_cache_ttl = Duration::ZERO;
        settings.front_door.key_lookups_per_address = RateLimitSettings {
            per_second: 1,
            burst: 1,
        };
    })
    .await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    for _ in 0..3 {
        json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    }
    assert_eq!(app.authenticator.lookups(), 4);
    // A public id the gateway does not know is charged: the budget (1) is spent.
    let refused = app.get("/orders", &random_key()).await;
    assert_eq!(refused.headers()["ratelimit-policy"], "\"key-lookups\";q=1;w=1");
    error_envelope(refused, 429, "rate_limited").await;
}

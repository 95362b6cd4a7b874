//! Several gateway replicas on one database and Redis: one per-key limit between them, and a
//! revocation that every replica honours within a second; without Redis, each replica limits a
//! key on its own (fail open to the per-process limit).

use crate::helpers::{TestApp, error_envelope, json_with_status, spawn_app, spawn_app_with};
use gateway::RateLimitSettings;
use std::time::{Duration, Instant};

const SHARED: RateLimitSettings = RateLimitSettings {
    per_second: 1,
    burst: 20,
};

#[tokio::test]
async fn two_gateways_share_one_per_key_limit() {
    let first = spawn_app_with(|settings| settings.rate_limit = SHARED).await;
    let second = first.replica(|settings| settings.rate_limit = SHARED).await;
    let customer = first.identity.keyed_customer(&["orders:read"]).await;
    let started = Instant::now();
    let mut admitted = [0_u32; 2];
    let mut refused = [0_u32; 2];
    for round in 0..40 {
        let (index, app): (usize, &TestApp) = if round % 2 == 0 { (0, &first) } else { (1, &second) };
        let response = app.get("/orders", &customer.plaintext).await;
        match response.status().as_u16() {
            200 => admitted[index] += 1,
            429 => {
                assert!(response.headers().contains_key("retry-after"));
                refused[index] += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    let refills = started.elapsed().as_secs() + 1;
    let total = admitted[0] + admitted[1];
    // One limit of 20 (plus what refilled meanwhile), never 20 per replica; each replica may
    // hold at most a quarter of the burst unused in its lease.
    assert!(
        u64::from(total) <= 20 + refills,
        "admitted {admitted:?} refused {refused:?}"
    );
    assert!(total >= 10, "admitted {admitted:?} refused {refused:?}");
    assert!(admitted.iter().all(|n| *n > 0) && refused.iter().all(|n| *n > 0));
}

#[tokio::test]
async fn a_revoked_key_stops_working_on_every_replica_within_a_second() {
    let first = spawn_app().await;
    let second = first.replica(|_| {}).await;
    let customer = first.identity.keyed_customer(&["orders:read"]).await;
    // Both replicas have the key cached (for up to 5 s without the revocation channel).
    json_with_status(first.get("/orders", &customer.plaintext).await, 200).await;
    json_with_status(second.get("/orders", &customer.plaintext).await, 200).await;
    let revoke = proto::identity::RevokeApiKeyRequest {
        key: customer.key.public_id.clone(),
    };
    first
        .identity
        .client()
        .await
        .revoke_api_key(first.identity.admin(revoke))
        .await
        .unwrap();
    let revoked_at = Instant::now();
    for app in [&first, &second] {
        let response = platform::testing::wait_for(
            "the revocation to reach the replica",
            Duration::from_secs(1),
            || async {
                let response = app.get("/orders", &customer.plaintext).await;
                (response.status() == 401).then_some(response)
            },
        )
        .await;
        error_envelope(response, 401, "unauthenticated").await;
    }
    assert!(
        revoked_at.elapsed() < Duration::from_secs(1),
        "took {:?}",
        revoked_at.elapsed()
    );
}

#[tokio::test]
async fn without_redis_each_replica_limits_a_key_on_its_own_and_keeps_serving() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let app = spawn_app_with(|settings| {
        settings.common.redis_url = format!("redis://{closed}");
        settings.rate_limit = RateLimitSettings {
            per_second: 1,
            burst: 2,
        };
    })
    .await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let started = Instant::now();
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    json_with_status(app.get("/orders", &customer.plaintext).await, 200).await;
    let refused = app.get("/orders", &customer.plaintext).await;
    assert_eq!(refused.headers()["ratelimit-policy"], "\"per-key\";q=2;w=2");
    error_envelope(refused, 429, "rate_limited").await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn public_verification_has_one_global_lookup_ceiling_across_replicas_and_addresses() {
    let ceiling = RateLimitSettings {
        per_second: 1,
        burst: 4,
    };
    let first = spawn_app_with(|settings| settings.front_door.verify_lookups = ceiling).await;
    let second = first
        .replica(|settings| settings.front_door.verify_lookups = ceiling)
        .await;
    // A batch of 5 accessions needs 5 lookups: more than the whole ceiling, refused before
    // results-svc is asked.
    let batch = serde_json::json!({ "accessions": ["ACC-2026-000001", "ACC-2026-000002",
        "ACC-2026-000003", "ACC-2026-000004", "ACC-2026-000005"] });
    let refused = first
        .http
        .post(first.agent("/verify/batch"))
        .json(&batch)
        .send()
        .await
        .unwrap();
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    let body = error_envelope(refused, 429, "rate_limited").await;
    assert_eq!(body["error"]["details"]["policy"], "verify-lookups");
    // The other replica, from "another address", finds the same bucket empty.
    let single = second
        .http
        .get(second.agent("/verify?accession=ACC-2026-000006"))
        .header("X-Forwarded-For", "198.51.100.7")
        .send()
        .await
        .unwrap();
    assert!(single.headers().contains_key("retry-after"));
    let body = error_envelope(single, 429, "rate_limited").await;
    assert_eq!(body["error"]["details"]["policy"], "verify-lookups");
    // Once a token has refilled (one a second), a single lookup goes through the ceiling again
    // (to results-svc, which these tests do not run: any answer but 429). A refused poll takes no
    // token.
    platform::testing::wait_for(
        "a token of the shared ceiling to refill",
        Duration::from_secs(5),
        || async {
            let later = first
                .http
                .get(first.agent("/verify?accession=ACC-2026-000006"))
                .send()
                .await
                .unwrap();
            (later.status() != 429).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn public_verification_budgets_each_client_address_behind_the_trusted_proxy_besides_the_global_ceiling()
{
    let app = spawn_app_with(|settings| {
        settings.front_door.verify_lookups_per_address = RateLimitSettings {
            per_second: 1,
            burst: 3,
        };
        settings.front_door.trusted_proxies =
            gateway::client_addr::TrustedProxies::parse("127.0.0.1").unwrap();
    })
    .await;
    let verify = |address: &'static str, query: &'static str| {
        let app = &app;
        async move {
            app.http
                .get(app.agent(&format!("/verify{query}")))
                .header("X-Forwarded-For", address)
                .send()
                .await
                .unwrap()
        }
    };
    // Three lookups from one client (a batch of three) fit its budget; the fourth does not.
    let batch = verify(
        "198.51.100.7",
        "/batch?accessions=ACC-2026-000001,ACC-2026-000002,ACC-2026-000003",
    )
    .await;
    assert_ne!(batch.status(), 429);
    let refused = verify("198.51.100.7", "?accession=ACC-2026-000004").await;
    assert!(refused.headers().contains_key("retry-after"));
    let body = error_envelope(refused, 429, "rate_limited").await;
    assert_eq!(body["error"]["details"]["policy"], "verify-lookups-per-address");
    // Another client, through the same proxy, has its own budget.
    let other = verify("203.0.113.9", "?accession=ACC-2026-000004").await;
    assert_ne!(other.status(), 429);
}

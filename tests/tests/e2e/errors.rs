//! Bad input through REST: every case answers the error envelope with the right status and code,
//! and nothing is written.

use crate::support::{order_body, place_order, quote, two_tests};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Answer, Sandbox};

fn assert_error(answer: &Answer, status: u16, code: &str) {
    assert_eq!(
        (answer.status, answer.error_code()),
        (status, code),
        "{:?}",
        answer.body
    );
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .is_some_and(|message| !message.is_empty())
    );
    assert!(
        answer.header("x-request-id").is_some(),
        "errors carry a request id"
    );
}

#[tokio::test]
async fn missing_malformed_unknown_and_revoked_keys_are_401_with_a_challenge() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Key Holder", "all").await;

    let missing = sandbox.call(Method::GET, "/orders", None, None, &[]).await;
    assert_error(&missing, 401, "unauthenticated");
    assert!(missing.header("www-authenticate").unwrap().starts_with("Bearer"));
    for key in [
        "not-a-key",
        "svc_live_short_x",
        "svc_live_aaaaaaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    ] {
        assert_error(&sandbox.get(key, "/orders").await, 401, "unauthenticated");
    }
    let (prefix, _) = agent.key.rsplit_once('_').unwrap();
    let wrong_secret = format!("{prefix}_{}", "Z".repeat(32));
    assert_error(
        &sandbox.get(&wrong_secret, "/orders").await,
        401,
        "unauthenticated",
    );
    assert_eq!(sandbox.get(&agent.key, "/orders").await.status, 200);

    let public_id = prefix.trim_start_matches("svc_live_");
    sandbox.labctl(&["keys", "revoke", public_id]).await.unwrap();
    platform::testing::wait_for("the revocation to bite", Duration::from_secs(8), || async {
        (sandbox.get(&agent.key, "/orders").await.status == 401).then_some(())
    })
    .await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_key_without_the_scope_gets_403_and_nothing_is_created() {
    let sandbox = Sandbox::start().await;
    let reader = sandbox.customer("Read Only", "catalog:read,orders:read").await;
    let body = json!({ "categoryId": "peptides", "compoundNames": ["X"], "testIds": ["hplc-purity"] });
    let answer = sandbox.post(&reader.key, "/quotes", &body, &[]).await;
    assert_error(&answer, 403, "insufficient_scope");
    assert_eq!(
        answer.body["error"]["details"]["required"],
        json!(["quotes:write"])
    );
    let order = sandbox
        .post(
            &reader.key,
            "/orders",
            &order_body(&uuid::Uuid::new_v4().to_string()),
            &[("Idempotency-Key", "scope-test-1")],
        )
        .await;
    assert_error(&order, 403, "insufficient_scope");
    assert_eq!(
        sandbox.get(&reader.key, "/orders").await.body["data"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn invalid_quote_requests_name_the_offending_field() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Sloppy Quoter", "all").await;
    let tests = two_tests(&sandbox, &agent, "peptides").await;
    let test = tests[0].0.as_str();
    let botanical_only = {
        let page = sandbox
            .get(&agent.key, "/catalog?category=botanicals&limit=200")
            .await;
        let peptides = sandbox
            .get(&agent.key, "/catalog?category=peptides&limit=200")
            .await;
        let peptide_ids: Vec<&Value> = peptides.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| &item["id"])
            .collect();
        page.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| !peptide_ids.contains(&&item["id"]))
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let cases = [
        (
            json!({ "categoryId": "nope", "compoundNames": ["A"], "testIds": [test] }),
            "unknown_category",
            "categoryId",
        ),
        (
            json!({ "categoryId": "peptides", "compoundNames": ["A"], "testIds": ["no-such-test"] }),
            "unknown_test",
            "testIds[0]",
        ),
        (
            json!({ "categoryId": "peptides", "compoundNames": ["A"], "testIds": [botanical_only] }),
            "test_not_in_category",
            "testIds[0]",
        ),
        (
            json!({ "categoryId": "peptides", "compoundNames": [], "testIds": [test] }),
            "invalid_request",
            "compoundNames",
        ),
        (
            json!({ "categoryId": "peptides", "compoundNames": ["A", "A"], "testIds": [test] }),
            "duplicate_compound",
            "compoundNames[1]",
        ),
        (
            json!({ "categoryId": "peptides", "compoundNames": ["A"], "testIds": [test], "conformitySamples": -1 }),
            "invalid_request",
            "conformitySamples",
        ),
        (
            json!({ "categoryId": "peptides", "compoundNames": ["A"], "testIds": [test], "turnaround": "yesterday" }),
            "unknown_turnaround",
            "turnaround",
        ),
    ];
    for (body, code, field) in cases {
        let answer = sandbox.post(&agent.key, "/quotes", &body, &[]).await;
        assert_error(&answer, 400, code);
        assert_eq!(answer.body["error"]["details"]["field"], field, "{body}");
    }
    let unknown_property =
        json!({ "categoryId": "peptides", "compoundNames": ["A"], "testIds": [test], "price": 1 });
    assert_error(
        &sandbox.post(&agent.key, "/quotes", &unknown_property, &[]).await,
        400,
        "invalid_body",
    );
    for limit in ["0", "201", "abc"] {
        assert_error(
            &sandbox.get(&agent.key, &format!("/catalog?limit={limit}")).await,
            400,
            "invalid_request",
        );
    }
    assert_error(
        &sandbox.get(&agent.key, "/catalog?cursor=garbage").await,
        400,
        "invalid_cursor",
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn invalid_order_requests_are_rejected_with_their_codes_and_create_nothing() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Careless Buyer", "all").await;
    let quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let quote_id = quote["id"].as_str().unwrap();
    let with = |change: Value| {
        let mut body = order_body(quote_id);
        for (key, value) in change.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    let cases = [
        (with(json!({ "confirm": false })), 400, "confirmation_required"),
        (
            with(json!({ "paymentMethod": "cash" })),
            400,
            "invalid_payment_method",
        ),
        (
            with(json!({ "paymentMethod": "chain_stablecoin" })),
            400,
            "payment_method_unavailable",
        ),
        (
            with(json!({ "paymentMethod": "stablecoin_erc20" })),
            400,
            "payment_method_unavailable",
        ),
        (with(json!({ "clientReference": "" })), 400, "invalid_request"),
        (
            with(json!({ "clientReference": "x".repeat(121) })),
            400,
            "invalid_request",
        ),
        (with(json!({ "notes": "x".repeat(4001) })), 400, "invalid_request"),
        (
            with(json!({ "expectedPayerAddress": "x".repeat(101) })),
            400,
            "invalid_request",
        ),
        (
            with(json!({ "billingAddressId": "not-a-uuid" })),
            400,
            "invalid_body",
        ),
        (
            with(json!({ "sampleMetadata": [{ "compoundName": "bpc-157", "lotNumber": "L1" }] })),
            400,
            "unknown_compound",
        ),
        (
            with(json!({ "sampleMetadata": [{ "compoundName": "BPC-157" }] })),
            400,
            "invalid_request",
        ),
        (
            with(
                json!({ "sampleMetadata": [{ "compoundName": "BPC-157", "lotNumber": "L1" }, { "compoundName": "BPC-157", "lotNumber": "L2" }] }),
            ),
            400,
            "duplicate_compound",
        ),
        (
            with(json!({ "sampleMetadata": [{ "compoundName": "BPC-157", "lotNumber": "x".repeat(201) }] })),
            400,
            "invalid_request",
        ),
        (
            with(json!({ "sampleMetadata": [{ "compoundName": "BPC-157", "color": "red" }] })),
            400,
            "invalid_body",
        ),
        (with(json!({ "price": 1 })), 400, "invalid_body"),
        (with(json!({ "confirm": "true" })), 400, "invalid_body"),
        (
            with(json!({ "quoteId": uuid::Uuid::new_v4().to_string() })),
            404,
            "quote_not_found",
        ),
    ];
    for (n, (body, status, code)) in cases.into_iter().enumerate() {
        let answer = place_order(&sandbox, &agent, &body, &format!("bad-order-{n:04}")).await;
        assert_error(&answer, status, code);
    }
    let no_key = sandbox
        .post(&agent.key, "/orders", &order_body(quote_id), &[])
        .await;
    assert_error(&no_key, 400, "idempotency_key_missing");
    let short_key = place_order(&sandbox, &agent, &order_body(quote_id), "short").await;
    assert_error(&short_key, 400, "idempotency_key_invalid");
    let long_key = place_order(&sandbox, &agent, &order_body(quote_id), &"k".repeat(256)).await;
    assert_error(&long_key, 400, "idempotency_key_invalid");
    let not_json = sandbox
        .call(
            Method::POST,
            "/orders",
            Some(&agent.key),
            None,
            &[
                ("Idempotency-Key", "not-json-0001"),
                ("content-type", "application/json"),
            ],
        )
        .await;
    assert_error(&not_json, 400, "invalid_body");

    assert_eq!(
        sandbox.get(&agent.key, "/orders").await.body["data"]
            .as_array()
            .unwrap()
            .len(),
        0,
        "nothing was created"
    );
    assert_eq!(
        sandbox.get(&agent.key, "/invoices").await.body["data"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let placed = place_order(&sandbox, &agent, &order_body(quote_id), "good-order-0001").await;
    assert_eq!(placed.status, 201, "the untouched quote still orders");
    sandbox.stop().await;
}

#[tokio::test]
async fn an_expired_quote_cannot_be_ordered() {
    // Quotes that expire as they are made: no wait for one to expire.
    let sandbox = Sandbox::start_with(|settings| settings.catalog.quote_ttl = Duration::ZERO).await;
    let agent = sandbox.customer("Late Buyer", "all").await;
    let quote = quote(&sandbox, &agent, &["Thymosin"]).await;
    assert_eq!(quote["expiresAt"], quote["createdAt"], "{quote}");
    let answer = place_order(
        &sandbox,
        &agent,
        &order_body(quote["id"].as_str().unwrap()),
        "late-order-0001",
    )
    .await;
    assert_error(&answer, 409, "quote_expired");
    sandbox.stop().await;
}

#[tokio::test]
async fn unknown_routes_and_public_documents_behave() {
    let sandbox = Sandbox::start().await;
    // Authentication comes before routing: an anonymous caller cannot tell what exists.
    let anonymous = sandbox.call(Method::GET, "/no-such-thing", None, None, &[]).await;
    assert_error(&anonymous, 401, "unauthenticated");
    let agent = sandbox.customer("Route Prober", "catalog:read").await;
    let missing = sandbox
        .call(Method::GET, "/no-such-thing", Some(&agent.key), None, &[])
        .await;
    assert_error(&missing, 404, "not_found");
    let ready = sandbox.call(Method::GET, "/api/ready", None, None, &[]).await;
    assert_eq!(ready.status, 200);
    let openapi = sandbox
        .call(Method::GET, "/api/v1/openapi.json", None, None, &[])
        .await;
    assert_eq!(openapi.status, 200);
    assert_eq!(openapi.body["openapi"], "3.1.0");
    assert_eq!(openapi.body["info"]["version"], "2026-07-17");
    assert_eq!(openapi.body["servers"][0]["url"], "/api/v1/agent");
    for path in [
        "/catalog",
        "/quotes",
        "/orders",
        "/orders/{reference}",
        "/invoices",
        "/invoices/{reference}",
        "/payments",
        "/payments/{reference}",
    ] {
        assert!(
            openapi.body["paths"].get(path).is_some(),
            "openapi documents {path}"
        );
    }
    sandbox.stop().await;
}

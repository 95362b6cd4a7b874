//! Spend envelopes across the mesh: staff set a key's caps with labctl, concurrent orders of the
//! key commit exactly up to the daily cap, refusals carry the remainders, a card payment that
//! expires unpaid releases its spend (and a fresh link commits it again), and a deployment that
//! refuses keys without an envelope refuses them.

use crate::card_checkout::expire_session;
use crate::support::quote;
use payments_svc::domain::spend::WithoutEnvelope;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Customer, Sandbox};

/// A customer with one key; returns the customer and the key's id.
pub async fn customer_with_key_id(sandbox: &Sandbox, name: &str) -> (Customer, String) {
    let email = format!("{}@example.com", name.to_lowercase().replace(' ', "."));
    let customer = sandbox
        .labctl(&["customers", "ensure", "--name", name, "--email", &email])
        .await
        .unwrap();
    let id = customer["id"].as_str().unwrap().to_owned();
    let key = sandbox
        .labctl(&[
            "keys",
            "create",
            "--customer",
            &id,
            "--name",
            "spender",
            "--scopes",
            "all",
        ])
        .await
        .unwrap();
    (
        Customer {
            id,
            key: key["key"].as_str().unwrap().to_owned(),
        },
        key["id"].as_str().unwrap().to_owned(),
    )
}

pub async fn set_envelope(
    sandbox: &Sandbox,
    customer: &Customer,
    key_id: &str,
    caps: &[(&str, i64)],
) -> Value {
    let mut args = vec![
        "payments".to_owned(),
        "set-envelope".to_owned(),
        "--customer".to_owned(),
        customer.id.clone(),
        "--key".to_owned(),
        key_id.to_owned(),
    ];
    for (flag, cents) in caps {
        args.push(format!("--{flag}"));
        args.push(cents.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sandbox.labctl(&args).await.unwrap()
}

async fn order(
    sandbox: &Sandbox,
    customer: &Customer,
    quote_id: &str,
    method: &str,
    key: &str,
) -> tests::Answer {
    let body = json!({ "quoteId": quote_id, "paymentMethod": method, "confirm": true });
    sandbox
        .post(&customer.key, "/orders", &body, &[("Idempotency-Key", key)])
        .await
}

#[tokio::test]
async fn fifty_concurrent_orders_of_one_key_commit_exactly_up_to_the_daily_cap() {
    // Exactly-once counting, not latency, is under test: the fifty commitments of one key
    // serialize on its envelope, which on a loaded 2-core machine can take longer than the
    // gateway's default 10 s request limit (speed is benchmarked, never timed in tests).
    let sandbox = Sandbox::start_with(|settings| {
        settings.gateway.front_door.request_timeout = std::time::Duration::from_secs(120);
    })
    .await;
    let (agent, key_id) = customer_with_key_id(&sandbox, "Busy Spender").await;
    let mut quotes = Vec::new();
    for _ in 0..50 {
        quotes.push(quote(&sandbox, &agent, &["BPC-157"]).await);
    }
    let price = quotes[0]["totalCents"].as_i64().unwrap();
    assert!(
        quotes
            .iter()
            .all(|quote| quote["totalCents"].as_i64() == Some(price))
    );
    let cap = 7 * price + price / 2;
    let set = set_envelope(&sandbox, &agent, &key_id, &[("daily-cents", cap)]).await;
    assert_eq!(set["dailyCapCents"], cap);
    assert_eq!(set["configured"], true);

    let attempts = quotes.iter().enumerate().map(|(index, quote)| {
        let key = format!("spend-burst-{index:04}");
        let quote_id = quote["id"].as_str().unwrap().to_owned();
        let sandbox = &sandbox;
        let agent = &agent;
        async move { order(sandbox, agent, &quote_id, "bank_invoice", &key).await }
    });
    let answers = futures::future::join_all(attempts).await;
    let placed = answers.iter().filter(|answer| answer.status == 201).count();
    let refused: Vec<_> = answers.iter().filter(|answer| answer.status == 403).collect();
    let statuses: Vec<u16> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(placed, 7, "exactly up to the cap: {statuses:?}");
    assert_eq!(
        refused.len(),
        43,
        "every other order is refused, none fails otherwise"
    );
    for answer in &refused {
        assert_eq!(answer.error_code(), "spend_limit_exceeded");
        assert_eq!(answer.body["error"]["details"]["cap"], "daily");
        assert_eq!(
            answer.body["error"]["details"]["remainingTodayCents"].as_i64(),
            Some(price / 2)
        );
    }

    let envelope = sandbox.get(&agent.key, "/spend-envelope").await;
    assert_eq!(envelope.status, 200, "{:?}", envelope.body);
    let envelope = &envelope.body["data"]["envelope"];
    assert_eq!(envelope["keyId"], key_id.as_str());
    assert_eq!(envelope["spentTodayCents"].as_i64(), Some(7 * price));
    assert_eq!(envelope["remainingTodayCents"].as_i64(), Some(price / 2));
    assert_eq!(envelope["monthlyCapCents"], Value::Null);
    assert!(
        envelope["dayResetsAt"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:00.000000Z")
    );

    // A per-order cap below the price refuses the next order whatever remains today.
    set_envelope(&sandbox, &agent, &key_id, &[("per-order-cents", price - 1)]).await;
    let fresh = quote(&sandbox, &agent, &["BPC-157"]).await;
    let over = order(
        &sandbox,
        &agent,
        fresh["id"].as_str().unwrap(),
        "bank_invoice",
        "spend-over-0001",
    )
    .await;
    assert_eq!(over.status, 403);
    assert_eq!(over.body["error"]["details"]["cap"], "per_order");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_card_payment_that_expires_unpaid_releases_its_spend_and_a_fresh_link_commits_it_again() {
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.jobs_interval = Duration::from_millis(200);
    })
    .await;
    let (agent, key_id) = customer_with_key_id(&sandbox, "Careful Spender").await;
    let first_quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let price = first_quote["totalCents"].as_i64().unwrap();
    set_envelope(&sandbox, &agent, &key_id, &[("monthly-cents", price)]).await;

    let first = order(
        &sandbox,
        &agent,
        first_quote["id"].as_str().unwrap(),
        "card_checkout",
        "spend-card-0001",
    )
    .await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    let second_quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let refused = order(
        &sandbox,
        &agent,
        second_quote["id"].as_str().unwrap(),
        "card_checkout",
        "spend-card-0002",
    )
    .await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.body["error"]["details"]["cap"], "monthly");
    assert_eq!(refused.body["error"]["details"]["remainingThisMonthCents"], 0);

    let hosted_url = first.body["data"]["order"]["payment"]["hostedUrl"]
        .as_str()
        .unwrap();
    expire_session(&sandbox, hosted_url).await;
    wait_for(
        "the expired payment's spend to be released",
        Duration::from_secs(20),
        || async {
            let envelope = sandbox.get(&agent.key, "/spend-envelope").await;
            (envelope.body["data"]["envelope"]["spentThisMonthCents"] == 0).then_some(())
        },
    )
    .await;
    let third_quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let placed = order(
        &sandbox,
        &agent,
        third_quote["id"].as_str().unwrap(),
        "card_checkout",
        "spend-card-0003",
    )
    .await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);

    // The first order's fresh link would commit its spend again: the cap is used by now.
    let prepare = sandbox
        .post(
            &agent.key,
            "/payments/prepare",
            &json!({ "orderReference": first.body["data"]["order"]["id"] }),
            &[("Idempotency-Key", "spend-prepare-0001")],
        )
        .await;
    assert_eq!(prepare.status, 403, "{:?}", prepare.body);
    assert_eq!(prepare.error_code(), "spend_limit_exceeded");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_deployment_that_refuses_keys_without_an_envelope_refuses_their_orders() {
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.spend_without_envelope = WithoutEnvelope::Refuse;
    })
    .await;
    let (agent, key_id) = customer_with_key_id(&sandbox, "Unbounded Spender").await;
    let envelope = sandbox.get(&agent.key, "/spend-envelope").await;
    assert_eq!(envelope.body["data"]["envelope"]["configured"], false);
    assert_eq!(envelope.body["data"]["envelope"]["withoutEnvelope"], "refuse");
    assert_eq!(envelope.body["data"]["envelope"]["remainingTodayCents"], 0);
    let first_quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let refused = order(
        &sandbox,
        &agent,
        first_quote["id"].as_str().unwrap(),
        "bank_invoice",
        "spend-none-0001",
    )
    .await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.body["error"]["details"]["cap"], "no_envelope");

    set_envelope(&sandbox, &agent, &key_id, &[("daily-cents", 10_000_000)]).await;
    let second_quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let placed = order(
        &sandbox,
        &agent,
        second_quote["id"].as_str().unwrap(),
        "bank_invoice",
        "spend-none-0002",
    )
    .await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);
    sandbox.stop().await;
}

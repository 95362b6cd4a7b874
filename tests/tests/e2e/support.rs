//! Helpers shared by the end-to-end flows: picking catalog items, quoting, ordering, reading streams.

use prost::Message;
use proto::events::EventEnvelope;
use redis::AsyncCommands;
use serde_json::{Value, json};
use tests::{Answer, Customer, Sandbox};

/// Two test ids quotable in `category`, cheapest first, with their prices.
pub async fn two_tests(sandbox: &Sandbox, customer: &Customer, category: &str) -> Vec<(String, i64)> {
    let page = sandbox
        .get(&customer.key, &format!("/catalog?category={category}&limit=200"))
        .await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    let mut tests: Vec<(String, i64)> = page.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["kind"] == "test")
        .map(|item| {
            (
                item["id"].as_str().unwrap().to_owned(),
                item["priceCents"].as_i64().unwrap(),
            )
        })
        .collect();
    tests.sort_by_key(|(_, price)| *price);
    assert!(tests.len() >= 2, "the category {category} has at least two tests");
    tests.truncate(2);
    tests
}

/// The body of a quote for `compounds` with `tests` (of [`two_tests`]) of the peptides category.
pub fn quote_body(tests: &[(String, i64)], compounds: &[&str]) -> Value {
    json!({
        "categoryId": "peptides",
        "compoundNames": compounds,
        "testIds": tests.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(),
    })
}

/// Creates a quote for `compounds` with two tests of the peptides category.
pub async fn quote(sandbox: &Sandbox, customer: &Customer, compounds: &[&str]) -> Value {
    let tests = two_tests(sandbox, customer, "peptides").await;
    let body = quote_body(&tests, compounds);
    let answer = sandbox.post(&customer.key, "/quotes", &body, &[]).await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    answer.body["data"]["quote"].clone()
}

/// The minimal valid order body for a quote on the bank rail.
pub fn order_body(quote_id: &str) -> Value {
    json!({ "quoteId": quote_id, "paymentMethod": "bank_invoice", "confirm": true })
}

/// Places an order with an idempotency key.
pub async fn place_order(sandbox: &Sandbox, customer: &Customer, body: &Value, key: &str) -> Answer {
    sandbox
        .post(&customer.key, "/orders", body, &[("Idempotency-Key", key)])
        .await
}

/// A bank-rail order placed by `customer` for one compound: (order id, invoice number, total in
/// cents as text, as labctl takes it).
pub async fn bank_order(sandbox: &Sandbox, customer: &Customer, key: &str) -> (String, String, String) {
    let quote = quote(sandbox, customer, &["BPC-157"]).await;
    let created = place_order(sandbox, customer, &order_body(quote["id"].as_str().unwrap()), key).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = &created.body["data"]["order"];
    (
        order["id"].as_str().unwrap().to_owned(),
        order["payment"]["invoiceNumber"].as_str().unwrap().to_owned(),
        order["totalCents"].as_i64().unwrap().to_string(),
    )
}

/// Every event on a domain stream of the sandbox, in stream order.
pub async fn stream_events(sandbox: &Sandbox, domain: &str) -> Vec<EventEnvelope> {
    let stream = platform::streams::stream_name(&sandbox.stream_prefix, domain);
    let client = redis::Client::open(sandbox.redis_url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let range: redis::streams::StreamRangeReply = connection.xrange_all(&stream).await.unwrap();
    range
        .ids
        .iter()
        .filter_map(|entry| match entry.map.get(platform::streams::ENVELOPE_FIELD) {
            Some(redis::Value::BulkString(bytes)) => EventEnvelope::decode(bytes.as_slice()).ok(),
            _ => None,
        })
        .collect()
}

/// Waits until the order has its prepaid label (status `label_generated`, `shipping` block) and
/// returns the order (REST JSON).
pub async fn wait_for_label(sandbox: &Sandbox, customer: &Customer, order_id: &str) -> Value {
    platform::testing::wait_for(
        "the order's label",
        std::time::Duration::from_secs(30),
        || async {
            let answer = sandbox.get(&customer.key, &format!("/orders/{order_id}")).await;
            let order = &answer.body["data"]["order"];
            (order["status"] == "label_generated" && order["shipping"].is_object()).then(|| order.clone())
        },
    )
    .await
}

/// The order without its label link (`shipping.labelUrl` and `labelUrlExpiresAt`), which every
/// read signs afresh: two answers of the same order compare equal through it.
pub fn without_label_link(order: &Value) -> Value {
    let mut order = order.clone();
    if let Some(shipping) = order.get_mut("shipping").and_then(Value::as_object_mut) {
        shipping.remove("labelUrl");
        shipping.remove("labelUrlExpiresAt");
    }
    order
}

/// The status a fresh bank order answers with: `invoice_sent`, or already `label_generated` when
/// shipping-svc bought the ship-first label before the answer was read (both start at
/// `invoice_sent`).
pub fn assert_fresh_bank_order(order: &Value) {
    let status = order["status"].as_str().unwrap_or_default();
    assert!(
        status == "invoice_sent" || status == "label_generated",
        "a fresh bank order is invoice_sent or label_generated: {order}"
    );
    assert_eq!(order["statusHistory"][0]["toStatus"], "invoice_sent", "{order}");
}

/// Asserts that every order view of the sandbox is what its normalized rows render to now: no
/// write path changed an order without refreshing its view (`orders.order_views`). Read in one
/// repeatable-read snapshot, so a write committing meanwhile cannot make it fail.
pub async fn assert_order_views_fresh(sandbox: &Sandbox) {
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await
        .unwrap();
    let stale = orders_svc::repo::view::stale_views(&mut tx).await.unwrap();
    tx.rollback().await.unwrap();
    pool.close().await;
    assert!(
        stale.is_empty(),
        "orders whose view a write path did not refresh: {stale:?}"
    );
}

/// Staff record a bank transfer of `amount_cents` for `invoice` (`labctl payments record`);
/// returns labctl's answer.
pub async fn record_bank_payment(
    sandbox: &Sandbox,
    invoice: &str,
    amount_cents: &str,
    reference: &str,
) -> Value {
    try_record_bank_payment(sandbox, invoice, amount_cents, reference)
        .await
        .unwrap()
}

/// [`record_bank_payment`], answering labctl's error instead of failing (to retry it).
pub async fn try_record_bank_payment(
    sandbox: &Sandbox,
    invoice: &str,
    amount_cents: &str,
    reference: &str,
) -> anyhow::Result<Value> {
    sandbox
        .labctl(&[
            "payments",
            "record",
            "--invoice",
            invoice,
            "--amount-cents",
            amount_cents,
            "--bank-reference",
            reference,
        ])
        .await
}

//! Events are trusted only from their owner, across the mesh: a `payment.confirmed` written to
//! the payments stream by another service is dead-lettered by orders-svc and does not pay the
//! order, while the same payment announced by payments-svc does. (The consumer's rule itself is
//! tested in `platform/tests/events/trust.rs`.)

use crate::support::{order_body, place_order, quote};
use platform::testing::events::{dead_letters, xadd};
use platform::testing::wait_for;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use redis::AsyncCommands;
use std::time::Duration;
use tests::Sandbox;
use uuid::Uuid;

/// A `payment.confirmed` for `order` (REST JSON) of `customer_id`, claiming `source`.
fn payment_confirmed(order: &serde_json::Value, customer_id: &str, source: &str) -> EventEnvelope {
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "payment.confirmed".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer_id.into(),
        source: source.into(),
        subject_id: Uuid::now_v7().to_string(),
        schema_version: 1,
        data: Some(Data::PaymentConfirmed(proto::payments::PaymentConfirmed {
            addon_id: None,
            payment_id: Uuid::now_v7().to_string(),
            invoice_id: text(&order["payment"]["invoiceId"]),
            invoice_number: text(&order["payment"]["invoiceNumber"]),
            order_id: text(&order["id"]),
            order_number: text(&order["orderNumber"]),
            rail: proto::common::PaymentMethod::BankInvoice as i32,
            legacy_rail: "bank_invoice".into(),
            amount_cents: order["totalCents"].as_i64().unwrap_or_default(),
            currency: "USD".into(),
            confirmed_at: platform::time::rfc3339(platform::time::now()),
            transaction_hash: None,
        })),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_forged_payment_confirmed_written_to_the_payments_stream_by_another_service_does_not_pay_the_order()
{
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Forgery Target", "all").await;
    let quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let created = place_order(
        &sandbox,
        &agent,
        &order_body(quote["id"].as_str().unwrap()),
        "forged-source-order-1",
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = created.body["data"]["order"].clone();
    let order_id = order["id"].as_str().unwrap().to_owned();
    crate::support::assert_fresh_bank_order(&order);

    let payments = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::PAYMENTS);
    let mut redis = redis::Client::open(sandbox.redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let forged = payment_confirmed(&order, &agent.id, "orders-svc");
    let forged_entry = xadd(&mut redis, &payments, &forged).await;

    let dead = platform::streams::dead_letter_stream(&payments);
    wait_for(
        "orders-svc to dead-letter the forged event",
        Duration::from_secs(20),
        || {
            let dead = dead.clone();
            let client = redis::Client::open(sandbox.redis_url.as_str()).unwrap();
            let forged_entry = forged_entry.clone();
            async move {
                let mut redis = client.get_multiplexed_async_connection().await.ok()?;
                dead_letters(&mut redis, &dead)
                    .await
                    .iter()
                    .any(|letter| {
                        letter.original_id == forged_entry && letter.group == platform::streams::GROUP_ORDERS
                    })
                    .then_some(())
            }
        },
    )
    .await;
    // The dead letter is written before the entry is acknowledged: give the ack its moment.
    let mut pending_count = usize::MAX;
    for _ in 0..50 {
        let pending: redis::streams::StreamPendingReply = redis
            .xpending(&payments, platform::streams::GROUP_ORDERS)
            .await
            .unwrap();
        pending_count = pending.count();
        if pending_count == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pending_count, 0, "the forged entry is settled, not retried");
    let now = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(
        now.body["data"]["order"]["payment"]["status"], "open",
        "the order is not paid"
    );

    // The same payment announced by its owner is applied: only the source made the difference.
    xadd(
        &mut redis,
        &payments,
        &payment_confirmed(&order, &agent.id, "payments-svc"),
    )
    .await;
    wait_for(
        "the genuine event to pay the order",
        Duration::from_secs(20),
        || async {
            let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
            // Ship-first: the label may have moved the order already; the payment block tells.
            (answer.body["data"]["order"]["payment"]["status"] == "paid").then_some(())
        },
    )
    .await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_payment_confirmed_written_to_redis_without_the_payments_key_pays_nothing_across_the_mesh() {
    use platform::testing::events::{signed_fields, xadd_unsigned};
    use prost::Message;
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Signature Target", "all").await;
    let quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let created = place_order(
        &sandbox,
        &agent,
        &order_body(quote["id"].as_str().unwrap()),
        "forged-signature-order-1",
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = created.body["data"]["order"].clone();
    let order_id = order["id"].as_str().unwrap().to_owned();
    let payments = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::PAYMENTS);
    let mut redis = redis::Client::open(sandbox.redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let confirmation = || payment_confirmed(&order, &agent.id, "payments-svc");
    let mut forged = Vec::new();
    // Unsigned, as anyone with write access to Redis can write it.
    forged.push(xadd_unsigned(&mut redis, &payments, &confirmation()).await);
    // Signed with another service's key (a compromised orders-svc).
    let by_orders = signed_fields(&payments, confirmation().encode_to_vec(), "orders-svc");
    forged.push(redis.xadd(&payments, "*", &by_orders).await.unwrap());
    // A genuinely signed confirmation of some payment, its envelope then altered.
    let mut tampered = signed_fields(&payments, confirmation().encode_to_vec(), "payments-svc");
    tampered[0].1 = confirmation().encode_to_vec();
    forged.push(redis.xadd(&payments, "*", &tampered).await.unwrap());
    // Genuinely signed by payments-svc, for another deployment's payments stream.
    let elsewhere = platform::streams::stream_name("another-deployment", platform::streams::PAYMENTS);
    let moved = signed_fields(&elsewhere, confirmation().encode_to_vec(), "payments-svc");
    forged.push(redis.xadd(&payments, "*", &moved).await.unwrap());

    let dead = platform::streams::dead_letter_stream(&payments);
    let letters = wait_for(
        "orders-svc to dead-letter the four forged entries",
        Duration::from_secs(20),
        || {
            let (dead, forged) = (dead.clone(), forged.clone());
            let client = redis::Client::open(sandbox.redis_url.as_str()).unwrap();
            async move {
                let mut redis = client.get_multiplexed_async_connection().await.ok()?;
                let letters: Vec<_> = dead_letters(&mut redis, &dead)
                    .await
                    .into_iter()
                    .filter(|letter| letter.group == platform::streams::GROUP_ORDERS)
                    .collect();
                forged
                    .iter()
                    .all(|entry| letters.iter().any(|letter| letter.original_id == *entry))
                    .then_some(letters)
            }
        },
    )
    .await;
    assert!(
        letters
            .iter()
            .all(|letter| letter.reason.starts_with("signature:")),
        "{letters:?}"
    );
    let now = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(
        now.body["data"]["order"]["payment"]["status"], "open",
        "the order is not paid"
    );
    let mut scrape = String::new();
    prometheus_client::encoding::text::encode(&mut scrape, platform::metrics::metrics().registry()).unwrap();
    for (reason, count) in [("unsigned", 1), ("wrong_signer", 1), ("bad_signature", 2)] {
        let line = format!(
            "stream_events_rejected_total{{stream=\"{payments}\",group=\"orders-svc\",reason=\"{reason}\"}} {count}"
        );
        assert!(scrape.contains(&line), "{line} missing from the scrape");
    }

    // The same confirmation as payments-svc's relay signs it pays the order.
    xadd(&mut redis, &payments, &confirmation()).await;
    wait_for(
        "the signed event to pay the order",
        Duration::from_secs(20),
        || async {
            let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
            (answer.body["data"]["order"]["payment"]["status"] == "paid").then_some(())
        },
    )
    .await;
    sandbox.stop().await;
}

//! Events are trusted only from their owner: an entry whose envelope claims a `source` other
//! than the service that owns the stream is dead-lettered, never applied and never retried —
//! through `platform`'s consumer directly, and across the whole mesh with a forged
//! `payment.confirmed`.

use crate::events_support::*;
use crate::support::{order_body, place_order, quote};
use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::testing::{unique_stream_prefix, wait_for};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use redis::AsyncCommands;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tests::Sandbox;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::test]
async fn an_event_claiming_a_source_that_does_not_own_its_stream_is_dead_lettered_and_never_applied() {
    let pool = pool_with_event_tables().await;
    let stream = platform::streams::stream_name(&unique_stream_prefix(), platform::streams::ORDERS);
    let mut redis = redis_connection().await;
    let forged = envelope_from("payments-svc");
    let unsigned = envelope_from("");
    let genuine = envelope_from("orders-svc");
    let forged_entry = xadd(&mut redis, &stream, &forged).await;
    let unsigned_entry = xadd(&mut redis, &stream, &unsigned).await;
    xadd(&mut redis, &stream, &genuine).await;

    let handler = Arc::new(CountingHandler::new(&pool));
    let mut settings = ConsumerSettings::new("trust-test", vec![stream.clone()])
        .with_timing(Duration::from_millis(200), Duration::from_millis(50));
    settings.max_deliveries = 2;
    let token = CancellationToken::new();
    let consumer = tokio::spawn(
        StreamConsumer::new(&platform::testing::redis_url(), settings, handler.clone()).run(token.clone()),
    );
    let dead = platform::streams::dead_letter_stream(&stream);
    let letters = wait_for(
        "both untrusted entries dead-lettered",
        Duration::from_secs(10),
        || {
            let dead = dead.clone();
            async move {
                let mut redis = redis_connection().await;
                let letters = dead_letters(&mut redis, &dead).await;
                (letters.len() == 2).then_some(letters)
            }
        },
    )
    .await;
    wait_for("the genuine event applied", Duration::from_secs(10), || async {
        (handler.applied().await == 1).then_some(())
    })
    .await;
    // Several reclaim rounds pass: nothing is retried, nothing else is dead-lettered.
    holds_for(
        "nothing pending and two dead letters",
        Duration::from_millis(800),
        || {
            let (stream, dead) = (stream.clone(), dead.clone());
            async move {
                let mut redis = redis_connection().await;
                pending_count(&mut redis, &stream, "trust-test").await == 0
                    && dead_letters(&mut redis, &dead).await.len() == 2
            }
        },
    )
    .await;
    token.cancel();
    consumer.await.unwrap();

    assert_eq!(letters[0].0, forged_entry);
    assert_eq!(letters[1].0, unsigned_entry);
    assert!(letters.iter().all(|(_, group, _)| group == "trust-test"));
    assert!(letters[0].2.contains("\"payments-svc\""), "{:?}", letters[0]);
    assert!(letters[0].2.contains("orders-svc"), "{:?}", letters[0]);
    assert_eq!(
        handler.invocations.load(Ordering::SeqCst),
        1,
        "the handler saw only the genuine event"
    );
    let applied: Vec<Uuid> = sqlx::query_scalar("SELECT event_id FROM eventtest.effects")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(applied, [Uuid::parse_str(&genuine.id).unwrap()]);
}

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
            payment_id: Uuid::now_v7().to_string(),
            invoice_id: text(&order["payment"]["invoiceId"]),
            invoice_number: text(&order["payment"]["invoiceNumber"]),
            order_id: text(&order["id"]),
            order_number: text(&order["orderNumber"]),
            rail: "bank_invoice".into(),
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
    assert_eq!(order["status"], "invoice_sent");

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
                    .any(|(id, group, _)| *id == forged_entry && group == platform::streams::GROUP_ORDERS)
                    .then_some(())
            }
        },
    )
    .await;
    let pending: redis::streams::StreamPendingReply = redis
        .xpending(&payments, platform::streams::GROUP_ORDERS)
        .await
        .unwrap();
    assert_eq!(pending.count(), 0, "the forged entry is settled, not retried");
    let now = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(
        now.body["data"]["order"]["status"], "invoice_sent",
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
            (answer.body["data"]["order"]["status"] == "paid").then_some(())
        },
    )
    .await;
    sandbox.stop().await;
}

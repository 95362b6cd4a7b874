//! The outbox relay moves payments events to the Redis stream `<prefix>:events:payments`.

use crate::helpers::{data, invoice_request, spawn_app};
use prost::Message;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use redis::AsyncCommands;
use redis::streams::StreamRangeReply;
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn the_outbox_relay_publishes_invoice_and_payment_events_on_the_payments_stream() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    app.record(&invoice.invoice_number, invoice.total_cents, "WIRE-RELAY")
        .await
        .unwrap();
    let stream = platform::streams::stream_name(&app.stream_prefix, platform::streams::PAYMENTS);
    let mut redis = redis::Client::open(app.redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();

    let entries = platform::testing::wait_for(
        "three events on the payments stream",
        Duration::from_secs(10),
        || {
            let mut redis = redis.clone();
            let stream = stream.clone();
            async move {
                let range: StreamRangeReply = redis.xrange_all(&stream).await.ok()?;
                (range.ids.len() >= 3).then_some(range.ids)
            }
        },
    )
    .await;

    assert_eq!(entries.len(), 3);
    let envelopes: Vec<EventEnvelope> = entries
        .iter()
        .map(|entry| {
            let bytes: Vec<u8> = entry
                .get(platform::streams::ENVELOPE_FIELD)
                .expect("envelope field");
            EventEnvelope::decode(bytes.as_slice()).expect("an encoded envelope")
        })
        .collect();
    let types: Vec<&str> = envelopes
        .iter()
        .map(|envelope| envelope.r#type.as_str())
        .collect();
    assert_eq!(types, ["invoice.created", "invoice.updated", "payment.confirmed"]);
    let type_fields: Vec<String> = entries
        .iter()
        .map(|entry| entry.get(platform::streams::TYPE_FIELD).unwrap())
        .collect();
    assert_eq!(type_fields, types);
    assert_eq!(
        envelopes,
        app.outbox().await,
        "the stream carries the outbox envelopes unchanged"
    );
    let Data::InvoiceCreated(created) = data(&envelopes[0]) else {
        panic!()
    };
    assert_eq!(created.invoice_number, invoice.invoice_number);
    assert!(envelopes.iter().all(|envelope| envelope.customer_id == customer.to_string() && envelope.source == "payments-svc"));
    // The relay adds to the stream first and marks the rows published in its next statement:
    // the stream can show an entry a moment before its row is marked.
    platform::testing::wait_for(
        "every outbox row marked published",
        Duration::from_secs(10),
        || async {
            (platform::testing::events::unpublished(&app.pool, payments_svc::SCHEMA).await == 0).then_some(())
        },
    )
    .await;
    let _: () = redis.del(&stream).await.unwrap();
}

//! The orders-stream consumer: order.created marks the quote consumed, exactly once, and only
//! for the quote's own customer.

use crate::helpers::{TestApp, quote_request, sample_catalog, spawn_app};
use chrono::{DateTime, Utc};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::OrderCreated;
use std::time::Duration;
use uuid::Uuid;

fn order_created(event_id: Uuid, customer_id: Uuid, quote_id: &str, order_id: Uuid) -> EventEnvelope {
    EventEnvelope {
        id: event_id.to_string(),
        r#type: "order.created".into(),
        occurred_at: "2026-07-17T10:00:00.000000Z".into(),
        customer_id: customer_id.to_string(),
        source: "orders-svc".into(),
        subject_id: order_id.to_string(),
        schema_version: 1,
        data: Some(Data::OrderCreated(OrderCreated {
            order_id: order_id.to_string(),
            order_number: "LAB-000001".into(),
            status: proto::common::OrderStatus::InvoiceSent as i32,
            quote_id: quote_id.to_owned(),
            created_at: "2026-07-17T10:00:00.000000Z".into(),
            ..Default::default()
        })),
        ..Default::default()
    }
}

async fn publish(app: &TestApp, envelope: &EventEnvelope) {
    let stream =
        platform::streams::stream_name(&app.settings.common.stream_prefix, platform::streams::ORDERS);
    let client = redis::Client::open(app.settings.common.redis_url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    platform::testing::events::xadd(&mut connection, &stream, envelope).await;
}

async fn processed(app: &TestApp, event_id: Uuid) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM catalog.processed_events WHERE consumer = 'catalog-svc' AND event_id = $1",
    )
    .bind(event_id)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

async fn consumption(app: &TestApp, quote_id: &str) -> (Option<DateTime<Utc>>, Option<Uuid>) {
    sqlx::query_as("SELECT consumed_at, consumed_by_order_id FROM catalog.quotes WHERE id = $1")
        .bind(Uuid::parse_str(quote_id).unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn order_created_marks_the_quote_consumed_exactly_once() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let quote = app
        .create_quote(quote_request("potency", &["A"], &["identity-ms"]))
        .await
        .unwrap();
    let untouched = app
        .create_quote(quote_request("potency", &["B"], &["identity-ms"]))
        .await
        .unwrap();
    assert_eq!(consumption(&app, &quote.id).await, (None, None));

    let event_id = Uuid::now_v7();
    let order_id = Uuid::new_v4();
    let envelope = order_created(event_id, app.customer_id, &quote.id, order_id);
    publish(&app, &envelope).await;
    publish(&app, &envelope).await;
    // Then a later order for the same quote, and one that names it from another customer.
    let later = order_created(Uuid::now_v7(), app.customer_id, &quote.id, Uuid::new_v4());
    let foreign_id = Uuid::now_v7();
    let foreign = order_created(foreign_id, Uuid::new_v4(), &untouched.id, Uuid::new_v4());
    publish(&app, &later).await;
    publish(&app, &foreign).await;

    // One consumer reads the stream in order: once the last entry is processed, so are the others.
    platform::testing::wait_for(
        "the last event to be processed",
        Duration::from_secs(10),
        || async { (processed(&app, foreign_id).await == 1).then_some(()) },
    )
    .await;
    assert_eq!(processed(&app, event_id).await, 1);
    let (consumed_at, consumed_by) = consumption(&app, &quote.id).await;
    assert_eq!(consumed_by, Some(order_id));
    assert_eq!(
        consumed_at.map(|time| time.to_rfc3339()),
        Some("2026-07-17T10:00:00+00:00".to_owned())
    );
    assert_eq!(consumption(&app, &untouched.id).await, (None, None));

    // GetQuote still answers for a consumed quote (orders-svc enforces one order per quote).
    assert_eq!(
        app.get_quote_as(&app.customer_token(), &quote.id).await.unwrap(),
        quote
    );
}

//! The order.created backstop: the consumer issues an order's invoice exactly once.

use crate::helpers::{TestApp, data, invoice_request_for, spawn_app};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::{OrderCreated, OrderEventLine};
use redis::AsyncCommands;
use redis::streams::StreamInfoGroupsReply;
use std::time::Duration;
use uuid::Uuid;

fn order_created(customer: Uuid, order_id: Uuid, total: i64, line_amounts: &[i64]) -> EventEnvelope {
    let lines = line_amounts
        .iter()
        .enumerate()
        .map(|(index, amount)| OrderEventLine {
            line_number: index as i32 + 1,
            compound_name: format!("Compound {}", index + 1),
            lot_number: None,
            item_ids: vec!["hplc-potency".into(), "heavy-metals".into()],
            amount_cents: *amount,
        })
        .collect();
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "order.created".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer.to_string(),
        source: "orders-svc".into(),
        subject_id: order_id.to_string(),
        traceparent: String::new(),
        tracestate: String::new(),
        schema_version: 1,
        data: Some(Data::OrderCreated(OrderCreated {
            order_id: order_id.to_string(),
            order_number: "ORD-2026-000123".into(),
            status: proto::common::OrderStatus::InvoiceSent as i32,
            payment_method: proto::common::PaymentMethod::BankInvoice as i32,
            currency: "USD".into(),
            total_cents: total,
            lines,
            created_at: platform::time::rfc3339(platform::time::now()),
            ..Default::default()
        })),
    }
}

/// Appends an envelope to the orders stream and returns the entry id.
pub async fn publish(app: &TestApp, envelope: &EventEnvelope) -> String {
    let stream = platform::streams::stream_name(&app.stream_prefix, platform::streams::ORDERS);
    let mut redis = redis::Client::open(app.redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    platform::testing::events::xadd(&mut redis, &stream, envelope).await
}

/// Waits until the payments-svc group has acknowledged everything up to `entry`.
pub async fn wait_until_consumed(app: &TestApp, entry: &str) {
    let stream = platform::streams::stream_name(&app.stream_prefix, platform::streams::ORDERS);
    let redis = redis::Client::open(app.redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    platform::testing::wait_for(
        "the consumer to acknowledge the entries",
        Duration::from_secs(10),
        || {
            let mut redis = redis.clone();
            let stream = stream.clone();
            async move {
                let groups: StreamInfoGroupsReply = redis.xinfo_groups(&stream).await.ok()?;
                let group = groups
                    .groups
                    .into_iter()
                    .find(|group| group.name == platform::streams::GROUP_PAYMENTS)?;
                (group.last_delivered_id == entry && group.pending == 0).then_some(())
            }
        },
    )
    .await;
}

async fn invoices_of(app: &TestApp, order_id: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM payments.invoices WHERE order_id = $1")
        .bind(order_id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_order_created_event_delivered_twice_issues_one_itemized_invoice() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let order_id = Uuid::now_v7();
    let event = order_created(customer, order_id, 30_000, &[10_000, 20_000]);

    publish(&app, &event).await;
    let second = publish(&app, &event).await;
    wait_until_consumed(&app, &second).await;

    assert_eq!(invoices_of(&app, order_id).await, 1);
    let invoice = app.get_invoice(customer, &order_id.to_string()).await.unwrap();
    assert_eq!(
        (
            invoice.order_number.as_str(),
            invoice.total_cents,
            invoice.status().as_str()
        ),
        ("ORD-2026-000123", 30_000, "open")
    );
    let descriptions: Vec<&str> = invoice
        .lines
        .iter()
        .map(|line| line.description.as_str())
        .collect();
    assert_eq!(descriptions, ["Compound 1: 2 analyses", "Compound 2: 2 analyses"]);
    assert!(
        invoice
            .lines
            .iter()
            .all(|line| line.quantity == 1 && line.unit_price_cents == line.amount_cents)
    );
    assert!(invoice.bank_instructions.is_some());
    let created = app.events_of("invoice.created").await;
    assert_eq!(created.len(), 1);
    let Data::InvoiceCreated(payload) = data(&created[0]) else {
        panic!()
    };
    assert_eq!(payload.order_id, order_id.to_string());
    let processed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payments.processed_events WHERE consumer = 'payments-svc' AND event_id = $1",
    )
    .bind(Uuid::parse_str(&event.id).unwrap())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(processed, 1);

    let replayed_with_new_id = EventEnvelope {
        id: Uuid::now_v7().to_string(),
        ..event
    };
    let third = publish(&app, &replayed_with_new_id).await;
    wait_until_consumed(&app, &third).await;
    assert_eq!(invoices_of(&app, order_id).await, 1);
    assert_eq!(app.events_of("invoice.created").await.len(), 1);
}

#[tokio::test]
async fn an_order_total_beyond_its_lines_becomes_one_order_line() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let order_id = Uuid::now_v7();

    let entry = publish(
        &app,
        &order_created(customer, order_id, 34_500, &[10_000, 20_000]),
    )
    .await;
    wait_until_consumed(&app, &entry).await;

    let invoice = app.get_invoice(customer, &order_id.to_string()).await.unwrap();
    assert_eq!(invoice.total_cents, 34_500);
    assert_eq!(invoice.lines.len(), 1);
    assert_eq!(invoice.lines[0].description, "Laboratory order ORD-2026-000123");
    assert_eq!(
        (invoice.lines[0].quantity, invoice.lines[0].amount_cents),
        (1, 34_500)
    );
}

#[tokio::test]
async fn the_backstop_leaves_an_invoice_created_by_orders_svc_untouched() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let order_id = Uuid::now_v7();
    let issued = app
        .create_invoice(customer, invoice_request_for(order_id, 30_000))
        .await;

    let entry = publish(&app, &order_created(customer, order_id, 30_000, &[30_000])).await;
    wait_until_consumed(&app, &entry).await;

    assert_eq!(
        app.get_invoice(customer, &order_id.to_string()).await.unwrap(),
        issued
    );
    assert_eq!(app.events_of("invoice.created").await.len(), 1);
}

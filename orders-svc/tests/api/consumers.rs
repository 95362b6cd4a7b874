//! The payments-stream consumer (group `orders-svc`): payment.confirmed moves an order to paid
//! exactly once, even when redelivered or reclaimed from a consumer that died before `XACK`;
//! invoice events keep the payment block current.

use crate::helpers::*;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::Order;
use proto::payments::{InvoiceCreated, InvoiceUpdated, PaymentConfirmed};
use redis::AsyncCommands;
use redis::streams::StreamInfoGroupsReply;
use std::time::Duration;
use uuid::Uuid;

pub(crate) fn envelope(customer_id: &str, data: Data, event_type: &str) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: event_type.into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer_id.into(),
        source: "payments-svc".into(),
        subject_id: Uuid::now_v7().to_string(),
        schema_version: 1,
        data: Some(data),
        ..Default::default()
    }
}

fn payment_confirmed(order: &Order, customer_id: &str) -> EventEnvelope {
    let payment = order.payment.clone().unwrap_or_default();
    let data = PaymentConfirmed {
        addon_id: None,
        legacy_rail: String::new(),
        payment_id: Uuid::now_v7().to_string(),
        invoice_id: payment.invoice_id,
        invoice_number: payment.invoice_number,
        order_id: order.id.clone(),
        order_number: order.order_number.clone(),
        rail: proto::common::PaymentMethod::BankInvoice as i32,
        amount_cents: order.total_cents,
        currency: "USD".into(),
        confirmed_at: platform::time::rfc3339(platform::time::now()),
        transaction_hash: None,
    };
    envelope(customer_id, Data::PaymentConfirmed(data), "payment.confirmed")
}

/// The `orders-svc` group's view of the payments stream: (last delivered id, pending count).
async fn group_state(app: &TestApp) -> Option<(String, usize)> {
    let mut redis = redis_connection().await;
    let reply: StreamInfoGroupsReply = redis
        .xinfo_groups(app.stream(platform::streams::PAYMENTS))
        .await
        .ok()?;
    let group = reply
        .groups
        .into_iter()
        .find(|group| group.name == platform::streams::GROUP_ORDERS)?;
    Some((group.last_delivered_id, group.pending))
}

/// Waits until the group delivered `entry_id` and acknowledged everything.
pub(crate) async fn wait_until_consumed(app: &TestApp, entry_id: &str) {
    platform::testing::wait_for(
        "the consumer to acknowledge the entry",
        Duration::from_secs(15),
        || async {
            let (last, pending) = group_state(app).await?;
            (last == entry_id && pending == 0).then_some(())
        },
    )
    .await;
}

async fn history_reasons(app: &TestApp, order_id: &str) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT from_status, to_status, reason FROM orders.order_status_history WHERE order_id = $1::text::uuid ORDER BY id",
    )
    .bind(order_id)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_payment_confirmed_event_delivered_twice_moves_the_order_to_paid_once() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let event = payment_confirmed(&order, &order.customer_id);
    let first = app.publish_payment_event(&event).await;
    wait_until_consumed(&app, &first).await;
    let paid = app.get_order(&order.id).await.unwrap();
    // Put the order back where the event applies, so that a second application would show.
    sqlx::query("UPDATE orders.orders SET status = 'overdue' WHERE id = $1::text::uuid")
        .bind(&order.id)
        .execute(&app.pool)
        .await
        .unwrap();
    let second = app.publish_payment_event(&event).await;
    wait_until_consumed(&app, &second).await;
    assert_eq!(
        app.get_order(&order.id).await.unwrap().status().as_str(),
        "overdue",
        "the redelivery changed nothing"
    );

    assert_eq!(paid.status().as_str(), "paid");
    assert_eq!(paid.status_history.len(), 2);
    let change = &paid.status_history[1];
    assert_eq!(
        (
            change.from_status().as_str(),
            change.to_status().as_str(),
            change.reason.as_str()
        ),
        ("invoice_sent", "paid", "payment.confirmed")
    );
    let payment = paid.payment.unwrap();
    assert_eq!((payment.status().as_str(), payment.amount_due_cents), ("paid", 0));

    let changes = app.outbox_events_of("order.status_changed").await;
    assert_eq!(changes.len(), 1);
    let Some(Data::OrderStatusChanged(data)) = &changes[0].data else {
        panic!("order.status_changed payload")
    };
    assert_eq!(
        (
            data.from_status().as_str(),
            data.to_status().as_str(),
            data.reason.as_str()
        ),
        ("invoice_sent", "paid", "payment.confirmed")
    );
    assert_eq!(
        (data.order_id.as_str(), data.order_number.as_str()),
        (order.id.as_str(), order.order_number.as_str())
    );
    assert!(!data.changed_at.is_empty());
    assert_eq!(changes[0].customer_id, order.customer_id);
    let processed: Vec<Uuid> = sqlx::query_scalar("SELECT event_id FROM orders.processed_events")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(processed, [event.id.parse::<Uuid>().unwrap()]);
}

#[tokio::test]
async fn a_payment_confirmed_event_of_another_customer_changes_nothing() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let entry = app
        .publish_payment_event(&payment_confirmed(&order, &Uuid::now_v7().to_string()))
        .await;
    wait_until_consumed(&app, &entry).await;
    let unchanged = app.get_order(&order.id).await.unwrap();
    assert_eq!(unchanged, order);
    assert!(app.outbox_events_of("order.status_changed").await.is_empty());
}

#[tokio::test]
async fn a_payment_confirmed_for_an_order_past_payment_updates_only_the_payment_block() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    // Ship-first: the label was generated before the money landed.
    sqlx::query("UPDATE orders.orders SET status = 'label_generated' WHERE id = $1::text::uuid")
        .bind(&order.id)
        .execute(&app.pool)
        .await
        .unwrap();
    let entry = app
        .publish_payment_event(&payment_confirmed(&order, &order.customer_id))
        .await;
    wait_until_consumed(&app, &entry).await;
    let after = app.get_order(&order.id).await.unwrap();
    assert_eq!(after.status().as_str(), "label_generated");
    assert_eq!(after.payment.unwrap().status().as_str(), "paid");
    assert_eq!(history_reasons(&app, &order.id).await.len(), 1);
    assert!(app.outbox_events_of("order.status_changed").await.is_empty());
}

#[tokio::test]
async fn invoice_events_fill_a_missing_payment_block_and_update_its_status() {
    let app = spawn_app().await;
    let quote = app.quote();
    app.peers.payments_failing(true);
    app.create_order(&new_key(), order_request(&quote.id))
        .await
        .unwrap_err();
    let token = app.default_token();
    let order = app
        .list_orders_as(&token, Default::default())
        .await
        .unwrap()
        .orders
        .remove(0);
    assert_eq!(order.payment, None);

    let created = InvoiceCreated {
        addon_id: None,
        legacy_payment_method: String::new(),
        legacy_status: String::new(),
        invoice_id: Uuid::now_v7().to_string(),
        invoice_number: "INV-2026-424242".into(),
        order_id: order.id.clone(),
        order_number: order.order_number.clone(),
        status: proto::common::InvoiceStatus::Open as i32,
        payment_method: proto::common::PaymentMethod::BankInvoice as i32,
        currency: "USD".into(),
        total_cents: order.total_cents,
        amount_due_cents: order.total_cents,
        issued_at: platform::time::rfc3339(platform::time::now()),
        due_at: "2026-08-16T00:00:00Z".into(),
    };
    let entry = app
        .publish_payment_event(&envelope(
            &order.customer_id,
            Data::InvoiceCreated(created.clone()),
            "invoice.created",
        ))
        .await;
    wait_until_consumed(&app, &entry).await;
    let with_invoice = app
        .get_order("INV-2026-424242")
        .await
        .expect("found by invoice number");
    let payment = with_invoice.payment.unwrap();
    assert_eq!(
        (
            payment.invoice_id.as_str(),
            payment.status().as_str(),
            payment.amount_due_cents
        ),
        (created.invoice_id.as_str(), "open", 65_000)
    );
    assert_eq!(payment.due_at.unwrap().seconds, 1_786_838_400);

    let updated = InvoiceUpdated {
        addon_id: None,
        legacy_previous_status: String::new(),
        legacy_status: String::new(),
        invoice_id: created.invoice_id.clone(),
        invoice_number: created.invoice_number.clone(),
        order_id: order.id.clone(),
        order_number: order.order_number.clone(),
        status: proto::common::InvoiceStatus::Void as i32,
        previous_status: proto::common::InvoiceStatus::Open as i32,
        amount_paid_cents: 0,
        amount_due_cents: 0,
        updated_at: platform::time::rfc3339(platform::time::now()),
    };
    let entry = app
        .publish_payment_event(&envelope(
            &order.customer_id,
            Data::InvoiceUpdated(updated),
            "invoice.updated",
        ))
        .await;
    wait_until_consumed(&app, &entry).await;
    let payment = app.get_order(&order.id).await.unwrap().payment.unwrap();
    assert_eq!((payment.status().as_str(), payment.amount_due_cents), ("void", 0));
    assert_eq!(
        app.get_order(&order.id).await.unwrap().status().as_str(),
        "invoice_sent",
        "invoice events never move the status"
    );
}

#[tokio::test]
async fn an_entry_left_unacknowledged_by_a_dead_consumer_is_reclaimed_without_being_applied_twice() {
    // The first consumer commits its transaction but never acknowledges, as if it died before XACK.
    let mut dying = Tuning::default();
    dying.consumer.acknowledge = false;
    dying.consumer.reclaim_idle = Duration::from_secs(600);
    let mut first = spawn_app_with(dying).await;
    let order = first.place_order().await;
    let entry = first
        .publish_payment_event(&payment_confirmed(&order, &order.customer_id))
        .await;
    platform::testing::wait_for(
        "the first consumer to apply the payment",
        Duration::from_secs(15),
        || async {
            let order = first.get_order(&order.id).await.ok()?;
            (order.status().as_str() == "paid").then_some(())
        },
    )
    .await;
    assert_eq!(
        group_state(&first).await,
        Some((entry.clone(), 1)),
        "applied but still pending"
    );
    first.stop().await;

    // A live consumer of the same group reclaims the idle entry, skips it and acknowledges it.
    let mut live = Tuning::default();
    live.consumer.reclaim_idle = Duration::from_millis(300);
    let second = first.sibling(live).await;
    wait_until_consumed(&second, &entry).await;

    assert_eq!(
        second.get_order(&order.id).await.unwrap().status().as_str(),
        "paid"
    );
    let reasons = history_reasons(&second, &order.id).await;
    assert_eq!(reasons.len(), 2, "one transition: {reasons:?}");
    assert_eq!(second.outbox_events_of("order.status_changed").await.len(), 1);
    let processed: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.processed_events")
        .fetch_one(&second.pool)
        .await
        .unwrap();
    assert_eq!(processed, 1);
}

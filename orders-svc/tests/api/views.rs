//! GetOrderView, the read model: the order's document follows every change in the same
//! transaction (creation, payment events, shipping events), keeps the shipping block from
//! `shipment.*` events with a label URL signed at read time, finds the order by every reference
//! (its tracking number included) and never another customer's.

use crate::helpers::*;
use platform::error::ErrorCode;
use platform::label_links::{DEVELOPMENT_KEY, LabelLinks};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::Order;
use proto::payments::PaymentConfirmed;
use proto::shipping::{
    Address, Label, PackingStep, ShipmentLabelCreated, ShipmentLabelVoided, ShipmentUpdated,
};
use serde_json::Value;
use std::time::Duration;
use uuid::Uuid;

fn envelope(order: &Order, source: &str, event_type: &str, data: Data) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: event_type.into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: order.customer_id.clone(),
        source: source.into(),
        subject_id: Uuid::now_v7().to_string(),
        schema_version: 1,
        data: Some(data),
        ..Default::default()
    }
}

fn label_created(order: &Order, shipment_id: Uuid, tracking: &str) -> EventEnvelope {
    let label = Label {
        shipment_id: shipment_id.to_string(),
        tracking_number: tracking.to_owned(),
        tracking_url: format!("https://carrier.example/track/{tracking}"),
        carrier_code: "ups".into(),
        service_code: "ups_ground".into(),
        ship_to: Some(Address {
            name: "Meridian Analytical Laboratories".into(),
            city: "Madison".into(),
            ..Address::default()
        }),
        packing_steps: vec![PackingStep {
            step: 1,
            line_number: 1,
            sample_reference: format!("{}-L1", order.order_number),
            test_ids: vec!["hplc-purity".into()],
            ..PackingStep::default()
        }],
        ..Label::default()
    };
    let data = ShipmentLabelCreated {
        legacy_status: String::new(),
        shipment_id: shipment_id.to_string(),
        order_id: order.id.clone(),
        order_number: order.order_number.clone(),
        tracking_number: tracking.to_owned(),
        carrier_code: "ups".into(),
        service_code: "ups_ground".into(),
        created_at: platform::time::rfc3339(platform::time::now()),
        label: Some(Box::new(label)),
        status: proto::common::ShipmentStatus::PreTransit as i32,
    };
    envelope(
        order,
        "shipping-svc",
        "shipment.label_created",
        Data::ShipmentLabelCreated(data),
    )
}

fn scanned(
    order: &Order,
    shipment_id: Uuid,
    tracking: &str,
    status: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> EventEnvelope {
    let data = ShipmentUpdated {
        legacy_status: status.to_owned(),
        shipment_id: shipment_id.to_string(),
        order_id: order.id.clone(),
        order_number: order.order_number.clone(),
        tracking_number: tracking.to_owned(),
        status_code: "I".into(),
        description: "scan".into(),
        occurred_at: platform::time::rfc3339(at),
        location: "Chicago, IL, US".into(),
        status: proto::common::ShipmentStatus::parse(status).map_or(0, |status| status as i32),
        pickup_confirmation_number: None,
    };
    envelope(
        order,
        "shipping-svc",
        "shipment.updated",
        Data::ShipmentUpdated(data),
    )
}

/// Waits until the default customer's view of `reference` satisfies `done`.
async fn view_when(app: &TestApp, reference: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    platform::testing::wait_for(what, Duration::from_secs(20), || async {
        let view = app.get_order_view(reference).await.ok()?;
        done(&view).then_some(view)
    })
    .await
}

#[tokio::test]
async fn the_view_of_a_new_order_is_its_rest_shape_found_by_every_reference_and_only_by_its_customer() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let invoice_number = order.payment.as_ref().unwrap().invoice_number.clone();
    for reference in [
        order.id.as_str(),
        order.order_number.as_str(),
        invoice_number.as_str(),
    ] {
        let view = app.get_order_view(reference).await.unwrap();
        assert_eq!(view["id"], order.id.as_str(), "{reference}");
        assert_eq!(view["orderNumber"], order.order_number.as_str());
        assert_eq!(view["status"], "invoice_sent");
        assert_eq!(view["paymentState"], "unpaid");
        assert_eq!(view["payment"]["invoiceNumber"], invoice_number.as_str());
        assert_eq!(view["related"]["invoice"], format!("/invoices/{invoice_number}"));
        assert_eq!(view["shipping"], serde_json::json!({ "status": "label_pending" }));
        assert_eq!(view["statusHistory"][0]["fromStatus"], Value::Null);
        assert_eq!(view["totalCents"], order.total_cents);
    }
    let stranger = app.token(Uuid::now_v7(), &ORDER_SCOPES, None);
    for reference in [
        order.id.as_str(),
        order.order_number.as_str(),
        "1Z999AA10123456784",
    ] {
        let status = app.get_order_view_as(&stranger, reference).await.unwrap_err();
        assert_eq!(error_of(&status).code, ErrorCode::NotFound, "{reference}");
    }
}

#[tokio::test]
async fn the_view_follows_payment_and_shipping_events_and_signs_the_label_url_at_read_time() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let payment = order.payment.clone().unwrap();
    let confirmed = PaymentConfirmed {
        legacy_rail: String::new(),
        payment_id: Uuid::now_v7().to_string(),
        invoice_id: payment.invoice_id.clone(),
        invoice_number: payment.invoice_number.clone(),
        order_id: order.id.clone(),
        order_number: order.order_number.clone(),
        rail: proto::common::PaymentMethod::BankInvoice as i32,
        amount_cents: order.total_cents,
        currency: "USD".into(),
        confirmed_at: platform::time::rfc3339(platform::time::now()),
        transaction_hash: None,
    };
    app.publish_payment_event(&envelope(
        &order,
        "payments-svc",
        "payment.confirmed",
        Data::PaymentConfirmed(confirmed),
    ))
    .await;
    let paid = view_when(&app, &order.id, "the paid view", |view| view["status"] == "paid").await;
    assert_eq!(paid["paymentState"], "paid");
    assert_eq!(paid["payment"]["status"], "paid");
    assert_eq!(paid["statusHistory"][1]["reason"], "payment.confirmed");

    let shipment_id = Uuid::now_v7();
    let tracking = "1ZVIEW0000000001";
    app.publish_event(
        platform::streams::SHIPPING,
        &label_created(&order, shipment_id, tracking),
    )
    .await;
    let labelled = view_when(&app, &order.id, "the labelled view", |view| {
        view["status"] == "label_generated"
    })
    .await;
    let shipping = &labelled["shipping"];
    assert_eq!(shipping["shipmentId"], shipment_id.to_string());
    assert_eq!(shipping["status"], "pre_transit");
    assert_eq!(shipping["trackingNumber"], tracking);
    assert_eq!(shipping["shipTo"]["city"], "Madison");
    assert_eq!(shipping["shipFrom"]["city"], "");
    assert_eq!(shipping["packingSteps"][0]["testIds"][0], "hplc-purity");
    // The URL is shipping-svc's: signed with its (development) key, expiring on a boundary.
    let url = shipping["labelUrl"].as_str().unwrap();
    let expires_at = chrono::DateTime::parse_from_rfc3339(shipping["labelUrlExpiresAt"].as_str().unwrap())
        .unwrap()
        .timestamp();
    let signature = url.rsplit("signature=").next().unwrap();
    let links = LabelLinks::new(
        DEVELOPMENT_KEY.as_bytes().to_vec(),
        "http://127.0.0.1:8080",
        Duration::from_secs(3600),
    );
    assert!(links.verify(shipment_id, expires_at, signature), "{url}");
    assert!(url.contains(&format!("expires={expires_at}&")));
    // The tracking number finds the order too.
    assert_eq!(
        app.get_order_view(tracking).await.unwrap()["id"],
        order.id.as_str()
    );

    let now = platform::time::now();
    app.publish_event(
        platform::streams::SHIPPING,
        &scanned(&order, shipment_id, tracking, "out_for_delivery", now),
    )
    .await;
    let moving = view_when(&app, &order.id, "the in-transit view", |view| {
        view["status"] == "in_transit"
    })
    .await;
    assert_eq!(moving["shipping"]["status"], "out_for_delivery");
    // An older scan, delivered late, moves neither the order nor its shipping status.
    app.publish_event(
        platform::streams::SHIPPING,
        &scanned(
            &order,
            shipment_id,
            tracking,
            "in_transit",
            now - chrono::Duration::hours(1),
        ),
    )
    .await;
    let delivered_at = now + chrono::Duration::seconds(5);
    app.publish_event(
        platform::streams::SHIPPING,
        &scanned(&order, shipment_id, tracking, "delivered", delivered_at),
    )
    .await;
    let delivered = view_when(&app, &order.id, "the delivered view", |view| {
        view["shipping"]["status"] == "delivered"
    })
    .await;
    assert_eq!(delivered["status"], "in_transit");
    let history: Vec<&str> = delivered["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["toStatus"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["invoice_sent", "paid", "label_generated", "in_transit"]);
    // The view is the order the normalized tables answer, field for field.
    let normalized = app.get_order(&order.id).await.unwrap();
    assert_eq!(
        delivered["updatedAt"],
        platform::time::timestamp_rfc3339(normalized.updated_at.as_ref()).unwrap()
    );
    assert_eq!(
        delivered["statusHistory"].as_array().unwrap().len(),
        normalized.status_history.len()
    );
}

#[tokio::test]
async fn an_order_without_a_view_is_rendered_by_its_first_read() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    sqlx::query("DELETE FROM orders.order_views")
        .execute(&app.pool)
        .await
        .unwrap();
    let view = app.get_order_view(&order.order_number).await.unwrap();
    assert_eq!(view["id"], order.id.as_str());
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.order_views")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1);
}

#[tokio::test]
async fn the_stale_view_check_finds_an_order_changed_without_refreshing_its_view() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let mut conn = app.pool.acquire().await.unwrap();
    assert!(
        orders_svc::repo::view::stale_views(&mut conn)
            .await
            .unwrap()
            .is_empty(),
        "every write path so far refreshed the view"
    );
    // A write that forgets the view (what a new path without its refresh would do).
    sqlx::query("UPDATE orders.orders SET notes = 'changed behind the view' WHERE order_number = $1")
        .bind(&order.order_number)
        .execute(&mut *conn)
        .await
        .unwrap();
    let stale = orders_svc::repo::view::stale_views(&mut conn).await.unwrap();
    assert_eq!(stale, [Uuid::parse_str(&order.id).unwrap()]);
}

#[tokio::test]
async fn a_voided_label_marks_the_shipping_block_label_voided_and_moves_no_order() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let shipment_id = Uuid::now_v7();
    let tracking = "1ZVOID0000000001";
    app.publish_event(
        platform::streams::SHIPPING,
        &label_created(&order, shipment_id, tracking),
    )
    .await;
    view_when(&app, &order.id, "the labelled view", |view| {
        view["status"] == "label_generated"
    })
    .await;
    let voided = envelope(
        &order,
        "shipping-svc",
        "shipment.label_voided",
        Data::ShipmentLabelVoided(ShipmentLabelVoided {
            shipment_id: shipment_id.to_string(),
            order_id: order.id.clone(),
            order_number: order.order_number.clone(),
            tracking_number: tracking.to_owned(),
            voided_at: platform::time::rfc3339(platform::time::now()),
            refund_status: "refunded".into(),
        }),
    );
    app.publish_event(platform::streams::SHIPPING, &voided).await;
    let view = view_when(&app, &order.id, "the voided view", |view| {
        view["shipping"]["status"] == "label_voided"
    })
    .await;
    assert_eq!(view["status"], "label_generated", "the event moves no order");
    assert_eq!(view["shipping"]["trackingNumber"], tracking);
    assert_eq!(view["statusHistory"].as_array().unwrap().len(), 2);
}

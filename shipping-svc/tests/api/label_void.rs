//! A cancelled order's label (`order.cancelled`): voided with the carrier before the carrier
//! accepts the parcel, exactly once under redelivery and concurrent deliveries, announced once
//! (`shipment.label_voided`), refused for download and email afterwards; left alone once the
//! carrier has the parcel; never bought for an order cancelled before its label.

use crate::carrier_double::{API_KEY, RefundDouble};
use crate::helpers::{TestApp, spawn_app, spawn_app_with};
use platform::consumer::HandlerError;
use platform::error::ErrorCode;
use proto::common::{OrderStatus, PaymentMethod};
use proto::events::event_envelope::Data;
use shipping_svc::carrier::CarrierAdapter;
use shipping_svc::domain::LabelOrder;

const VOIDED: &str = "shipment.label_voided";

fn voided_data(event: &proto::events::EventEnvelope) -> proto::shipping::ShipmentLabelVoided {
    match &event.data {
        Some(Data::ShipmentLabelVoided(data)) => data.clone(),
        other => panic!("not a label_voided payload: {other:?}"),
    }
}

async fn easypost_app(double: &RefundDouble) -> TestApp {
    spawn_app_with(CarrierAdapter::EasyPost(double.adapter())).await
}

#[tokio::test]
async fn an_order_cancelled_before_the_carrier_scan_has_its_label_voided_its_pickup_cancelled_and_one_event()
{
    let app = spawn_app().await;
    let seeded = app.seed_shipment("pre_transit", "").await;
    let pickup = app.seed_pickup(&seeded, "awaiting_payment").await;
    let (url, _) = {
        let view = app
            .service
            .get_label(app.customer_id, &seeded.tracking_number)
            .await
            .unwrap();
        (view.url, view.expires_at)
    };
    let cancelled = app.cancelled(seeded.order_id, OrderStatus::LabelGenerated);

    app.deliver(&cancelled).await.unwrap();

    assert_eq!(
        app.label_void(seeded.shipment_id).await,
        (Some("voided".to_owned()), Some("refunded".to_owned()), true)
    );
    assert_eq!(app.pickup_status(pickup).await, "cancelled");
    let events = app.outbox(VOIDED).await;
    assert_eq!(events.len(), 1);
    let data = voided_data(&events[0]);
    assert_eq!(data.shipment_id, seeded.shipment_id.to_string());
    assert_eq!(data.order_id, seeded.order_id.to_string());
    assert_eq!(data.order_number, seeded.order_number);
    assert_eq!(data.tracking_number, seeded.tracking_number);
    assert_eq!(data.refund_status, "refunded");
    assert!(!data.voided_at.is_empty());
    assert_eq!(events[0].customer_id, app.customer_id.to_string());
    let json = proto::event_data::to_json(events[0].data.as_ref().unwrap());
    assert_eq!(json["refund_status"], "refunded");

    // The label is refused from now on: its read, a link minted before, a new pickup.
    let refused = app
        .service
        .get_label(app.customer_id, &seeded.tracking_number)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::LabelVoided);
    assert_eq!(ErrorCode::LabelVoided.http_status(), 409);
    assert_eq!(refused.details.as_ref().unwrap()["refundStatus"], "refunded");
    let query = url.split_once('?').unwrap().1;
    let expires: i64 = query
        .split('&')
        .find_map(|p| p.strip_prefix("expires="))
        .unwrap()
        .parse()
        .unwrap();
    let signature = query
        .split('&')
        .find_map(|p| p.strip_prefix("signature="))
        .unwrap();
    let download = app
        .service
        .download_label(&format!("{}.pdf", seeded.shipment_id), expires, signature)
        .await
        .unwrap_err();
    assert_eq!(download.code, ErrorCode::LabelVoided);
    let pickup_options = app
        .service
        .pickup_options(app.customer_id, &seeded.order_id.to_string())
        .await
        .unwrap_err();
    assert_eq!(pickup_options.code, ErrorCode::LabelVoided);
    // A paid bank invoice arriving late emails nothing (and is not an error to retry).
    app.service
        .email_label(app.customer_id, seeded.order_id)
        .await
        .unwrap();

    // The same event delivered again changes nothing and announces nothing.
    app.deliver(&cancelled).await.unwrap();
    assert_eq!(app.outbox(VOIDED).await.len(), 1);
}

#[tokio::test]
async fn an_order_cancelled_with_the_parcel_in_transit_keeps_its_label_as_used_and_emits_nothing() {
    let app = spawn_app().await;
    let seeded = app.seed_shipment("in_transit", "").await;
    let pickup = app.seed_pickup(&seeded, "booked").await;

    app.deliver(&app.cancelled(seeded.order_id, OrderStatus::InTransit))
        .await
        .unwrap();

    assert_eq!(
        app.label_void(seeded.shipment_id).await,
        (Some("used".to_owned()), None, false)
    );
    assert_eq!(app.pickup_status(pickup).await, "booked", "the pickup happened");
    assert!(app.outbox(VOIDED).await.is_empty());
    app.service
        .get_label(app.customer_id, &seeded.tracking_number)
        .await
        .expect("a used label still reads");
}

#[tokio::test]
async fn an_order_cancelled_after_receipt_changes_nothing() {
    let app = spawn_app().await;
    let seeded = app.seed_shipment("delivered", "").await;
    app.deliver(&app.cancelled(seeded.order_id, OrderStatus::InLab))
        .await
        .unwrap();
    assert_eq!(app.label_void(seeded.shipment_id).await, (None, None, false));
    assert!(app.outbox(VOIDED).await.is_empty());
}

#[tokio::test]
async fn an_order_cancelled_before_its_label_was_bought_never_gets_one() {
    let app = spawn_app().await;
    let order_id = uuid::Uuid::now_v7();
    app.deliver(&app.cancelled(order_id, OrderStatus::InvoiceSent))
        .await
        .unwrap();
    assert!(app.recorded_cancelled(order_id).await);
    // A late order.created (or settlement) buys nothing: no peer is even asked.
    let order = LabelOrder {
        customer_id: app.customer_id,
        order_id,
        order_number: "ORD-LATE".to_owned(),
        payment_method: PaymentMethod::BankInvoice,
        quote_id: uuid::Uuid::now_v7(),
        shipping_address_id: None,
        sandbox: false,
    };
    assert_eq!(app.service.ensure_label(&order).await.unwrap(), None);
    assert!(app.outbox("shipment.label_created").await.is_empty());
}

#[tokio::test]
async fn concurrent_and_repeated_deliveries_void_the_label_with_the_carrier_once() {
    let double = RefundDouble::start().await;
    let app = easypost_app(&double).await;
    let seeded = app.seed_shipment("pre_transit", "shp_000001").await;
    let cancelled = app.cancelled(seeded.order_id, OrderStatus::Paid);

    let deliveries: Vec<_> = (0..4)
        .map(|_| {
            let handler = app.handler.clone();
            let event = cancelled.clone();
            tokio::spawn(async move { platform::consumer::EventHandler::handle(&*handler, &event).await })
        })
        .collect();
    for delivery in deliveries {
        delivery.await.unwrap().unwrap();
    }
    app.deliver(&cancelled).await.unwrap();

    assert_eq!(double.refunds_performed(), 1, "the carrier voided the label once");
    let refund_posts = double
        .requests()
        .iter()
        .filter(|(request, _)| request.starts_with("POST"))
        .count();
    assert_eq!(refund_posts, 1, "one refund request");
    assert_eq!(app.outbox(VOIDED).await.len(), 1, "one event");
    assert_eq!(
        app.label_void(seeded.shipment_id).await,
        (Some("voided".to_owned()), Some("submitted".to_owned()), true)
    );
}

#[tokio::test]
async fn the_easypost_adapter_voids_through_the_documented_refund_request_and_records_a_rejection() {
    let double = RefundDouble::start().await;
    double.reject_refunds();
    let app = easypost_app(&double).await;
    let seeded = app.seed_shipment("pre_transit", "shp_000042").await;

    app.deliver(&app.cancelled(seeded.order_id, OrderStatus::LabelGenerated))
        .await
        .expect("a rejection is recorded, not retried");

    let requests = double.requests();
    let paths: Vec<&str> = requests.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "GET /v2/shipments/shp_000042",
            "POST /v2/shipments/shp_000042/refund"
        ]
    );
    use base64::Engine;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{API_KEY}:"))
    );
    assert!(requests.iter().all(|(_, authorization)| *authorization == basic));
    assert_eq!(
        app.label_void(seeded.shipment_id).await,
        (Some("voided".to_owned()), Some("rejected".to_owned()), true)
    );
    let events = app.outbox(VOIDED).await;
    assert_eq!(events.len(), 1);
    assert_eq!(voided_data(&events[0]).refund_status, "rejected");
}

#[tokio::test]
async fn a_carrier_that_cannot_be_reached_writes_nothing_and_the_retry_voids_the_label() {
    let double = RefundDouble::start().await;
    double.fail_next(1);
    let app = easypost_app(&double).await;
    let seeded = app.seed_shipment("pre_transit", "shp_000007").await;
    let pickup = app.seed_pickup(&seeded, "awaiting_payment").await;
    let cancelled = app.cancelled(seeded.order_id, OrderStatus::LabelGenerated);

    let failed = app.deliver(&cancelled).await.unwrap_err();
    assert!(matches!(failed, HandlerError::Retry(_)), "{failed:?}");
    assert_eq!(app.label_void(seeded.shipment_id).await, (None, None, false));
    assert_eq!(app.pickup_status(pickup).await, "awaiting_payment");
    assert!(!app.recorded_cancelled(seeded.order_id).await);
    assert!(app.outbox(VOIDED).await.is_empty());

    app.deliver(&cancelled).await.unwrap();
    assert_eq!(double.refunds_performed(), 1);
    assert_eq!(app.pickup_status(pickup).await, "cancelled");
    assert_eq!(app.outbox(VOIDED).await.len(), 1);
}

#[tokio::test]
async fn a_void_whose_answer_was_lost_is_read_back_on_the_retry_and_not_repeated() {
    let double = RefundDouble::start().await;
    double.lose_next_answers(1);
    let app = easypost_app(&double).await;
    let seeded = app.seed_shipment("pre_transit", "shp_000009").await;
    let cancelled = app.cancelled(seeded.order_id, OrderStatus::LabelGenerated);

    assert!(matches!(
        app.deliver(&cancelled).await,
        Err(HandlerError::Retry(_))
    ));
    app.deliver(&cancelled).await.unwrap();

    assert_eq!(double.refunds_performed(), 1, "the refund is not asked twice");
    let paths: Vec<String> = double.requests().into_iter().map(|(path, _)| path).collect();
    assert_eq!(
        paths,
        [
            "GET /v2/shipments/shp_000009",
            "POST /v2/shipments/shp_000009/refund",
            "GET /v2/shipments/shp_000009"
        ]
    );
    assert_eq!(
        app.label_void(seeded.shipment_id).await,
        (Some("voided".to_owned()), Some("submitted".to_owned()), true)
    );
    assert_eq!(app.outbox(VOIDED).await.len(), 1);
}

//! Ship-first placement: a card or bank order asks shipping-svc for its label while
//! `CreateOrder` answers (PrepareLabel, waiting at most the label wait), so the answer's order
//! document already holds the shipping block; a carrier slower than the wait leaves the pending
//! block, which `shipment.label_created` fills in.

use crate::fakes::{DOUBLE_TRACKING_NUMBER, LabelMode};
use crate::helpers::*;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::shipping::{Label, ShipmentLabelCreated};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;
use uuid::Uuid;

/// The order document CreateOrder answered with, parsed.
fn answered_document(response: &proto::orders::CreateOrderResponse) -> Value {
    let view = response
        .view
        .as_ref()
        .expect("CreateOrder answers the order's document");
    serde_json::from_slice(&view.json).expect("the document is JSON")
}

fn label_created(order_id: &str, order_number: &str, customer_id: Uuid, shipment_id: &str) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "shipment.label_created".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer_id.to_string(),
        source: "shipping-svc".into(),
        subject_id: shipment_id.to_owned(),
        schema_version: 1,
        data: Some(Data::ShipmentLabelCreated(ShipmentLabelCreated {
            shipment_id: shipment_id.to_owned(),
            order_id: order_id.to_owned(),
            order_number: order_number.to_owned(),
            tracking_number: "1ZLATE0000000001".into(),
            carrier_code: "ups".into(),
            service_code: "ground".into(),
            created_at: platform::time::rfc3339(platform::time::now()),
            label: Some(Box::new(Label {
                shipment_id: shipment_id.to_owned(),
                tracking_number: "1ZLATE0000000001".into(),
                ..Label::default()
            })),
            status: proto::common::ShipmentStatus::PreTransit as i32,
            legacy_status: String::new(),
        })),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_bank_order_answers_with_the_label_bought_while_it_was_placed() {
    let app = spawn_app().await;
    app.peers.labels(LabelMode::Buy);
    let quote = app.quote();
    let key = new_key();
    let response = app
        .create_order(&key, order_request(&quote.id))
        .await
        .expect("placed")
        .into_inner();
    let document = answered_document(&response);
    assert_eq!(document["status"], "label_generated");
    assert_eq!(document["shipping"]["trackingNumber"], DOUBLE_TRACKING_NUMBER);
    assert_eq!(document["shipping"]["status"], "pre_transit");
    assert!(
        document["shipping"]["labelUrl"]
            .as_str()
            .is_some_and(|url| url.contains("signature=")),
        "{document}"
    );
    assert_eq!(document["statusHistory"][1]["toStatus"], "label_generated");
    assert_eq!(document["statusHistory"][1]["reason"], "shipment.label_created");
    // Asked once, acting for the order's customer.
    assert_eq!(app.peers.shipping.prepare_label_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        *app.peers.shipping.last_customer.lock().unwrap(),
        Some(app.customer_id)
    );
    // The read model holds the same block; a replay answers it without asking again.
    let order_id = document["id"].as_str().unwrap().to_owned();
    let read = app.get_order_view(&order_id).await.unwrap();
    assert_eq!(read["shipping"]["trackingNumber"], DOUBLE_TRACKING_NUMBER);
    let replay = app
        .create_order(&key, order_request(&quote.id))
        .await
        .expect("replayed")
        .into_inner();
    assert_eq!(
        answered_document(&replay)["shipping"]["trackingNumber"],
        DOUBLE_TRACKING_NUMBER
    );
    assert_eq!(app.peers.shipping.prepare_label_calls.load(Ordering::SeqCst), 1);
    // shipment.label_created of the same label arrives later: nothing moves twice.
    let shipment_id = document["shipping"]["shipmentId"].as_str().unwrap().to_owned();
    let number = document["orderNumber"].as_str().unwrap().to_owned();
    app.publish_event(
        platform::streams::SHIPPING,
        &label_created(&order_id, &number, app.customer_id, &shipment_id),
    )
    .await;
    let relabelled =
        platform::testing::wait_for("the event's label kept", Duration::from_secs(20), || async {
            let view = app.get_order_view(&order_id).await.ok()?;
            (view["shipping"]["trackingNumber"] == "1ZLATE0000000001").then_some(view)
        })
        .await;
    let moves = relabelled["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["toStatus"] == "label_generated")
        .count();
    assert_eq!(moves, 1, "{relabelled}");
}

#[tokio::test]
async fn a_carrier_slower_than_the_wait_leaves_the_pending_block_which_the_label_event_fills() {
    let app = spawn_app_with(Tuning {
        label_wait: Duration::from_millis(300),
        ..Tuning::default()
    })
    .await;
    app.peers.labels(LabelMode::Stall);
    let quote = app.quote();
    let response = app
        .create_order(&new_key(), order_request(&quote.id))
        .await
        .expect("placed although the carrier never answers")
        .into_inner();
    let document = answered_document(&response);
    assert_eq!(document["status"], "invoice_sent");
    assert_eq!(document["shipping"], json!({ "status": "label_pending" }));
    assert_eq!(app.peers.shipping.prepare_label_calls.load(Ordering::SeqCst), 1);

    let order_id = document["id"].as_str().unwrap().to_owned();
    let number = document["orderNumber"].as_str().unwrap().to_owned();
    let shipment_id = Uuid::now_v7().to_string();
    app.publish_event(
        platform::streams::SHIPPING,
        &label_created(&order_id, &number, app.customer_id, &shipment_id),
    )
    .await;
    let labelled = platform::testing::wait_for("the labelled view", Duration::from_secs(20), || async {
        let view = app.get_order_view(&order_id).await.ok()?;
        (view["status"] == "label_generated").then_some(view)
    })
    .await;
    assert_eq!(labelled["shipping"]["trackingNumber"], "1ZLATE0000000001");
    assert_eq!(labelled["shipping"]["shipmentId"], shipment_id.as_str());
}

#[tokio::test]
async fn a_failing_shipping_service_never_fails_the_placement() {
    let app = spawn_app().await;
    app.peers.labels(LabelMode::Unavailable);
    let quote = app.quote();
    let response = app
        .create_order(&new_key(), order_request(&quote.id))
        .await
        .expect("placed although shipping-svc is down")
        .into_inner();
    let document = answered_document(&response);
    assert_eq!(document["status"], "invoice_sent");
    assert_eq!(document["shipping"], json!({ "status": "label_pending" }));
    assert!(response.order.is_some());
}

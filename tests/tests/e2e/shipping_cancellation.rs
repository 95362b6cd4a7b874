//! A cancelled order's label, through the whole mesh with the EasyPost adapter against its
//! double: the customer files a cancellation request (REST), staff approve it (labctl, gRPC
//! `DecideCancelRequest`), orders-svc emits `order.cancelled`, shipping-svc voids the label with
//! the carrier once (`POST /v2/shipments/{id}/refund`), emits `shipment.label_voided` once, the
//! label is refused (409 `label_voided`) and the order's shipping block says `label_voided`.

use crate::shipping_carrier::easypost;
use crate::shipping_flow::labelled_order;
use crate::support::{bank_order, stream_events};
use platform::testing::{holds_for, wait_for};
use serde_json::json;
use std::time::Duration;
use tests::Sandbox;
use tests::easypost::EasyPostDouble;

#[tokio::test]
async fn an_order_cancelled_before_the_carrier_scan_has_its_label_voided_with_the_carrier_once() {
    let double = EasyPostDouble::start().await;
    let base_url = double.base_url();
    let sandbox = Sandbox::start_with(|settings| settings.shipping.carrier = easypost(base_url)).await;
    let agent = sandbox.customer("Void Vera", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "void-order-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();
    let order_number = order["orderNumber"].as_str().unwrap().to_owned();
    let before = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    assert!(
        before.body["data"]["shipment"]["voided"].is_null(),
        "{:?}",
        before.body
    );
    assert_eq!(
        sandbox
            .get(&agent.key, &format!("/shipments/{tracking}/label"))
            .await
            .status,
        200
    );

    let filed = sandbox
        .post(
            &agent.key,
            &format!("/orders/{order_id}/cancel-request"),
            &json!({ "reason": "ordered the wrong test", "confirm": true }),
            &[],
        )
        .await;
    assert_eq!(filed.status, 202, "{:?}", filed.body);
    sandbox
        .labctl(&[
            "cancellations",
            "approve",
            "--order",
            &order_number,
            "--note",
            "cancelled as asked",
        ])
        .await
        .unwrap();

    let refused = wait_for("the label refused", Duration::from_secs(30), || async {
        let answer = sandbox
            .get(&agent.key, &format!("/shipments/{tracking}/label"))
            .await;
        (answer.status == 409).then_some(answer)
    })
    .await;
    assert_eq!(refused.body["error"]["code"], "label_voided");
    assert_eq!(refused.body["error"]["details"]["refundStatus"], "submitted");
    // The shipment still reads, and says it was voided.
    let shipment = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    assert_eq!(shipment.status, 200, "{:?}", shipment.body);
    let voided = &shipment.body["data"]["shipment"]["voided"];
    assert_eq!(voided["refundStatus"], "submitted", "{:?}", shipment.body);
    assert!(
        voided["voidedAt"].as_str().is_some_and(|at| at.ends_with('Z')),
        "{voided}"
    );
    wait_for("the shipping block voided", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["shipping"]["status"] == "label_voided").then_some(())
    })
    .await;
    let refunds: Vec<String> = double
        .requests()
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| path.ends_with("/refund"))
        .collect();
    assert_eq!(refunds, ["/v2/shipments/shp_000001/refund"]);
    holds_for("one void, one event", Duration::from_secs(2), || async {
        let voided = stream_events(&sandbox, "shipping")
            .await
            .into_iter()
            .filter(|event| event.r#type == "shipment.label_voided")
            .count();
        double.refunds() == 1 && voided == 1
    })
    .await;
    sandbox.stop().await;
}

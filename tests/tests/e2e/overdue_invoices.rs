//! The overdue job: an unpaid bank invoice past its due date (payment terms
//! `PAYMENTS_INVOICE_DUE_DAYS`, here 0 days) becomes `overdue` with `invoice.updated`; its order
//! moves to `overdue` only while it has not moved on (a ship-first order whose label exists keeps
//! `label_generated`, its payment state `unpaid`), and a later bank payment still settles both.

use crate::card_checkout::wait_for_order;
use crate::support::{bank_order, stream_events};
use proto::events::event_envelope::Data;
use serde_json::json;
use std::time::Duration;
use tests::Sandbox;

#[tokio::test]
async fn an_unpaid_bank_invoice_past_its_due_date_becomes_overdue_and_a_later_payment_still_settles_it() {
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.invoice_due_days = 0;
        settings.payments.jobs_interval = Duration::from_millis(200);
    })
    .await;
    let agent = sandbox.customer("Slow Payer", "all").await;
    let (order_id, invoice_number, total) = bank_order(&sandbox, &agent, "overdue-order-0001").await;
    let invoice =
        platform::testing::wait_for("the invoice to be overdue", Duration::from_secs(20), || async {
            let invoice = sandbox
                .get(&agent.key, &format!("/invoices/{invoice_number}"))
                .await;
            (invoice.body["data"]["invoice"]["status"] == "overdue").then_some(invoice)
        })
        .await;
    assert_eq!(invoice.body["data"]["invoice"]["previousStatus"], "open");
    let overdue_list = sandbox.get(&agent.key, "/invoices?status=overdue").await;
    assert_eq!(overdue_list.body["data"].as_array().unwrap().len(), 1);
    crate::support::wait_for_label(&sandbox, &agent, &order_id).await;
    let order = platform::testing::wait_for(
        "the order to show its overdue invoice",
        Duration::from_secs(20),
        || async {
            let order = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
            (order.body["data"]["order"]["payment"]["status"] == "overdue").then_some(order)
        },
    )
    .await;
    assert_eq!(order.body["data"]["order"]["paymentState"], "unpaid");

    // Preparing a bank order answers its remittance details.
    let prepared = sandbox
        .post(
            &agent.key,
            "/payments/prepare",
            &json!({ "orderReference": invoice_number }),
            &[("Idempotency-Key", "overdue-prepare-0001")],
        )
        .await;
    assert_eq!(prepared.status, 200, "{:?}", prepared.body);
    assert_eq!(prepared.body["data"]["payment"]["state"], "awaiting_payment");
    assert_eq!(
        prepared.body["data"]["payment"]["bankInstructions"]["reference"],
        invoice_number.as_str()
    );
    assert_eq!(
        prepared.body["data"]["payment"]["checkout"],
        serde_json::Value::Null
    );

    let recorded =
        crate::support::record_bank_payment(&sandbox, &invoice_number, &total, "LATE-WIRE-1").await;
    assert_eq!(recorded["invoice"]["status"], "paid");
    wait_for_order(&sandbox, &agent, &order_id, "paid").await;
    let invoice = sandbox
        .get(&agent.key, &format!("/invoices/{invoice_number}"))
        .await;
    assert_eq!(invoice.body["data"]["invoice"]["previousStatus"], "overdue");

    let updates: Vec<(String, String)> = stream_events(&sandbox, platform::streams::PAYMENTS)
        .await
        .into_iter()
        .filter_map(|event| match event.data {
            Some(Data::InvoiceUpdated(updated)) if updated.order_id == order_id => Some((
                updated.previous_status().to_string(),
                updated.status().to_string(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        updates,
        vec![
            ("open".to_owned(), "overdue".to_owned()),
            ("overdue".to_owned(), "paid".to_owned())
        ]
    );
    let changes: Vec<(String, String)> = stream_events(&sandbox, platform::streams::ORDERS)
        .await
        .into_iter()
        .filter_map(|event| match event.data {
            Some(Data::OrderStatusChanged(changed)) if changed.order_id == order_id => {
                Some((changed.from_status().to_string(), changed.to_status().to_string()))
            }
            _ => None,
        })
        .collect();
    // The label and the due date race: the order went overdue first or not at all, and the
    // payment moved nothing once the label existed.
    let pair = |from: &str, to: &str| (from.to_owned(), to.to_owned());
    assert!(
        changes == vec![pair("invoice_sent", "label_generated")]
            || changes
                == vec![
                    pair("invoice_sent", "overdue"),
                    pair("overdue", "label_generated")
                ],
        "{changes:?}"
    );
    sandbox.stop().await;
}

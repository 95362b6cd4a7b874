//! Supplementary invoices of add-ons (docs/payments.md, "Add-on invoices"): one per add-on under
//! concurrent and repeated CreateInvoice calls, apart from the order's own invoice, which the
//! order's references keep finding; their events carry the add-on id.

use crate::helpers::{data, invoice_request_for, spawn_app};
use proto::events::event_envelope::Data;
use uuid::Uuid;

#[tokio::test]
async fn an_add_on_gets_exactly_one_supplementary_invoice_beside_the_orders_own() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let order_id = Uuid::now_v7();
    let order_invoice = app
        .create_invoice(customer, invoice_request_for(order_id, 40_000))
        .await;
    let addon_id = Uuid::now_v7();
    let mut addon_request = invoice_request_for(order_id, 7_500);
    addon_request.addon_id = Some(addon_id.to_string());

    let calls = (0..8).map(|_| app.create_invoice(customer, addon_request.clone()));
    let invoices = futures::future::join_all(calls).await;
    let addon_invoice = invoices[0].clone();
    assert!(invoices.iter().all(|invoice| invoice.id == addon_invoice.id));
    assert_ne!(addon_invoice.id, order_invoice.id);
    assert_eq!(
        addon_invoice.addon_id.as_deref(),
        Some(addon_id.to_string().as_str())
    );
    assert_eq!(addon_invoice.total_cents, 7_500);
    assert_eq!(
        addon_invoice.bank_instructions.as_ref().unwrap().reference,
        addon_invoice.invoice_number
    );
    assert_eq!(order_invoice.addon_id, None);

    // The order's references still find the order's own invoice.
    let by_order = app.get_invoice(customer, &order_id.to_string()).await.unwrap();
    assert_eq!(by_order.id, order_invoice.id);
    let again = app
        .create_invoice(customer, invoice_request_for(order_id, 40_000))
        .await;
    assert_eq!(again.id, order_invoice.id, "the order keeps its one invoice");
    let by_number = app
        .get_invoice(customer, &addon_invoice.invoice_number)
        .await
        .unwrap();
    assert_eq!(by_number.id, addon_invoice.id);

    let created = app.events_of("invoice.created").await;
    assert_eq!(created.len(), 2);
    let addon_ids: Vec<Option<String>> = created
        .iter()
        .map(|event| match data(event) {
            Data::InvoiceCreated(created) => created.addon_id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(addon_ids, [None, Some(addon_id.to_string())]);

    app.record(&addon_invoice.invoice_number, 7_500, "ADDON-REF-1")
        .await
        .unwrap();
    let confirmed = app.events_of("payment.confirmed").await;
    assert_eq!(confirmed.len(), 1);
    let Data::PaymentConfirmed(payment) = data(&confirmed[0]) else {
        panic!("{:?}", confirmed[0]);
    };
    assert_eq!(payment.addon_id.as_deref(), Some(addon_id.to_string().as_str()));
    assert_eq!(payment.amount_cents, 7_500);
    let order_after = app.get_invoice(customer, &order_id.to_string()).await.unwrap();
    assert_eq!(
        order_after.status, order_invoice.status,
        "the order's invoice is untouched"
    );
}

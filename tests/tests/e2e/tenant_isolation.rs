//! Tenant isolation: another customer's resources are indistinguishable from missing ones.

use crate::support::{order_body, place_order, quote};
use tests::Sandbox;

#[tokio::test]
async fn another_customer_gets_404_for_an_order_and_sees_none_of_its_orders_invoices_or_payments() {
    let sandbox = Sandbox::start().await;
    let alice = sandbox.customer("Alice Isolated", "all").await;
    let bob = sandbox.customer("Bob Curious", "all").await;
    let quote = quote(&sandbox, &alice, &["Tesamorelin"]).await;
    let order = place_order(
        &sandbox,
        &alice,
        &order_body(quote["id"].as_str().unwrap()),
        "alice-order-1",
    )
    .await;
    assert_eq!(order.status, 201);
    let order = &order.body["data"]["order"];
    let invoice_number = order["payment"]["invoiceNumber"].as_str().unwrap();
    let total = order["totalCents"].as_i64().unwrap().to_string();
    crate::support::record_bank_payment(&sandbox, invoice_number, &total, "ISO-1").await;
    let alice_payment = sandbox.get(&alice.key, "/payments").await;
    let payment_id = alice_payment.body["data"][0]["id"].as_str().unwrap().to_owned();
    let invoice_id = order["payment"]["invoiceId"].as_str().unwrap();

    let missing = sandbox
        .get(&bob.key, "/orders/00000000-0000-7000-8000-000000000000")
        .await;
    assert_eq!((missing.status, missing.error_code()), (404, "not_found"));
    for path in [
        format!("/orders/{}", order["id"].as_str().unwrap()),
        format!("/orders/{}", order["orderNumber"].as_str().unwrap()),
        format!("/orders/{invoice_number}"),
        format!("/invoices/{invoice_number}"),
        format!("/invoices/{invoice_id}"),
        format!("/payments/{payment_id}"),
    ] {
        let answer = sandbox.get(&bob.key, &path).await;
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(answer.error_code(), "not_found", "{path}");
    }
    for list in ["/orders", "/invoices", "/payments"] {
        let answer = sandbox.get(&bob.key, list).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.body["data"].as_array().unwrap().len(),
            0,
            "{list} is empty for another customer"
        );
        let own = sandbox.get(&alice.key, list).await;
        assert_eq!(
            own.body["data"].as_array().unwrap().len(),
            1,
            "{list} shows the owner's resource"
        );
    }
    let bob_quote = sandbox
        .post(
            &bob.key,
            "/orders",
            &order_body(quote["id"].as_str().unwrap()),
            &[("Idempotency-Key", "bob-steals-quote")],
        )
        .await;
    assert_eq!(
        (bob_quote.status, bob_quote.error_code()),
        (404, "quote_not_found"),
        "another customer's quote is unknown"
    );
    sandbox.stop().await;
}

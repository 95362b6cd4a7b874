//! Catalog, quotes, invoices and payments through the gateway.

use crate::helpers::{json_with_status, spawn_app};
use serde_json::json;

#[tokio::test]
async fn the_catalog_page_shows_its_revision_and_only_the_requested_blocks() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["catalog:read"]).await;
    let body = json_with_status(
        app.get(
            "/catalog?include=categories,requirements&limit=1",
            &customer.plaintext,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(body["catalogRevision"], "rev-1");
    assert_eq!(body["data"][0]["id"], "hplc-purity");
    assert_eq!(body["data"][0]["priceCents"], 12_500);
    assert_eq!(body["data"][0]["method"], serde_json::Value::Null);
    assert_eq!(body["pagination"]["nextCursor"], "cursor-2");
    assert_eq!(body["categories"][0]["id"], "peptides");
    assert!(
        body.get("matrices").is_none() && body.get("turnarounds").is_none(),
        "{body}"
    );
    let all = json_with_status(app.get("/catalog?include=all", &customer.plaintext).await, 200).await;
    assert_eq!(all["matrices"][0]["id"], "powder");
    assert_eq!(all["turnarounds"], json!([]));
}

#[tokio::test]
async fn a_quote_is_created_with_201_and_its_expiry() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["quotes:write"]).await;
    let request = json!({ "categoryId": "peptides", "compoundNames": ["BPC-157"], "testIds": ["hplc-purity"], "turnaround": null });
    let body = json_with_status(
        app.post_json("/quotes", &customer.plaintext, &request, None)
            .await,
        201,
    )
    .await;
    let quote = &body["data"]["quote"];
    assert_eq!(quote["id"], "5f0c6f3e-0000-4000-8000-000000000001");
    assert_eq!(quote["expiresAt"], "2026-07-14T03:48:20.123456Z");
    assert_eq!(quote["catalogRevision"], "rev-1");
    assert_eq!(quote["totalCents"], 12_500);
    assert_eq!(quote["currency"], "USD");
    assert!(quote["lines"].is_array() && quote["charges"].is_array());
}

#[tokio::test]
async fn invoices_and_payments_are_read_with_their_scopes() {
    let app = spawn_app().await;
    let customer = app
        .identity
        .keyed_customer(&["invoices:read", "payments:read"])
        .await;
    let invoices = json_with_status(app.get("/invoices?status=open", &customer.plaintext).await, 200).await;
    assert_eq!(
        invoices,
        json!({ "data": [], "pagination": { "nextCursor": "page-2" } })
    );
    let invoice = json_with_status(app.get("/invoices/INV-000001", &customer.plaintext).await, 200).await;
    assert_eq!(invoice["data"]["invoice"]["invoiceNumber"], "INV-000001");
    assert_eq!(
        invoice["data"]["invoice"]["previousStatus"],
        serde_json::Value::Null
    );
    assert_eq!(invoice["data"]["invoice"]["lines"][0]["amountCents"], 12_500);
    let payments = json_with_status(app.get("/payments", &customer.plaintext).await, 200).await;
    assert_eq!(payments["pagination"]["nextCursor"], serde_json::Value::Null);
    let payment = json_with_status(app.get("/payments/pay-1", &customer.plaintext).await, 200).await;
    assert_eq!(payment["data"]["payment"]["amountCents"], 12_500);
    assert_eq!(
        payment["data"]["payment"]["receivedAt"],
        "2026-07-15T07:20:00.123456Z"
    );
    let calls: Vec<_> = app.fakes.calls().into_iter().map(|call| call.rpc).collect();
    assert_eq!(
        calls,
        vec!["ListInvoices", "GetInvoice", "ListPayments", "GetPayment"]
    );
}

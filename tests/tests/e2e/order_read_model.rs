//! The order read model behind `GET /orders/{reference}`: the answer is the REST shape byte for
//! byte (the same bytes as the order's entry in `GET /orders`, apart from the `shipping` block
//! that listings leave out), it follows every change of the order in the same transaction, its
//! shipping block comes from the `shipment.*` events with a label URL signed at read time that
//! shipping-svc honours, and an order without a view (placed before the read model existed) is
//! rendered by its first read.

use crate::support::{bank_order, wait_for_label};
use serde_json::Value;
use tests::{Customer, Sandbox};

/// The raw body of a GET.
async fn raw_get(sandbox: &Sandbox, customer: &Customer, path: &str) -> String {
    let response = sandbox
        .http
        .get(format!("{}/api/v1/agent{path}", sandbox.base_url))
        .bearer_auth(&customer.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "GET {path}");
    assert_eq!(response.headers()["content-type"], "application/json");
    response.text().await.unwrap()
}

/// The `order` object of a single read, as text, with its `shipping` block replaced by `null`.
fn order_text_without_shipping(body: &str) -> String {
    let order = body
        .strip_prefix("{\"data\":{\"order\":")
        .and_then(|rest| rest.strip_suffix("}}"))
        .expect("the single-order envelope");
    let start = order.find(",\"shipping\":").expect("a shipping key") + ",\"shipping\":".len();
    let end = order
        .find(",\"publishRawData\":")
        .expect("publishRawData after shipping");
    format!("{}null{}", &order[..start], &order[end..])
}

/// The text of the first order of a listing (the newest), cut out of the raw list body.
fn first_listed_order_text(body: &str) -> String {
    let list = body.strip_prefix("{\"data\":[").expect("the list envelope");
    let value: Value = serde_json::from_str(body).unwrap();
    let first = serde_json::to_string(&value["data"][0]).unwrap();
    // serde_json's Value reorders keys; find the raw text by its length instead.
    let raw = &list[..first.len()];
    assert_eq!(serde_json::from_str::<Value>(raw).unwrap(), value["data"][0]);
    raw.to_owned()
}

#[tokio::test]
async fn an_order_read_by_reference_answers_the_bytes_of_its_listing_apart_from_the_shipping_block() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("View Vera", "all").await;
    let (order_id, invoice_number, _) = bank_order(&sandbox, &agent, "view-order-0001").await;
    let labelled = wait_for_label(&sandbox, &agent, &order_id).await;
    let tracking = labelled["shipping"]["trackingNumber"]
        .as_str()
        .unwrap()
        .to_owned();

    assert_single_read_matches_listing(&sandbox, &agent, &order_id).await;
    let single = raw_get(&sandbox, &agent, &format!("/orders/{order_id}")).await;
    // Every reference finds the same document.
    let order_number = labelled["orderNumber"].as_str().unwrap().to_owned();
    for reference in [order_number.as_str(), invoice_number.as_str(), tracking.as_str()] {
        let other = raw_get(&sandbox, &agent, &format!("/orders/{reference}")).await;
        assert_eq!(
            order_text_without_shipping(&other),
            order_text_without_shipping(&single),
            "by {reference}"
        );
    }

    // A payment recorded by staff reaches the view with the order's own change.
    let total = labelled["totalCents"].as_i64().unwrap().to_string();
    let recorded =
        crate::support::record_bank_payment(&sandbox, &invoice_number, &total, "VIEW-BANK-REF-1").await;
    assert_eq!(recorded["invoice"]["status"], "paid");
    platform::testing::wait_for("the paid view", std::time::Duration::from_secs(20), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["paymentState"] == "paid").then_some(())
    })
    .await;
    // Later events of the payment (`invoice.updated`) may still touch the order: compare a
    // listing with the single reads around it once those agree.
    assert_single_read_matches_listing(&sandbox, &agent, &order_id).await;
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

/// Reads the order, the listing, and the order again until the two single reads agree (no
/// change in between), then asserts that the listing has the same bytes.
async fn assert_single_read_matches_listing(sandbox: &Sandbox, customer: &Customer, order_id: &str) {
    for _ in 0..50 {
        let before = raw_get(sandbox, customer, &format!("/orders/{order_id}")).await;
        let listed = raw_get(sandbox, customer, "/orders?limit=1").await;
        let after = raw_get(sandbox, customer, &format!("/orders/{order_id}")).await;
        if order_text_without_shipping(&before) == order_text_without_shipping(&after) {
            assert_eq!(
                order_text_without_shipping(&after),
                first_listed_order_text(&listed)
            );
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the order kept changing");
}

#[tokio::test]
async fn the_shipping_block_of_an_order_matches_its_label_and_its_url_downloads_the_pdf() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Label Lou", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "view-label-0001").await;
    let order = wait_for_label(&sandbox, &agent, &order_id).await;
    let mut block = order["shipping"].clone();
    let tracking = block["trackingNumber"].as_str().unwrap().to_owned();
    let label = sandbox
        .get(&agent.key, &format!("/shipments/{tracking}/label"))
        .await;
    assert_eq!(label.status, 200, "{:?}", label.body);
    let mut label = label.body["data"]["label"].clone();

    let url = block["labelUrl"].as_str().unwrap().to_owned();
    let expires = block["labelUrlExpiresAt"].as_str().unwrap().to_owned();
    assert!(url.contains(&format!(
        "/api/v1/files/labels/{}.pdf?expires=",
        block["shipmentId"].as_str().unwrap()
    )));
    assert!(expires.ends_with('Z'));
    for value in [&mut block, &mut label] {
        let object = value.as_object_mut().unwrap();
        object.remove("labelUrl");
        object.remove("labelUrlExpiresAt");
    }
    assert_eq!(block, label);

    // shipping-svc honours the URL that orders-svc signed.
    let url = url.replace("http://127.0.0.1:8080", &sandbox.base_url);
    let pdf = sandbox.http.get(&url).send().await.unwrap();
    assert_eq!(pdf.status(), 200);
    assert!(pdf.bytes().await.unwrap().starts_with(b"%PDF"));
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn an_order_placed_before_the_read_model_existed_is_rendered_by_its_first_read() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Legacy Leo", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "view-legacy-0001").await;
    let labelled = wait_for_label(&sandbox, &agent, &order_id).await;
    // As if the order predated the read model: no view, no kept shipping block.
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    let id: uuid::Uuid = order_id.parse().unwrap();
    sqlx::query("DELETE FROM orders.order_views WHERE order_id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM orders.order_shipping WHERE order_id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();

    let read = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    let order = &read.body["data"]["order"];
    // The block comes from shipping-svc for such an order.
    assert_eq!(
        order["shipping"]["trackingNumber"],
        labelled["shipping"]["trackingNumber"]
    );
    assert_eq!(order["status"], labelled["status"]);
    let views: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.order_views WHERE order_id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(views, 1, "the first read rendered the view");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

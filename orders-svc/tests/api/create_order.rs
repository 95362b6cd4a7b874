//! The happy path of CreateOrder: the order, its history, its payment block, the invoice request
//! and the events.

use crate::helpers::*;
use proto::events::event_envelope::Data;
use proto::orders::{CreateOrderRequest, SampleMetadata};
use redis::AsyncCommands;
use std::time::Duration;

#[tokio::test]
async fn a_confirmed_bank_invoice_order_is_placed_from_its_quote() {
    let app = spawn_app().await;
    let quote = app.quote();
    let billing = uuid::Uuid::new_v4().to_string();
    let request = CreateOrderRequest {
        client_reference: Some("PO-7731".into()),
        notes: Some("fragile".into()),
        expected_payer_address: Some("0xabc".into()),
        billing_address_id: Some(billing.clone()),
        sample_metadata: vec![SampleMetadata {
            compound_name: "TB-500".into(),
            lot_number: Some("LOT-42".into()),
            matrix_notes: Some("lyophilized powder".into()),
        }],
        ..order_request(&quote.id)
    };

    let response = app.create_order(&new_key(), request).await.expect("order placed");

    assert!(response.metadata().get("idempotent-replayed").is_none());
    let order = response.into_inner().order.unwrap();
    assert!(
        regex_like_order_number(&order.order_number),
        "{}",
        order.order_number
    );
    assert_eq!(order.customer_id, app.customer_id.to_string());
    assert_eq!(order.quote_id, quote.id);
    assert_eq!(order.status().as_str(), "invoice_sent");
    assert_eq!(order.payment_method().as_str(), "bank_invoice");
    assert_eq!(
        (order.catalog_revision.as_str(), order.category_id.as_str()),
        ("rev-2026-07-01", "peptides")
    );
    assert_eq!((order.turnaround.as_str(), order.conformity_samples), ("rush", 2));
    assert_eq!(order.client_reference.as_deref(), Some("PO-7731"));
    assert_eq!(order.notes.as_deref(), Some("fragile"));
    assert_eq!(order.expected_payer_address.as_deref(), Some("0xabc"));
    assert_eq!(order.billing_address_id.as_deref(), Some(billing.as_str()));
    assert_eq!(order.shipping_address_id, None);
    assert!(order.publish_raw_data, "publishRawData defaults to true");
    assert_eq!((order.total_cents, order.currency.as_str()), (65_000, "USD"));

    // Lines are the quote's, with the overlay on the matching line only.
    assert_eq!(order.lines.len(), 2);
    let (first, second) = (&order.lines[0], &order.lines[1]);
    assert_eq!(
        (
            first.compound_name.as_str(),
            first.lot_number.as_deref(),
            first.matrix_notes.as_deref()
        ),
        ("BPC-157", None, None)
    );
    assert_eq!(second.compound_name, "TB-500");
    assert_eq!(second.lot_number.as_deref(), Some("LOT-42"));
    assert_eq!(second.matrix_notes.as_deref(), Some("lyophilized powder"));
    assert_eq!(second.subtotal_cents, 24_000);
    let item_ids: Vec<&str> = second.items.iter().map(|item| item.item_id.as_str()).collect();
    assert_eq!(item_ids, ["hplc-purity", "identity-pack"]);
    assert_eq!(second.items[1].test_ids, ["ms-identity", "nmr-identity"]);
    let charges: Vec<(&str, i64, i64, i64)> = order
        .charges
        .iter()
        .map(|c| (c.kind.as_str(), c.quantity, c.unit_price_cents, c.amount_cents))
        .collect();
    assert_eq!(
        charges,
        [
            ("turnaround_surcharge", 1, 12_000, 12_000),
            ("conformity_samples", 2, 2_500, 5_000)
        ]
    );

    // One history entry, from nothing to invoice_sent.
    assert_eq!(order.status_history.len(), 1);
    let created = &order.status_history[0];
    assert_eq!(
        (
            created.from_status().as_str(),
            created.to_status().as_str(),
            created.reason.as_str()
        ),
        ("", "invoice_sent", "order.created")
    );
    assert!(created.changed_at.is_some());

    // The payment block carries the issued invoice.
    let payment = order.payment.clone().expect("a payment block");
    assert!(payment.invoice_number.starts_with("INV-"));
    assert_eq!(
        (payment.status().as_str(), payment.amount_due_cents),
        ("open", 65_000)
    );
    assert!(payment.due_at.is_some());
    assert_eq!(
        payment.bank_instructions.unwrap().reference,
        payment.invoice_number
    );

    // The invoice was itemized from the order.
    let requests = app.peers.invoice_requests();
    assert_eq!(requests.len(), 1);
    let (invoice, key) = &requests[0];
    assert_eq!(
        (invoice.order_id.as_str(), invoice.order_number.as_str()),
        (order.id.as_str(), order.order_number.as_str())
    );
    assert_eq!(
        (invoice.payment_method().as_str(), invoice.total_cents),
        ("bank_invoice", 65_000)
    );
    let lines: Vec<(&str, i64, i64, i64)> = invoice
        .lines
        .iter()
        .map(|l| {
            (
                l.description.as_str(),
                l.quantity,
                l.unit_price_cents,
                l.amount_cents,
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            ("BPC-157: HPLC purity, Identity pack", 1, 24_000, 24_000),
            ("TB-500: HPLC purity, Identity pack", 1, 24_000, 24_000),
            ("Rush turnaround (+25 %)", 1, 12_000, 12_000),
            ("Conformity samples", 2, 2_500, 5_000),
        ]
    );
    assert_eq!(
        key.as_deref(),
        Some(format!("orders.create:{}", order.id).as_str())
    );

    // order.created is in the outbox with its lines, and the history row is stored.
    let events = app.outbox_events().await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].r#type.as_str(), events[0].subject_id.as_str()),
        ("order.created", order.id.as_str())
    );
    assert_eq!(
        (events[0].customer_id.as_str(), events[0].source.as_str()),
        (order.customer_id.as_str(), "orders-svc")
    );
    let Some(Data::OrderCreated(data)) = &events[0].data else {
        panic!("order.created payload")
    };
    assert_eq!(
        (
            data.order_number.as_str(),
            data.status().as_str(),
            data.total_cents
        ),
        (order.order_number.as_str(), "invoice_sent", 65_000)
    );
    assert_eq!(data.lines.len(), 2);
    assert_eq!(
        (data.lines[1].lot_number.as_deref(), data.lines[1].amount_cents),
        (Some("LOT-42"), 24_000)
    );
    assert_eq!(data.lines[1].item_ids, ["hplc-purity", "identity-pack"]);
    let history: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT from_status, to_status, reason FROM orders.order_status_history WHERE order_id = $1::text::uuid",
    )
    .bind(&order.id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        history,
        [(
            String::new(),
            "invoice_sent".to_owned(),
            "order.created".to_owned()
        )]
    );

    // The relay publishes order.created to the orders stream.
    let stream = app.stream(platform::streams::ORDERS);
    let redis = redis_connection().await;
    platform::testing::wait_for(
        "order.created on the orders stream",
        Duration::from_secs(10),
        || {
            let (stream, mut redis) = (stream.clone(), redis.clone());
            async move {
                let length: usize = redis.xlen(&stream).await.ok()?;
                (length == 1).then_some(())
            }
        },
    )
    .await;

    // GetOrder answers the same order.
    assert_eq!(app.get_order(&order.id).await.unwrap(), order);
}

#[tokio::test]
async fn publish_raw_data_false_is_kept_and_the_second_order_gets_the_next_number() {
    let app = spawn_app().await;
    let first = app.place_order().await;
    let quote = app.quote();
    let request = CreateOrderRequest {
        publish_raw_data: Some(false),
        ..order_request(&quote.id)
    };
    let second = app
        .create_order(&new_key(), request)
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert!(!second.publish_raw_data);
    let sequence = |number: &str| number.rsplit('-').next().unwrap().parse::<i64>().unwrap();
    assert_eq!(sequence(&second.order_number), sequence(&first.order_number) + 1);
}

fn regex_like_order_number(number: &str) -> bool {
    let parts: Vec<&str> = number.split('-').collect();
    parts.len() == 3
        && parts[0] == "ORD"
        && parts[1].len() == 4
        && parts[1].chars().all(|c| c.is_ascii_digit())
        && parts[2].len() == 6
        && parts[2].chars().all(|c| c.is_ascii_digit())
}

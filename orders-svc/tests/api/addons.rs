//! Add-ons on a retained sample (docs/order-states.md, "Add-ons"): the preview prices from the
//! order's catalog revision and stores nothing; a confirmed add-on is stored and invoiced once per
//! key; the refusals; the supplementary invoice's payment moves the add-on once and leaves the
//! order alone.

use crate::consumers::{envelope, wait_until_consumed};
use crate::fakes::CATALOG_REVISION;
use crate::helpers::*;
use platform::error::{ApiError, ErrorCode};
use proto::events::event_envelope::Data;
use proto::orders::{Addon, Order, ReceiveSamplesRequest, RequestAddonRequest, SampleReceipt};
use tonic::{Response, Status};

impl TestApp {
    async fn receive_units(&self, order: &Order, units: i32) {
        let token = self.keys.staff("tom", &["lab.technician"]);
        let request = ReceiveSamplesRequest {
            order_reference: order.order_number.clone(),
            tracking_number: String::new(),
            samples: order
                .lines
                .iter()
                .map(|line| SampleReceipt {
                    line_number: line.line_number,
                    units,
                    containers: format!("{units} x 2 mL vial"),
                    condition: "intact".into(),
                    storage_location: "FRZ-1/A1".into(),
                })
                .collect(),
        };
        self.client
            .clone()
            .receive_samples(platform::grpc::outgoing(request, &token))
            .await
            .expect("samples received");
    }

    async fn addon(
        &self,
        reference: &str,
        tests: &[&str],
        key: Option<&str>,
    ) -> Result<Response<Addon>, Status> {
        let request = RequestAddonRequest {
            reference: reference.to_owned(),
            line_number: 1,
            test_ids: tests.iter().map(|test| (*test).to_owned()).collect(),
            confirm: key.is_some(),
        };
        let token = self.default_token();
        let request = match key {
            Some(key) => platform::grpc::outgoing_idempotent(request, &token, key),
            None => platform::grpc::outgoing(request, &token),
        };
        let response = self.client.clone().request_addon(request).await?;
        let replayed = response.metadata().get("idempotent-replayed").cloned();
        let mut answer = Response::new(response.into_inner().addon.expect("an add-on"));
        if let Some(value) = replayed {
            answer.metadata_mut().insert("idempotent-replayed", value);
        }
        Ok(answer)
    }

    async fn refused(&self, reference: &str, tests: &[&str]) -> ErrorCode {
        let status = self.addon(reference, tests, None).await.unwrap_err();
        ApiError::from_status(&status).code
    }
}

fn replayed<T>(response: &Response<T>) -> bool {
    response
        .metadata()
        .get("idempotent-replayed")
        .is_some_and(|value| value == "true")
}

#[tokio::test]
async fn a_preview_prices_the_tests_from_the_orders_catalog_revision_and_stores_nothing() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.receive_units(&order, 5).await;
    let preview = app
        .addon(&order.order_number, &["endotoxin", "heavy-metals"], None)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(preview.status, "preview");
    assert!(preview.id.is_empty());
    assert_eq!(preview.catalog_revision, CATALOG_REVISION);
    let prices: Vec<(&str, i64)> = preview
        .tests
        .iter()
        .map(|test| (test.test_id.as_str(), test.price_cents))
        .collect();
    assert_eq!(prices, [("endotoxin", 7_500), ("heavy-metals", 9_000)]);
    assert_eq!(preview.total_cents, 16_500);
    assert!(preview.invoice.is_none());
    assert_eq!(
        *app.peers.catalog.listed_revisions.lock().unwrap(),
        [Some(CATALOG_REVISION.to_owned())]
    );
    assert!(app.outbox_events_of("order.addon_requested").await.is_empty());
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.addons")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 0);
}

#[tokio::test]
async fn a_confirmed_add_on_is_stored_and_invoiced_once_however_often_its_key_is_sent() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.receive_units(&order, 5).await;
    let attempts = futures::future::join_all(
        (0..4).map(|_| app.addon(&order.id, &["endotoxin"], Some("addon-key-0001"))),
    )
    .await;
    let mut ids = Vec::new();
    let mut fresh = 0;
    for attempt in attempts {
        match attempt {
            Ok(response) => {
                if !replayed(&response) {
                    fresh += 1;
                }
                ids.push(response.into_inner().id);
            }
            // A concurrent twin may still be running: retried below.
            Err(status) => assert_eq!(
                ApiError::from_status(&status).code,
                ErrorCode::IdempotencyRequestInProgress
            ),
        }
    }
    let settled = app
        .addon(&order.id, &["endotoxin"], Some("addon-key-0001"))
        .await
        .unwrap();
    assert!(replayed(&settled));
    let addon = settled.into_inner();
    assert!(fresh <= 1);
    assert!(ids.iter().all(|id| *id == addon.id), "{ids:?}");
    assert_eq!(addon.status, "pending_payment");
    assert_eq!(addon.total_cents, 7_500);
    let invoice = addon.invoice.clone().expect("the supplementary invoice");
    assert_eq!(invoice.amount_due_cents, 7_500);
    let requests = app.peers.payments.requests.lock().unwrap().clone();
    let for_addon: Vec<_> = requests
        .iter()
        .filter(|(request, _)| request.addon_id.as_deref() == Some(addon.id.as_str()))
        .collect();
    assert!(!for_addon.is_empty());
    assert!(for_addon.iter().all(|(request, key)| {
        request.total_cents == 7_500
            && request.lines.len() == 1
            && key.as_deref() == Some(format!("orders.addon:{}", addon.id).as_str())
    }));
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.addons")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 1);
    assert_eq!(app.outbox_events_of("order.addon_requested").await.len(), 1);
    let shown = app.get_order(&order.id).await.unwrap();
    assert_eq!(shown.addons.len(), 1);
    assert_eq!(shown.addons[0].id, addon.id);
    assert_eq!(
        shown.status().as_str(),
        "sample_received",
        "the order's status does not move"
    );
    let view = app.get_order_view(&order.id).await.unwrap();
    assert_eq!(view["addons"][0]["id"], addon.id.as_str());
    assert_eq!(
        view["addons"][0]["invoice"]["invoiceNumber"],
        invoice.invoice_number.as_str()
    );
    // The same key with other tests is another request.
    let reused = app
        .addon(&order.id, &["heavy-metals"], Some("addon-key-0001"))
        .await
        .unwrap_err();
    assert_eq!(
        ApiError::from_status(&reused).code,
        ErrorCode::IdempotencyKeyReused
    );
}

#[tokio::test]
async fn add_ons_are_refused_before_receipt_for_other_matrices_beyond_the_retained_units_and_past_retention()
{
    let app = spawn_app().await;
    let order = app.place_order().await;
    assert_eq!(
        app.refused(&order.id, &["endotoxin"]).await,
        ErrorCode::AddonSampleNotHeld
    );
    // Three line tests of four units: one retained unit.
    app.receive_units(&order, 4).await;
    assert_eq!(
        app.refused(&order.id, &["terpenes"]).await,
        ErrorCode::AddonMatrixMismatch
    );
    assert_eq!(
        app.refused(&order.id, &["no-such-test"]).await,
        ErrorCode::UnknownTest
    );
    assert_eq!(
        app.refused(&order.id, &["identity-pack"]).await,
        ErrorCode::UnknownTest
    );
    assert_eq!(
        app.refused(&order.id, &["hplc-purity"]).await,
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        app.refused(&order.id, &["endotoxin", "heavy-metals"]).await,
        ErrorCode::AddonSampleInsufficient
    );
    assert!(app.addon(&order.id, &["endotoxin"], None).await.is_ok());
    let other = app.token(uuid::Uuid::now_v7(), &ORDER_SCOPES, None);
    let stranger = app
        .client
        .clone()
        .request_addon(platform::grpc::outgoing(
            RequestAddonRequest {
                reference: order.id.clone(),
                line_number: 1,
                test_ids: vec!["endotoxin".into()],
                confirm: false,
            },
            &other,
        ))
        .await
        .unwrap_err();
    assert_eq!(ApiError::from_status(&stranger).code, ErrorCode::NotFound);

    sqlx::query(
        "UPDATE orders.samples SET retain_until = now() - interval '1 day' WHERE order_id = $1::text::uuid",
    )
    .bind(&order.id)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        app.refused(&order.id, &["endotoxin"]).await,
        ErrorCode::SampleRetentionExpired
    );
    sqlx::query(
        "UPDATE orders.samples SET disposed_at = now(), disposed_by = 'tom' WHERE order_id = $1::text::uuid",
    )
    .bind(&order.id)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        app.refused(&order.id, &["endotoxin"]).await,
        ErrorCode::SampleConsumed
    );
    assert!(app.outbox_events_of("order.addon_requested").await.is_empty());
}

#[tokio::test]
async fn the_paid_supplementary_invoice_moves_the_add_on_once_and_leaves_the_orders_payment_alone() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.receive_units(&order, 5).await;
    let addon = app
        .addon(&order.id, &["endotoxin"], Some("addon-key-0002"))
        .await
        .unwrap()
        .into_inner();
    let invoice = addon.invoice.clone().unwrap();
    let paid = envelope(
        &order.customer_id,
        Data::InvoiceUpdated(proto::payments::InvoiceUpdated {
            invoice_id: invoice.invoice_id.clone(),
            invoice_number: invoice.invoice_number.clone(),
            order_id: order.id.clone(),
            order_number: order.order_number.clone(),
            status: proto::common::InvoiceStatus::Paid as i32,
            legacy_status: "paid".into(),
            amount_paid_cents: 7_500,
            amount_due_cents: 0,
            updated_at: platform::time::rfc3339(platform::time::now()),
            addon_id: Some(addon.id.clone()),
            ..Default::default()
        }),
        "invoice.updated",
    );
    let first = app.publish_payment_event(&paid).await;
    wait_until_consumed(&app, &first).await;
    let second = app.publish_payment_event(&paid).await;
    wait_until_consumed(&app, &second).await;
    let shown = app.get_order(&order.id).await.unwrap();
    assert_eq!(shown.addons[0].status, "paid", "testing has not started");
    assert!(shown.addons[0].paid_at.is_some());
    assert_eq!(shown.addons[0].invoice.as_ref().unwrap().amount_due_cents, 0);
    assert_eq!(
        shown.payment, order.payment,
        "the order's own invoice is untouched"
    );
    assert_eq!(shown.status().as_str(), "sample_received");
    let updates = app.outbox_events_of("order.addon_updated").await;
    assert_eq!(updates.len(), 1, "the redelivery changed nothing");
    let Some(Data::OrderAddonUpdated(data)) = &updates[0].data else {
        panic!("{:?}", updates[0]);
    };
    assert_eq!(data.status, "paid");
    assert_eq!(data.test_ids, ["endotoxin"]);
    assert!(data.accession_number.starts_with("ACC-"));
    // Starting the order's testing puts the paid add-on in testing.
    let token = app.keys.staff("tom", &["lab.technician"]);
    app.client
        .clone()
        .start_testing(platform::grpc::outgoing(
            proto::orders::StartTestingRequest {
                order_reference: order.order_number.clone(),
            },
            &token,
        ))
        .await
        .unwrap();
    let testing = app.get_order(&order.id).await.unwrap();
    assert_eq!(testing.addons[0].status, "in_testing");
    assert_eq!(app.outbox_events_of("order.addon_updated").await.len(), 2);
}

#[tokio::test]
async fn an_unpaid_add_on_whose_invoice_was_voided_with_its_cancelled_order_is_cancelled_once() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.receive_units(&order, 5).await;
    let addon = app
        .addon(&order.id, &["endotoxin"], Some("addon-key-void"))
        .await
        .unwrap()
        .into_inner();
    let invoice = addon.invoice.clone().unwrap();
    let voided = envelope(
        &order.customer_id,
        Data::InvoiceUpdated(proto::payments::InvoiceUpdated {
            invoice_id: invoice.invoice_id.clone(),
            invoice_number: invoice.invoice_number.clone(),
            order_id: order.id.clone(),
            order_number: order.order_number.clone(),
            status: proto::common::InvoiceStatus::Void as i32,
            legacy_status: "void".into(),
            amount_paid_cents: 0,
            amount_due_cents: 0,
            updated_at: platform::time::rfc3339(platform::time::now()),
            addon_id: Some(addon.id.clone()),
            ..Default::default()
        }),
        "invoice.updated",
    );
    let first = app.publish_payment_event(&voided).await;
    wait_until_consumed(&app, &first).await;
    let second = app.publish_payment_event(&voided).await;
    wait_until_consumed(&app, &second).await;
    let shown = app.get_order(&order.id).await.unwrap();
    assert_eq!(shown.addons[0].status, "cancelled");
    assert!(shown.addons[0].paid_at.is_none());
    assert_eq!(shown.addons[0].invoice.as_ref().unwrap().amount_due_cents, 0);
    let updates = app.outbox_events_of("order.addon_updated").await;
    assert_eq!(updates.len(), 1, "the redelivery changed nothing");
    let Some(Data::OrderAddonUpdated(data)) = &updates[0].data else {
        panic!("{:?}", updates[0]);
    };
    assert_eq!(data.status, "cancelled");
    // A payment that still lands later does not revive it (payments-svc keeps it for a refund).
    let mut paid = voided.clone();
    paid.id = uuid::Uuid::now_v7().to_string();
    if let Some(Data::InvoiceUpdated(update)) = paid.data.as_mut() {
        update.status = proto::common::InvoiceStatus::Paid as i32;
        update.legacy_status = "paid".into();
    }
    let late = app.publish_payment_event(&paid).await;
    wait_until_consumed(&app, &late).await;
    let still = app.get_order(&order.id).await.unwrap();
    assert_eq!(still.addons[0].status, "cancelled");
    assert_eq!(app.outbox_events_of("order.addon_updated").await.len(), 1);
}

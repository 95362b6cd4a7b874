//! Cancelled orders: `order.cancelled` credits the invoice down to the charge staff kept, once
//! per order whatever the redeliveries; what was paid above it is refunded (card: through the
//! processor; bank and stablecoin: due until staff record the transfer back), each with one
//! `payment.refunded`.

use crate::consumer::{publish, wait_until_consumed};
use crate::helpers::{TestApp, code_of, data, invoice_request_for, spawn_app};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::orders::OrderCancelled;
use proto::payments as pb;
use uuid::Uuid;

const TOTAL: i64 = 12_500;

pub(crate) fn order_cancelled(customer: Uuid, invoice: &pb::Invoice, charge_cents: i64) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "order.cancelled".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer.to_string(),
        source: "orders-svc".into(),
        subject_id: invoice.order_id.clone(),
        schema_version: 1,
        data: Some(Data::OrderCancelled(OrderCancelled {
            order_id: invoice.order_id.clone(),
            order_number: invoice.order_number.clone(),
            cancel_request_id: Uuid::now_v7().to_string(),
            charge_cents,
            currency: "USD".into(),
            total_cents: invoice.total_cents,
            reason: "wrong compound".into(),
            note: "approved".into(),
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Publishes `event` (twice: a redelivery) and waits until the consumer took both.
async fn deliver_twice(app: &TestApp, event: &EventEnvelope) {
    publish(app, event).await;
    let last = publish(app, event).await;
    wait_until_consumed(app, &last).await;
}

async fn bank_invoice(app: &TestApp, customer: Uuid) -> pb::Invoice {
    app.create_invoice(customer, invoice_request_for(Uuid::now_v7(), TOTAL))
        .await
}

async fn refunds(app: &TestApp, status: Option<&str>) -> Vec<pb::Refund> {
    let request = pb::ListRefundsRequest {
        status: status.map(str::to_owned),
        limit: 0,
    };
    app.client
        .clone()
        .list_refunds(platform::grpc::outgoing(request, &app.staff_token(&[])))
        .await
        .unwrap()
        .into_inner()
        .refunds
}

async fn record_refund(
    app: &TestApp,
    refund_id: &str,
    reference: &str,
) -> Result<pb::RecordRefundResponse, tonic::Status> {
    let request = pb::RecordRefundRequest {
        refund_id: refund_id.into(),
        reference: reference.into(),
    };
    Ok(app
        .client
        .clone()
        .record_refund(platform::grpc::outgoing(request, &app.admin()))
        .await?
        .into_inner())
}

fn invoice_status(invoice: &pb::Invoice) -> String {
    proto::enums::shown::<proto::common::InvoiceStatus>(invoice.status, invoice.legacy_status.clone())
}

#[tokio::test]
async fn an_unpaid_invoice_of_an_order_cancelled_at_no_charge_is_voided_once() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = bank_invoice(&app, customer).await;
    deliver_twice(&app, &order_cancelled(customer, &invoice, 0)).await;

    let voided = app.get_invoice(customer, &invoice.invoice_number).await.unwrap();
    assert_eq!(invoice_status(&voided), "void");
    assert_eq!(voided.amount_due_cents, 0);
    let updates = app.events_of("invoice.updated").await;
    assert_eq!(updates.len(), 1, "one invoice.updated for two deliveries");
    let Data::InvoiceUpdated(update) = data(&updates[0]) else {
        panic!()
    };
    assert_eq!(
        (
            update.legacy_status.as_str(),
            update.legacy_previous_status.as_str()
        ),
        ("void", "open")
    );
    assert!(
        refunds(&app, None).await.is_empty(),
        "nothing was paid, nothing to refund"
    );
    let late = app
        .record(&invoice.invoice_number, TOTAL, "BANK-LATE-1")
        .await
        .unwrap_err();
    assert_eq!(code_of(&late), "conflict", "a void invoice takes no payment");
}

#[tokio::test]
async fn a_paid_bank_invoice_cancelled_at_no_charge_is_voided_and_its_refund_is_due_until_staff_record_it() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = bank_invoice(&app, customer).await;
    app.record(&invoice.invoice_number, TOTAL, "BANK-IN-1")
        .await
        .unwrap();
    deliver_twice(&app, &order_cancelled(customer, &invoice, 0)).await;

    assert_eq!(
        invoice_status(&app.get_invoice(customer, &invoice.invoice_number).await.unwrap()),
        "void"
    );
    let due = refunds(&app, Some("due")).await;
    assert_eq!(due.len(), 1, "one refund for two deliveries");
    let refund = &due[0];
    assert_eq!(
        (refund.amount_cents, refund.paid_with.as_str()),
        (TOTAL, "BANK-IN-1")
    );
    assert_eq!(refund.order_number, invoice.order_number);
    assert!(
        app.events_of("payment.refunded").await.is_empty(),
        "not refunded until recorded"
    );

    let recorded = record_refund(&app, &refund.id, "BANK-OUT-7").await.unwrap();
    assert!(!recorded.already_recorded);
    let recorded_refund = recorded.refund.unwrap();
    assert_eq!(
        (
            recorded_refund.status.as_str(),
            recorded_refund.reference.as_str()
        ),
        ("succeeded", "BANK-OUT-7")
    );
    let again = record_refund(&app, &refund.id, "BANK-OUT-7").await.unwrap();
    assert!(again.already_recorded);
    let other = record_refund(&app, &refund.id, "BANK-OUT-8").await.unwrap_err();
    assert_eq!(code_of(&other), "conflict");
    let events = app.events_of("payment.refunded").await;
    assert_eq!(events.len(), 1);
    let Data::PaymentRefunded(refunded) = data(&events[0]) else {
        panic!()
    };
    assert_eq!(
        (refunded.amount_cents, refunded.reference.as_str()),
        (TOTAL, "BANK-OUT-7")
    );

    let technician = app.staff_token(&["lab.technician"]);
    let request = pb::RecordRefundRequest {
        refund_id: refund.id.clone(),
        reference: "X".into(),
    };
    let refused = app
        .client
        .clone()
        .record_refund(platform::grpc::outgoing(request, &technician))
        .await
        .unwrap_err();
    assert_eq!(code_of(&refused), "forbidden");
}

#[tokio::test]
async fn a_charge_after_receipt_keeps_what_it_covers_and_refunds_or_leaves_due_the_rest() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    // Paid in full: the charge is kept, the rest refunded, the invoice stays paid.
    let paid = bank_invoice(&app, customer).await;
    app.record(&paid.invoice_number, TOTAL, "BANK-IN-2")
        .await
        .unwrap();
    deliver_twice(&app, &order_cancelled(customer, &paid, 2_500)).await;
    let kept = app.get_invoice(customer, &paid.invoice_number).await.unwrap();
    assert_eq!((invoice_status(&kept), kept.amount_due_cents), ("paid".into(), 0));
    let due = refunds(&app, Some("due")).await;
    assert_eq!(
        due.iter().map(|refund| refund.amount_cents).collect::<Vec<_>>(),
        [TOTAL - 2_500]
    );

    // Unpaid: only the charge stays due, and paying it settles the invoice.
    let unpaid = bank_invoice(&app, customer).await;
    deliver_twice(&app, &order_cancelled(customer, &unpaid, 2_500)).await;
    let credited = app.get_invoice(customer, &unpaid.invoice_number).await.unwrap();
    assert_eq!(
        (invoice_status(&credited), credited.amount_due_cents),
        ("open".into(), 2_500)
    );
    let settled = app
        .record(&unpaid.invoice_number, 2_500, "BANK-IN-3")
        .await
        .unwrap();
    assert_eq!(invoice_status(settled.invoice.as_ref().unwrap()), "paid");
    assert_eq!(
        refunds(&app, Some("due")).await.len(),
        1,
        "nothing to refund on the unpaid one"
    );
}

/// Opens the card invoice's checkout and pays it with the sandbox's test card.
async fn paid_card_invoice(app: &TestApp, customer: Uuid) -> pb::Invoice {
    let mut request = invoice_request_for(Uuid::now_v7(), TOTAL);
    request.payment_method = proto::common::PaymentMethod::CardCheckout as i32;
    request.checkout_expires_at = Some(platform::time::to_timestamp(
        platform::time::now() + chrono::Duration::minutes(30),
    ));
    let invoice = app.create_invoice(customer, request).await;
    let session = invoice.checkout.clone().expect("a checkout session").id;
    let gateway = app.keys.mint_service("gateway", None);
    let pay = pb::PayCheckoutRequest {
        session_id: session,
        card: Some(pb::CardInput {
            number: "4242424242424242".into(),
            exp_month: 12,
            exp_year: 2034,
            cvc: "123".into(),
        }),
        saved_card_token: None,
        save_card: false,
    };
    let outcome = app
        .client
        .clone()
        .pay_checkout(platform::grpc::outgoing(pay, &gateway))
        .await
        .unwrap()
        .into_inner()
        .outcome;
    assert_eq!(outcome, "paid");
    invoice
}

#[tokio::test]
async fn a_paid_card_order_cancelled_is_refunded_through_the_processor_once() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = paid_card_invoice(&app, customer).await;
    deliver_twice(&app, &order_cancelled(customer, &invoice, 0)).await;

    let all = refunds(&app, None).await;
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].status.as_str(), all[0].amount_cents),
        ("succeeded", TOTAL),
        "the sandbox processor refunds at once"
    );
    assert!(
        all[0].reference.starts_with("re_sandbox_"),
        "{}",
        all[0].reference
    );
    assert!(
        all[0].paid_with.starts_with("ch_sandbox_"),
        "{}",
        all[0].paid_with
    );
    let events = app.events_of("payment.refunded").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        invoice_status(&app.get_invoice(customer, &invoice.invoice_number).await.unwrap()),
        "void"
    );
    // The job finds nothing left to send.
    let mut tx = app.pool.begin().await.unwrap();
    let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.refunds WHERE status = 'pending'")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(pending, 0);
}

/// Commits `amount` of `kind` for `subject` against the test key, as orders-svc does.
async fn commit(app: &TestApp, customer: Uuid, kind: &str, subject: Uuid, amount: i64) {
    let request = pb::CommitSpendRequest {
        key_id: "key_cancel".into(),
        kind: kind.into(),
        subject_id: subject.to_string(),
        amount_cents: amount,
    };
    app.client
        .clone()
        .commit_spend(platform::tokens::testing::delegated(
            platform::grpc::outgoing(request, &app.service_token(customer)),
            customer,
        ))
        .await
        .unwrap();
}

/// Whether the commitment of `kind` for `subject` was released.
async fn released(app: &TestApp, kind: &str, subject: Uuid) -> bool {
    sqlx::query_scalar(
        "SELECT released_at IS NOT NULL FROM payments.spend_commitments WHERE kind = $1 AND subject_id = $2",
    )
    .bind(kind)
    .bind(subject.to_string())
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_cancelled_orders_unpaid_add_on_invoices_are_voided_once_and_released_while_a_paid_one_stays() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let order_id = Uuid::now_v7();
    let invoice = app
        .create_invoice(customer, invoice_request_for(order_id, TOTAL))
        .await;
    let (unpaid_addon, paid_addon) = (Uuid::now_v7(), Uuid::now_v7());
    let mut addon_invoices = Vec::new();
    for addon_id in [unpaid_addon, paid_addon] {
        commit(&app, customer, "addon", addon_id, 7_500).await;
        let mut request = invoice_request_for(order_id, 7_500);
        request.addon_id = Some(addon_id.to_string());
        addon_invoices.push(app.create_invoice(customer, request).await);
    }
    app.record(&addon_invoices[1].invoice_number, 7_500, "BANK-ADDON-PAID")
        .await
        .unwrap();

    deliver_twice(&app, &order_cancelled(customer, &invoice, 0)).await;

    let unpaid = app
        .get_invoice(customer, &addon_invoices[0].invoice_number)
        .await
        .unwrap();
    assert_eq!(invoice_status(&unpaid), "void");
    assert_eq!(unpaid.amount_due_cents, 0);
    let paid = app
        .get_invoice(customer, &addon_invoices[1].invoice_number)
        .await
        .unwrap();
    assert_eq!(
        invoice_status(&paid),
        "paid",
        "a paid add-on is staff's to settle"
    );
    let mut voids: Vec<Option<String>> = app
        .events_of("invoice.updated")
        .await
        .iter()
        .filter_map(|event| match data(event) {
            Data::InvoiceUpdated(update) if update.legacy_status == "void" => Some(update.addon_id.clone()),
            _ => None,
        })
        .collect();
    voids.sort();
    let mut expected = vec![None, Some(unpaid_addon.to_string())];
    expected.sort();
    assert_eq!(
        voids, expected,
        "the order's invoice and the unpaid add-on's, once each"
    );
    assert!(released(&app, "addon", unpaid_addon).await);
    assert!(!released(&app, "addon", paid_addon).await);
    let late = app
        .record(&addon_invoices[0].invoice_number, 7_500, "BANK-ADDON-LATE")
        .await
        .unwrap_err();
    assert_eq!(
        code_of(&late),
        "conflict",
        "a void add-on invoice takes no payment"
    );
}

#[tokio::test]
async fn a_cancellation_with_a_charge_keeps_only_the_charge_committed_against_the_key() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let order_id = Uuid::now_v7();
    app.set_envelope(customer, "key_cancel", Some(1_000_000), Some(1_000_000))
        .await;
    commit(&app, customer, "order", order_id, TOTAL).await;
    let invoice = app
        .create_invoice(customer, invoice_request_for(order_id, TOTAL))
        .await;
    deliver_twice(&app, &order_cancelled(customer, &invoice, 4_000)).await;
    let (amount, released_at): (i64, Option<chrono::DateTime<chrono::Utc>>) = sqlx::query_as(
        "SELECT amount_cents, released_at FROM payments.spend_commitments WHERE kind = 'order' AND subject_id = $1",
    )
    .bind(order_id.to_string())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        (amount, released_at),
        (4_000, None),
        "the charge stays spent, the rest is freed"
    );
    let envelope_day: i64 = sqlx::query_scalar(
        "SELECT day_committed_cents FROM payments.spend_envelopes WHERE key_id = 'key_cancel'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        envelope_day, 4_000,
        "the key's day total follows, once for two deliveries"
    );

    // At no charge the whole commitment is released.
    let free_order = Uuid::now_v7();
    commit(&app, customer, "order", free_order, TOTAL).await;
    let free_invoice = app
        .create_invoice(customer, invoice_request_for(free_order, TOTAL))
        .await;
    deliver_twice(&app, &order_cancelled(customer, &free_invoice, 0)).await;
    assert!(released(&app, "order", free_order).await);
}

//! RecordBankPayment: settlement, events, idempotency per bank reference, concurrency, roles.

use crate::helpers::{code_of, data, field_of, invoice_request, invoice_request_for, spawn_app};
use platform::principal::{PrincipalKind, roles};
use proto::events::event_envelope::Data;
use uuid::Uuid;

#[tokio::test]
async fn a_full_bank_payment_marks_the_invoice_paid_and_emits_invoice_updated_then_payment_confirmed() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;

    let recorded = app
        .record(&invoice.invoice_number, invoice.total_cents, "FED-20260717-0001")
        .await
        .unwrap();

    assert!(!recorded.already_recorded);
    let paid = recorded.invoice.unwrap();
    assert_eq!(
        (paid.status().as_str(), paid.previous_status().as_str()),
        ("paid", "open")
    );
    assert_eq!((paid.amount_paid_cents, paid.amount_due_cents), (12_500, 0));
    assert!(paid.paid_at.is_some());
    assert_eq!(app.get_invoice(customer, &invoice.id).await.unwrap(), paid);
    let payment = recorded.payment.unwrap();
    assert_eq!(
        (
            payment.rail().as_str(),
            payment.status.as_str(),
            payment.amount_cents
        ),
        ("bank_invoice", "succeeded", 12_500)
    );
    assert_eq!(
        (payment.invoice_id.as_str(), payment.customer_id.as_str()),
        (invoice.id.as_str(), customer.to_string().as_str())
    );
    assert_eq!(payment.external_reference, "FED-20260717-0001");

    let events = app.outbox().await;
    let types: Vec<&str> = events.iter().map(|event| event.r#type.as_str()).collect();
    assert_eq!(types, ["invoice.created", "invoice.updated", "payment.confirmed"]);
    let Data::InvoiceUpdated(updated) = data(&events[1]) else {
        panic!("{:?}", events[1])
    };
    assert_eq!(
        (updated.status().as_str(), updated.previous_status().as_str()),
        ("paid", "open")
    );
    assert_eq!(
        (updated.invoice_id.as_str(), updated.order_id.as_str()),
        (invoice.id.as_str(), invoice.order_id.as_str())
    );
    assert_eq!((updated.amount_paid_cents, updated.amount_due_cents), (12_500, 0));
    let Data::PaymentConfirmed(confirmed) = data(&events[2]) else {
        panic!("{:?}", events[2])
    };
    assert_eq!(
        (confirmed.payment_id.as_str(), confirmed.rail().as_str()),
        (payment.id.as_str(), "bank_invoice")
    );
    assert_eq!(
        (confirmed.invoice_number.as_str(), confirmed.order_number.as_str()),
        (invoice.invoice_number.as_str(), invoice.order_number.as_str())
    );
    assert_eq!(
        (
            confirmed.amount_cents,
            confirmed.currency.as_str(),
            confirmed.transaction_hash.as_deref()
        ),
        (12_500, "USD", None)
    );
    assert!(
        events
            .iter()
            .all(|event| event.customer_id == customer.to_string())
    );
}

#[tokio::test]
async fn a_partial_payment_keeps_the_invoice_open_and_emits_nothing() {
    let app = spawn_app().await;
    let invoice = app.create_invoice(Uuid::now_v7(), invoice_request()).await;

    let recorded = app.record(&invoice.id, 2_500, "WIRE-PART-1").await.unwrap();

    let open = recorded.invoice.unwrap();
    assert_eq!(
        (open.status().as_str(), open.previous_status().as_str()),
        ("open", "")
    );
    assert_eq!((open.amount_paid_cents, open.amount_due_cents), (2_500, 10_000));
    assert!(open.paid_at.is_none());
    assert_eq!(app.outbox().await.len(), 1, "only invoice.created");

    let overpaid = app
        .record(&invoice.id, 20_000, "WIRE-PART-2")
        .await
        .unwrap()
        .invoice
        .unwrap();
    assert_eq!(
        (
            overpaid.status().as_str(),
            overpaid.amount_paid_cents,
            overpaid.amount_due_cents
        ),
        ("paid", 22_500, 0)
    );
    let confirmed = app.events_of("payment.confirmed").await;
    let Data::PaymentConfirmed(confirmed) = data(&confirmed[0]) else {
        panic!()
    };
    assert_eq!(confirmed.amount_cents, 22_500);
}

#[tokio::test]
async fn recording_the_same_bank_reference_twice_records_one_payment_and_one_set_of_events() {
    let app = spawn_app().await;
    let invoice = app.create_invoice(Uuid::now_v7(), invoice_request()).await;

    let first = app
        .record(&invoice.invoice_number, invoice.total_cents, "WIRE-42")
        .await
        .unwrap();
    let again = app
        .record(&invoice.invoice_number, invoice.total_cents, "WIRE-42")
        .await
        .unwrap();
    let by_id = app
        .record(&invoice.id, invoice.total_cents, "  WIRE-42 ")
        .await
        .unwrap();

    assert!(!first.already_recorded);
    assert!(again.already_recorded && by_id.already_recorded);
    assert_eq!(again.payment, first.payment);
    assert_eq!(again.invoice, first.invoice);
    assert_eq!(by_id.payment, first.payment);
    let payments: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(payments, 1);
    assert_eq!(app.events_of("invoice.updated").await.len(), 1);
    assert_eq!(app.events_of("payment.confirmed").await.len(), 1);
}

#[tokio::test]
async fn concurrent_calls_with_one_bank_reference_record_it_once() {
    let app = spawn_app().await;
    let invoice = app.create_invoice(Uuid::now_v7(), invoice_request()).await;

    let calls = (0..10).map(|_| app.record(&invoice.id, 1_000, "WIRE-RACE"));
    let outcomes: Vec<_> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();

    assert_eq!(
        outcomes
            .iter()
            .filter(|outcome| !outcome.already_recorded)
            .count(),
        1
    );
    assert!(
        outcomes
            .iter()
            .all(|outcome| outcome.payment == outcomes[0].payment)
    );
    let paid = app
        .get_invoice(invoice.customer_id.parse().unwrap(), &invoice.id)
        .await
        .unwrap();
    assert_eq!(paid.amount_paid_cents, 1_000);
}

#[tokio::test]
async fn twenty_concurrent_partial_payments_pay_the_invoice_exactly_once() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app
        .create_invoice(customer, invoice_request_for(Uuid::now_v7(), 20_000))
        .await;

    let calls = (0..20).map(|index| {
        let reference = format!("WIRE-{index:02}");
        let invoice_id = invoice.id.clone();
        let app = &app;
        async move { app.record(&invoice_id, 1_000, &reference).await }
    });
    let outcomes: Vec<_> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();

    assert!(outcomes.iter().all(|outcome| !outcome.already_recorded));
    let completing: Vec<_> = outcomes
        .iter()
        .filter(|outcome| outcome.invoice.as_ref().unwrap().status().as_str() == "paid")
        .collect();
    assert_eq!(completing.len(), 1, "exactly one payment completes the invoice");
    let paid = app.get_invoice(customer, &invoice.id).await.unwrap();
    assert_eq!(
        (
            paid.status().as_str(),
            paid.amount_paid_cents,
            paid.amount_due_cents
        ),
        ("paid", 20_000, 0)
    );
    let payments: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(payments, 20);
    let confirmed = app.events_of("payment.confirmed").await;
    assert_eq!(confirmed.len(), 1);
    assert_eq!(app.events_of("invoice.updated").await.len(), 1);
    let Data::PaymentConfirmed(confirmed) = data(&confirmed[0]) else {
        panic!()
    };
    assert_eq!(confirmed.payment_id, completing[0].payment.as_ref().unwrap().id);
    assert_eq!(confirmed.amount_cents, 20_000);
}

#[tokio::test]
async fn paying_a_paid_invoice_is_a_conflict() {
    let app = spawn_app().await;
    let invoice = app.create_invoice(Uuid::now_v7(), invoice_request()).await;
    app.record(&invoice.id, invoice.total_cents, "WIRE-1")
        .await
        .unwrap();

    let status = app
        .record(&invoice.invoice_number, 100, "WIRE-2")
        .await
        .unwrap_err();

    assert_eq!(
        (code_of(&status), status.code()),
        ("conflict", tonic::Code::FailedPrecondition)
    );
    assert_eq!(
        status.message(),
        format!(
            "invoice {} is paid and accepts no payment",
            invoice.invoice_number
        )
    );
    let payments: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(payments, 1);
}

#[tokio::test]
async fn only_staff_with_the_payments_admin_role_record_bank_payments() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    let callers = [
        app.customer_token(customer, &["invoices:read", "payments:read", "payments:write"]),
        app.service_token(customer),
        app.staff_token(&[roles::CATALOG_ADMIN]),
    ];
    for token in callers {
        let status = app
            .record_with(&token, &invoice.id, 100, "WIRE-X")
            .await
            .unwrap_err();
        assert_eq!(
            (code_of(&status), status.code()),
            ("forbidden", tonic::Code::PermissionDenied)
        );
    }
    let payments: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(payments, 0);
}

#[tokio::test]
async fn a_recorded_payment_names_the_operator_who_recorded_it_also_when_replayed() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    let dana = app.keys.staff("dana", &[roles::PAYMENTS_ADMIN]);
    let recorded = app
        .record_with(&dana, &invoice.id, 100, "WIRE-AUDIT")
        .await
        .unwrap();
    assert_eq!(recorded.payment.unwrap().recorded_by.as_deref(), Some("dana"));
    let erin = app.keys.staff("erin", &[roles::PAYMENTS_ADMIN]);
    let again = app
        .record_with(&erin, &invoice.id, 100, "WIRE-AUDIT")
        .await
        .unwrap();
    assert!(again.already_recorded);
    assert_eq!(again.payment.unwrap().recorded_by.as_deref(), Some("dana"));
    let stored: Option<String> = sqlx::query_scalar(
        "SELECT recorded_by FROM payments.payments WHERE external_reference = 'WIRE-AUDIT'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(stored.as_deref(), Some("dana"));
}

#[tokio::test]
async fn tokens_for_another_service_or_signed_by_a_service_key_are_refused() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    let for_orders = platform::tokens::testing::DevTokens::new("orders-svc");
    let refused = [
        // The gateway's customer token addressed to orders-svc.
        for_orders.customer(customer, &["invoices:read"]),
        // An operator's token addressed to orders-svc.
        for_orders.staff("dana", &[roles::PAYMENTS_ADMIN]),
        // orders-svc's own key minting a staff principal for payments-svc.
        app.keys.forged_by("orders-svc", &{
            let mut operator = platform::principal::Principal::service("dana", None);
            operator.kind = PrincipalKind::Staff;
            operator.roles = vec![roles::PAYMENTS_ADMIN.into()];
            operator
        }),
    ];
    for token in refused {
        let status = app
            .record_with(&token, &invoice.id, 100, "WIRE-FORGED")
            .await
            .unwrap_err();
        assert_eq!(code_of(&status), "unauthenticated");
    }
    let status = app
        .get_invoice_with(&for_orders.customer(customer, &["invoices:read"]), &invoice.id)
        .await
        .unwrap_err();
    assert_eq!(code_of(&status), "unauthenticated");
}

#[tokio::test]
async fn bank_payment_input_errors_and_unknown_invoices_are_reported() {
    let app = spawn_app().await;
    let invoice = app.create_invoice(Uuid::now_v7(), invoice_request()).await;
    let cases = [
        (invoice.id.as_str(), 0, "WIRE-1", "amountCents"),
        (invoice.id.as_str(), 100, " ", "bankReference"),
        ("", 100, "WIRE-1", "invoiceReference"),
    ];
    for (reference, amount, bank_reference, field) in cases {
        let status = app.record(reference, amount, bank_reference).await.unwrap_err();
        assert_eq!(
            (code_of(&status), field_of(&status).as_str()),
            ("invalid_request", field)
        );
    }
    let long = "R".repeat(201);
    assert_eq!(
        field_of(&app.record(&invoice.id, 100, &long).await.unwrap_err()),
        "bankReference"
    );
    for unknown in [
        Uuid::now_v7().to_string(),
        "INV-1999-000001".to_owned(),
        invoice.order_id.clone(),
    ] {
        let status = app.record(&unknown, 100, "WIRE-1").await.unwrap_err();
        assert_eq!(code_of(&status), "not_found", "{unknown}");
    }
}

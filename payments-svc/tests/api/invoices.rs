//! CreateInvoice and GetInvoice.

use crate::helpers::{code_of, data, field_of, invoice_request, spawn_app};
use proto::events::event_envelope::Data;
use proto::payments as pb;
use uuid::Uuid;

#[tokio::test]
async fn create_invoice_issues_a_numbered_itemized_bank_invoice_and_enqueues_invoice_created() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let request = invoice_request();

    let invoice = app.create_invoice(customer, request.clone()).await;

    let (prefix, sequence) = invoice.invoice_number.rsplit_once('-').unwrap();
    assert_eq!(prefix, format!("INV-{}", chrono::Utc::now().format("%Y")));
    assert_eq!(sequence.len(), 6, "{}", invoice.invoice_number);
    assert!(sequence.bytes().all(|byte| byte.is_ascii_digit()));
    assert_eq!(
        (invoice.status().as_str(), invoice.previous_status().as_str()),
        ("open", "")
    );
    assert_eq!(invoice.customer_id, customer.to_string());
    assert_eq!(
        (invoice.order_id.as_str(), invoice.order_number.as_str()),
        (request.order_id.as_str(), request.order_number.as_str())
    );
    assert_eq!(
        (invoice.payment_method().as_str(), invoice.currency.as_str()),
        ("bank_invoice", "USD")
    );
    assert_eq!(invoice.lines, request.lines);
    assert_eq!(
        (
            invoice.total_cents,
            invoice.amount_paid_cents,
            invoice.amount_due_cents
        ),
        (12_500, 0, 12_500)
    );
    let issued = invoice.issued_at.unwrap();
    assert_eq!(invoice.due_at.unwrap().seconds - issued.seconds, 30 * 86_400);
    assert!(invoice.paid_at.is_none());
    let bank = invoice.bank_instructions.clone().expect("bank instructions");
    assert_eq!(bank.beneficiary, "Meridian Analytical Laboratories, Inc.");
    assert_eq!(bank.reference, invoice.invoice_number);
    assert!(!bank.bank_name.is_empty() && !bank.account_number.is_empty());
    assert!(!bank.routing_number.is_empty() && !bank.swift.is_empty());

    let events = app.outbox().await;
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(
        (event.r#type.as_str(), event.source.as_str()),
        ("invoice.created", "payments-svc")
    );
    assert_eq!(
        (event.customer_id.as_str(), event.subject_id.as_str()),
        (customer.to_string().as_str(), invoice.id.as_str())
    );
    let Data::InvoiceCreated(created) = data(event) else {
        panic!("not invoice.created: {event:?}")
    };
    assert_eq!(created.invoice_id, invoice.id);
    assert_eq!(created.invoice_number, invoice.invoice_number);
    assert_eq!(
        (created.order_id.as_str(), created.order_number.as_str()),
        (invoice.order_id.as_str(), invoice.order_number.as_str())
    );
    assert_eq!(
        (
            created.status().as_str(),
            created.payment_method().as_str(),
            created.currency.as_str()
        ),
        ("open", "bank_invoice", "USD")
    );
    assert_eq!((created.total_cents, created.amount_due_cents), (12_500, 12_500));
    let issued_at = platform::time::rfc3339(platform::time::from_timestamp(&issued).unwrap());
    assert_eq!(created.issued_at, issued_at);
    assert!(created.due_at.ends_with('Z') && created.due_at > created.issued_at);
}

#[tokio::test]
async fn creating_the_invoice_of_an_order_twice_returns_the_same_invoice_and_one_event() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let request = invoice_request();

    let first = app.create_invoice(customer, request.clone()).await;
    let mut changed = request.clone();
    changed.lines.truncate(1);
    changed.total_cents = changed.lines[0].amount_cents;
    let second = app.create_invoice(customer, changed).await;

    assert_eq!(second, first);
    assert_eq!(app.events_of("invoice.created").await.len(), 1);
}

#[tokio::test]
async fn concurrent_creates_for_one_order_issue_one_invoice() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let request = invoice_request();

    let calls = (0..8).map(|_| app.create_invoice(customer, request.clone()));
    let invoices = futures::future::join_all(calls).await;

    assert!(invoices.iter().all(|invoice| invoice.id == invoices[0].id));
    assert_eq!(app.events_of("invoice.created").await.len(), 1);
}

#[tokio::test]
async fn customers_and_staff_cannot_create_invoices() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    for token in [
        app.customer_token(customer, &["invoices:read", "orders:write"]),
        app.admin(),
    ] {
        let request = platform::grpc::outgoing(invoice_request(), &token);
        let status = app.client.clone().create_invoice(request).await.unwrap_err();
        assert_eq!(code_of(&status), "forbidden");
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
    }
    let unsigned = tonic::Request::new(invoice_request());
    assert_eq!(
        code_of(&app.client.clone().create_invoice(unsigned).await.unwrap_err()),
        "unauthenticated"
    );
    assert!(app.outbox().await.is_empty());
}

#[tokio::test]
async fn create_invoice_with_inconsistent_lines_is_rejected_naming_the_field() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let token = app.service_token(customer);
    let mut cases: Vec<(pb::CreateInvoiceRequest, &str)> = Vec::new();
    let mut no_lines = invoice_request();
    no_lines.lines.clear();
    cases.push((no_lines, "lines"));
    let mut zero_quantity = invoice_request();
    zero_quantity.lines[1].quantity = 0;
    cases.push((zero_quantity, "lines[1].quantity"));
    let mut wrong_amount = invoice_request();
    wrong_amount.lines[0].amount_cents += 1;
    cases.push((wrong_amount, "lines[0].amountCents"));
    let mut wrong_total = invoice_request();
    wrong_total.total_cents += 1;
    cases.push((wrong_total, "totalCents"));
    let mut bad_order = invoice_request();
    bad_order.order_id = "order-1".into();
    cases.push((bad_order, "orderId"));
    for (request, field) in cases {
        let status = app
            .client
            .clone()
            .create_invoice(platform::tokens::testing::delegated(
                platform::grpc::outgoing(request, &token),
                customer,
            ))
            .await
            .unwrap_err();
        assert_eq!(
            (code_of(&status), field_of(&status).as_str()),
            ("invalid_request", field)
        );
    }
    let mut bad_method = invoice_request();
    // An alias as text (what an orders-svc of the release before could send): refused too.
    bad_method.payment_method = 0;
    bad_method.legacy_payment_method = "stablecoin_erc20".into();
    let status = app
        .client
        .clone()
        .create_invoice(platform::tokens::testing::delegated(
            platform::grpc::outgoing(bad_method, &token),
            customer,
        ))
        .await
        .unwrap_err();
    assert_eq!(code_of(&status), "invalid_payment_method");
    assert!(app.outbox().await.is_empty());
}

#[tokio::test]
async fn card_invoices_carry_no_bank_instructions() {
    let app = spawn_app().await;
    let mut request = invoice_request();
    request.payment_method = proto::common::PaymentMethod::CardCheckout as i32;
    let invoice = app.create_invoice(Uuid::now_v7(), request).await;
    assert_eq!(invoice.payment_method().as_str(), "card_checkout");
    assert!(invoice.bank_instructions.is_none());
}

#[tokio::test]
async fn an_invoice_is_found_by_its_uuid_its_number_and_its_order_id() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    app.create_invoice(customer, invoice_request()).await;

    for reference in [&invoice.id, &invoice.invoice_number, &invoice.order_id] {
        assert_eq!(
            app.get_invoice(customer, reference).await.unwrap(),
            invoice,
            "by {reference}"
        );
    }
    for unknown in [
        Uuid::now_v7().to_string(),
        "INV-1999-000001".to_owned(),
        invoice.invoice_number.to_lowercase(),
    ] {
        let status = app.get_invoice(customer, &unknown).await.unwrap_err();
        assert_eq!(
            (code_of(&status), status.code()),
            ("not_found", tonic::Code::NotFound),
            "{unknown}"
        );
    }
}

#[tokio::test]
async fn another_customers_invoice_is_not_found() {
    let app = spawn_app().await;
    let owner = Uuid::now_v7();
    let stranger = Uuid::now_v7();
    let invoice = app.create_invoice(owner, invoice_request()).await;

    for reference in [&invoice.id, &invoice.invoice_number, &invoice.order_id] {
        let status = app.get_invoice(stranger, reference).await.unwrap_err();
        assert_eq!(code_of(&status), "not_found");
        assert_eq!(status.message(), "invoice not found");
    }
    let listed = app
        .list_invoices(stranger, pb::ListInvoicesRequest::default())
        .await
        .unwrap();
    assert!(listed.invoices.is_empty());
}

#[tokio::test]
async fn reading_invoices_needs_the_invoices_read_scope() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    let token = app.customer_token(customer, &["payments:read"]);

    let get = pb::GetInvoiceRequest {
        reference: invoice.id.clone(),
    };
    let status = app
        .client
        .clone()
        .get_invoice(platform::grpc::outgoing(get, &token))
        .await
        .unwrap_err();
    assert_eq!(code_of(&status), "insufficient_scope");
    let list = pb::ListInvoicesRequest::default();
    let status = app
        .client
        .clone()
        .list_invoices(platform::grpc::outgoing(list, &token))
        .await
        .unwrap_err();
    assert_eq!(code_of(&status), "insufficient_scope");
}

#[tokio::test]
async fn a_stablecoin_invoice_is_refused_when_the_deployment_runs_no_stablecoin_rail_and_nothing_is_written()
{
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let mut request = invoice_request();
    request.payment_method = proto::common::PaymentMethod::ChainStablecoin as i32;
    let request = platform::tokens::testing::delegated(
        platform::grpc::outgoing(request, &app.service_token(customer)),
        customer,
    );
    let refused = app.client.clone().create_invoice(request).await.unwrap_err();
    assert_eq!(code_of(&refused), "payment_method_unavailable");
    assert!(app.events_of("invoice.created").await.is_empty());
}

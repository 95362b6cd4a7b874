//! ListInvoices, GetPayment and ListPayments: pagination, filters and tenancy.

use crate::helpers::{code_of, field_of, invoice_request, spawn_app};
use proto::payments as pb;
use uuid::Uuid;

#[tokio::test]
async fn listing_invoices_pages_newest_first_with_a_cursor() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let mut created = Vec::new();
    for _ in 0..5 {
        created.push(app.create_invoice(customer, invoice_request()).await.id);
    }
    app.create_invoice(Uuid::now_v7(), invoice_request()).await;
    created.reverse();

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let request = pb::ListInvoicesRequest {
            limit: Some(2),
            cursor: cursor.clone(),
            ..Default::default()
        };
        let page = app.list_invoices(customer, request).await.unwrap();
        pages += 1;
        assert!(page.invoices.len() <= 2);
        assert!(
            page.invoices.iter().all(|invoice| !invoice.lines.is_empty()),
            "lines are loaded"
        );
        seen.extend(page.invoices.into_iter().map(|invoice| invoice.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, created);
    assert_eq!(pages, 3);

    let everything = app
        .list_invoices(customer, pb::ListInvoicesRequest::default())
        .await
        .unwrap();
    assert_eq!(everything.invoices.len(), 5);
    assert_eq!(everything.next_cursor, None);
}

#[tokio::test]
async fn listing_invoices_filters_by_status_and_order() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let paid = app.create_invoice(customer, invoice_request()).await;
    let open = app.create_invoice(customer, invoice_request()).await;
    app.record(&paid.invoice_number, paid.total_cents, "WIRE-FILTER")
        .await
        .unwrap();

    let by_status = |status: &str| pb::ListInvoicesRequest {
        status: Some(status.into()),
        ..Default::default()
    };
    let ids = |response: pb::ListInvoicesResponse| {
        response
            .invoices
            .into_iter()
            .map(|invoice| invoice.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(app.list_invoices(customer, by_status("paid")).await.unwrap()),
        vec![paid.id.clone()]
    );
    assert_eq!(
        ids(app.list_invoices(customer, by_status("open")).await.unwrap()),
        vec![open.id.clone()]
    );
    assert!(ids(app.list_invoices(customer, by_status("void")).await.unwrap()).is_empty());
    let by_order = pb::ListInvoicesRequest {
        order_id: Some(open.order_id.clone()),
        ..Default::default()
    };
    assert_eq!(
        ids(app.list_invoices(customer, by_order).await.unwrap()),
        vec![open.id]
    );
}

#[tokio::test]
async fn malformed_list_parameters_are_invalid_requests() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let cases = [
        (
            pb::ListInvoicesRequest {
                status: Some("settled".into()),
                ..Default::default()
            },
            "invalid_request",
            "status",
        ),
        (
            pb::ListInvoicesRequest {
                order_id: Some("ORD-1".into()),
                ..Default::default()
            },
            "invalid_request",
            "orderId",
        ),
        (
            pb::ListInvoicesRequest {
                limit: Some(0),
                ..Default::default()
            },
            "invalid_request",
            "limit",
        ),
        (
            pb::ListInvoicesRequest {
                limit: Some(201),
                ..Default::default()
            },
            "invalid_request",
            "limit",
        ),
        (
            pb::ListInvoicesRequest {
                cursor: Some("garbage".into()),
                ..Default::default()
            },
            "invalid_cursor",
            "cursor",
        ),
    ];
    for (request, code, field) in cases {
        let status = app.list_invoices(customer, request).await.unwrap_err();
        assert_eq!((code_of(&status), field_of(&status).as_str()), (code, field));
    }
    let payments = pb::ListPaymentsRequest {
        invoice_id: Some("INV-1".into()),
        ..Default::default()
    };
    let request = platform::grpc::outgoing(payments, &app.reader(customer));
    let status = app.client.clone().list_payments(request).await.unwrap_err();
    assert_eq!(
        (code_of(&status), field_of(&status).as_str()),
        ("invalid_request", "invoiceId")
    );
}

#[tokio::test]
async fn payments_are_read_and_listed_by_their_owner_only() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let stranger = Uuid::now_v7();
    let first = app.create_invoice(customer, invoice_request()).await;
    let second = app.create_invoice(customer, invoice_request()).await;
    let partial = app
        .record(&first.id, 100, "WIRE-A")
        .await
        .unwrap()
        .payment
        .unwrap();
    let full = app
        .record(&second.id, second.total_cents, "WIRE-B")
        .await
        .unwrap()
        .payment
        .unwrap();
    let later = app
        .record(&first.id, 200, "WIRE-C")
        .await
        .unwrap()
        .payment
        .unwrap();

    let mut client = app.client.clone();
    let get = |reference: &str, token: &str| {
        platform::grpc::outgoing(
            pb::GetPaymentRequest {
                reference: reference.into(),
            },
            token,
        )
    };
    let read = client
        .get_payment(get(&partial.id, &app.reader(customer)))
        .await
        .unwrap()
        .into_inner()
        .payment
        .unwrap();
    assert_eq!(read, partial);
    assert_eq!(
        (
            read.rail().as_str(),
            read.status.as_str(),
            read.external_reference.as_str()
        ),
        ("bank_invoice", "succeeded", "WIRE-A")
    );
    assert_eq!(
        (read.invoice_number.as_str(), read.order_id.as_str()),
        (first.invoice_number.as_str(), first.order_id.as_str())
    );
    for reference in [partial.id.as_str(), "WIRE-A", "not-a-uuid"] {
        let status = client
            .get_payment(get(reference, &app.reader(stranger)))
            .await
            .unwrap_err();
        assert_eq!(code_of(&status), "not_found", "{reference}");
    }
    let no_scope = app.customer_token(customer, &["invoices:read"]);
    let status = client.get_payment(get(&partial.id, &no_scope)).await.unwrap_err();
    assert_eq!(code_of(&status), "insufficient_scope");

    let list = |request: pb::ListPaymentsRequest, owner: Uuid| {
        let mut client = app.client.clone();
        let request = platform::grpc::outgoing(request, &app.reader(owner));
        async move { client.list_payments(request).await.unwrap().into_inner() }
    };
    let ids = |response: pb::ListPaymentsResponse| {
        response
            .payments
            .into_iter()
            .map(|payment| payment.id)
            .collect::<Vec<_>>()
    };
    let all = list(pb::ListPaymentsRequest::default(), customer).await;
    assert_eq!(
        ids(all),
        vec![later.id.clone(), full.id.clone(), partial.id.clone()]
    );
    let of_first = pb::ListPaymentsRequest {
        invoice_id: Some(first.id.clone()),
        ..Default::default()
    };
    assert_eq!(
        ids(list(of_first, customer).await),
        vec![later.id.clone(), partial.id.clone()]
    );
    let page = list(
        pb::ListPaymentsRequest {
            limit: Some(2),
            ..Default::default()
        },
        customer,
    )
    .await;
    let cursor = page.next_cursor.clone().expect("a second page");
    assert_eq!(ids(page), vec![later.id, full.id]);
    let rest = list(
        pb::ListPaymentsRequest {
            limit: Some(2),
            cursor: Some(cursor),
            ..Default::default()
        },
        customer,
    )
    .await;
    assert_eq!(rest.next_cursor, None);
    assert_eq!(ids(rest), vec![partial.id]);
    assert!(
        list(pb::ListPaymentsRequest::default(), stranger)
            .await
            .payments
            .is_empty()
    );
}

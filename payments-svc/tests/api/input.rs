//! The input rules over gRPC (internal callers such as labctl bypass the gateway): a control
//! character in any string of a request is InvalidArgument `invalid_request` naming the field,
//! never Internal, and nothing is written.

use crate::helpers::{code_of, field_of, invoice_request, spawn_app};
use proto::payments as pb;
use uuid::Uuid;

const CONTROLS: [&str; 5] = ["\u{0}", "\u{1}", "\u{1f}", "\u{7f}", "\u{85}"];

fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, field: &str) {
    let status = result.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert_eq!(
        (code_of(&status), field_of(&status).as_str()),
        ("invalid_request", field)
    );
}

#[tokio::test]
async fn a_control_character_in_a_reference_is_invalid_not_internal() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let invoice = app.create_invoice(customer, invoice_request()).await;
    let mut client = app.client.clone();
    let reader = app.reader(customer);
    for control in CONTROLS {
        let reference = format!("{}{control}", invoice.invoice_number);
        assert_refused(app.get_invoice(customer, &reference).await, "reference");
        let get_payment = pb::GetPaymentRequest {
            reference: format!("PAY-{control}"),
        };
        let request = platform::grpc::outgoing(get_payment, &reader);
        assert_refused(client.get_payment(request).await, "reference");
        let by_order = pb::ListInvoicesRequest {
            order_id: Some(format!("{control}{}", invoice.order_id)),
            ..Default::default()
        };
        assert_refused(app.list_invoices(customer, by_order).await, "orderId");
        let by_invoice = pb::ListPaymentsRequest {
            invoice_id: Some(format!("{}{control}", invoice.id)),
            ..Default::default()
        };
        let request = platform::grpc::outgoing(by_invoice, &reader);
        assert_refused(client.list_payments(request).await, "invoiceId");
        let recorded = app
            .record(&format!("{}{control}", invoice.id), 100, "WIRE-1")
            .await;
        assert_refused(recorded, "invoiceReference");
        let recorded = app.record(&invoice.id, 100, &format!("WIRE{control}1")).await;
        assert_refused(recorded, "bankReference");
    }
    assert!(
        app.events_of("payment.confirmed").await.is_empty(),
        "nothing was recorded"
    );
    assert_eq!(
        app.get_invoice(customer, &invoice.invoice_number).await.unwrap(),
        invoice
    );
}

#[tokio::test]
async fn a_control_character_in_an_invoice_line_is_invalid_not_internal() {
    let app = spawn_app().await;
    let mut request = invoice_request();
    request.lines[1].description = "Conformity\u{0} sample".into();
    let customer = Uuid::now_v7();
    let message = platform::tokens::testing::delegated(
        platform::grpc::outgoing(request, &app.service_token(customer)),
        customer,
    );
    assert_refused(
        app.client.clone().create_invoice(message).await,
        "lines[1].description",
    );
    assert!(app.outbox().await.is_empty());
}

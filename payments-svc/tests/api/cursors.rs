//! Cursors are opaque and belong to their listing: an edited cursor, or one of another listing,
//! is `invalid_cursor`; the cursor as issued keeps working.

use crate::helpers::{code_of, field_of, invoice_request, spawn_app};
use proto::payments as pb;
use uuid::Uuid;

#[tokio::test]
async fn a_cursor_edited_or_issued_by_another_listing_is_invalid_cursor() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    for _ in 0..3 {
        app.create_invoice(customer, invoice_request()).await;
    }
    let first = app
        .list_invoices(
            customer,
            pb::ListInvoicesRequest {
                limit: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let cursor = first.next_cursor.expect("a second page");
    let mut edited = cursor.clone().into_bytes();
    let middle = edited.len() / 2;
    edited[middle] = if edited[middle] == b'A' { b'B' } else { b'A' };
    let edited = String::from_utf8(edited).unwrap();
    for bad in [
        edited,
        format!("{cursor}x"),
        cursor[..cursor.len() - 4].to_owned(),
    ] {
        let request = pb::ListInvoicesRequest {
            cursor: Some(bad.clone()),
            ..Default::default()
        };
        let status = app.list_invoices(customer, request).await.unwrap_err();
        assert_eq!(
            (code_of(&status), field_of(&status).as_str()),
            ("invalid_cursor", "cursor"),
            "{bad}"
        );
    }
    let payments = pb::ListPaymentsRequest {
        cursor: Some(cursor.clone()),
        ..Default::default()
    };
    let status = app
        .client
        .clone()
        .list_payments(platform::grpc::outgoing(payments, &app.reader(customer)))
        .await
        .unwrap_err();
    assert_eq!(
        code_of(&status),
        "invalid_cursor",
        "an invoices cursor is not a payments cursor"
    );
    let second = app
        .list_invoices(
            customer,
            pb::ListInvoicesRequest {
                limit: Some(1),
                cursor: Some(cursor),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(second.invoices.len(), 1, "the untouched cursor still works");
}

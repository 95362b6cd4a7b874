//! A bank reference names one transfer: recorded again with another invoice or amount it is 409
//! `bank_reference_conflict` and changes nothing, even when such recordings race.

use crate::helpers::{code_of, invoice_request, invoice_request_for, spawn_app};
use uuid::Uuid;

#[tokio::test]
async fn a_bank_reference_recorded_again_with_another_invoice_or_amount_is_a_conflict_that_changes_nothing() {
    let app = spawn_app().await;
    let invoice = app
        .create_invoice(Uuid::now_v7(), invoice_request_for(Uuid::now_v7(), 20_000))
        .await;
    let first = app.record(&invoice.id, 5_000, "WIRE-77").await.unwrap();
    assert!(!first.already_recorded);
    let elsewhere = app.create_invoice(Uuid::now_v7(), invoice_request()).await;

    for (reference, amount) in [
        (elsewhere.id.as_str(), 5_000),
        (elsewhere.invoice_number.as_str(), 5_000),
        (invoice.id.as_str(), 5_001),
        (invoice.invoice_number.as_str(), 4_999),
    ] {
        let status = app.record(reference, amount, "WIRE-77").await.unwrap_err();
        assert_eq!(
            (code_of(&status), status.code()),
            ("bank_reference_conflict", tonic::Code::AlreadyExists),
            "{reference} {amount}"
        );
        let details = platform::error::ApiError::from_status(&status).details.unwrap();
        assert_eq!(details["invoiceNumber"], invoice.invoice_number.as_str());
        assert_eq!(details["amountCents"], 5_000);
        assert_eq!(details["field"], "bankReference");
    }
    // Concurrent conflicting recordings: one of each kind, none applied twice.
    let calls = (0..6).map(|index| {
        let (reference, amount) = if index % 2 == 0 {
            (elsewhere.id.clone(), 100)
        } else {
            (invoice.id.clone(), 5_000)
        };
        let app = &app;
        async move { app.record(&reference, amount, "WIRE-78").await }
    });
    let outcomes = futures::future::join_all(calls).await;
    let recorded = outcomes
        .iter()
        .filter(|outcome| outcome.as_ref().is_ok_and(|outcome| !outcome.already_recorded))
        .count();
    assert_eq!(recorded, 1, "{outcomes:?}");
    assert!(outcomes.iter().all(|outcome| match outcome {
        Ok(_) => true,
        Err(status) => code_of(status) == "bank_reference_conflict",
    }));

    let payments: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(payments, 2, "WIRE-77 once and WIRE-78 once");
    let untouched = app
        .get_invoice(elsewhere.customer_id.parse().unwrap(), &elsewhere.id)
        .await
        .unwrap();
    let expected_elsewhere = if outcomes.iter().any(|outcome| {
        outcome
            .as_ref()
            .is_ok_and(|outcome| outcome.invoice.as_ref().unwrap().id == elsewhere.id)
    }) {
        100
    } else {
        0
    };
    assert_eq!(untouched.amount_paid_cents, expected_elsewhere);
}

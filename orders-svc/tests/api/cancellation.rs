//! Cancellation requests: the customer files one (idempotent per key, one pending per order),
//! staff approve or decline it under the order's lock, and every outcome is an event and shows on
//! the order. Approval before receipt charges nothing; after receipt it needs a charge.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::events::event_envelope::Data;
use proto::orders::{
    CancelDecision, DecideCancelRequestRequest, DecideCancelRequestResponse, ListCancelRequestsRequest,
    Order, ReceiveSamplesRequest, RequestCancellationRequest, RequestCancellationResponse, SampleReceipt,
};
use tonic::{Response, Status};

const OPERATOR: &str = "ana";

impl TestApp {
    async fn request_cancellation_as(
        &self,
        token: &str,
        key: &str,
        reference: &str,
        reason: &str,
        confirm: bool,
    ) -> Result<Response<RequestCancellationResponse>, Status> {
        let request = RequestCancellationRequest {
            reference: reference.to_owned(),
            reason: reason.to_owned(),
            confirm,
        };
        self.client
            .clone()
            .request_cancellation(platform::grpc::outgoing_idempotent(request, token, key))
            .await
    }

    async fn request_cancellation(
        &self,
        key: &str,
        reference: &str,
    ) -> Result<Response<RequestCancellationResponse>, Status> {
        self.request_cancellation_as(
            &self.default_token(),
            key,
            reference,
            "ordered the wrong compound",
            true,
        )
        .await
    }

    async fn decide(
        &self,
        reference: &str,
        decision: CancelDecision,
        charge_cents: Option<i64>,
    ) -> Result<DecideCancelRequestResponse, Status> {
        let token = self.keys.staff(OPERATOR, &["payments.admin"]);
        let request = DecideCancelRequestRequest {
            reference: reference.to_owned(),
            decision: decision as i32,
            note: "as you asked".into(),
            charge_cents,
        };
        Ok(self
            .client
            .clone()
            .decide_cancel_request(platform::grpc::outgoing(request, &token))
            .await?
            .into_inner())
    }

    async fn receive(&self, order: &Order) {
        let token = self.keys.staff("tom", &["lab.technician"]);
        let request = ReceiveSamplesRequest {
            order_reference: order.order_number.clone(),
            tracking_number: String::new(),
            samples: order
                .lines
                .iter()
                .map(|line| SampleReceipt {
                    line_number: line.line_number,
                    units: 1,
                    containers: "1 x 2 mL vial".into(),
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
}

fn is_replayed<T>(response: &Response<T>) -> bool {
    response
        .metadata()
        .get("idempotent-replayed")
        .is_some_and(|value| value == "true")
}

fn status_of(order: &Order) -> String {
    proto::enums::shown::<proto::common::OrderStatus>(order.status, order.legacy_status.clone())
}

#[tokio::test]
async fn a_cancellation_request_is_filed_once_per_key_and_shows_on_the_order() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let key = new_key();
    let first = app.request_cancellation(&key, &order.order_number).await.unwrap();
    assert!(!is_replayed(&first));
    let filed = first.into_inner().cancel_request.unwrap();
    assert_eq!(filed.status, "pending");
    assert_eq!(filed.reason, "ordered the wrong compound");
    assert_eq!(filed.order_number, order.order_number);
    assert!(filed.decided_by.is_empty() && filed.decided_at.is_none());

    let again = app.request_cancellation(&key, &order.order_number).await.unwrap();
    assert!(is_replayed(&again));
    assert_eq!(again.into_inner().cancel_request.unwrap(), filed);

    let events = app.outbox_events_of("order.cancellation_requested").await;
    assert_eq!(events.len(), 1);
    let Some(Data::OrderCancellationRequested(data)) = &events[0].data else {
        panic!("{:?}", events[0].data)
    };
    assert_eq!(
        (data.cancel_request_id.as_str(), data.status.as_str()),
        (filed.id.as_str(), "pending")
    );

    let read = app.get_order(&order.id).await.unwrap();
    assert_eq!(read.cancellation.as_ref().unwrap().id, filed.id);
    assert_eq!(
        status_of(&read),
        "invoice_sent",
        "nothing is cancelled before a human decides"
    );
    let view = app.get_order_view(&order.id).await.unwrap();
    assert_eq!(view["cancellation"]["status"], "pending");
    assert_eq!(view["cancellation"]["reason"], "ordered the wrong compound");
    assert_eq!(view["cancellation"]["chargeCents"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_second_request_while_one_is_pending_is_refused_naming_the_first() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let filed = app
        .request_cancellation(&new_key(), &order.id)
        .await
        .unwrap()
        .into_inner()
        .cancel_request
        .unwrap();
    let refused = app
        .request_cancellation(&new_key(), &order.order_number)
        .await
        .unwrap_err();
    let error = error_of(&refused);
    assert_eq!(error.code, ErrorCode::CancelRequestPending);
    assert_eq!(error.details.unwrap()["cancelRequestId"], filed.id);
    assert_eq!(
        app.outbox_events_of("order.cancellation_requested").await.len(),
        1
    );
}

#[tokio::test]
async fn bad_cancellation_requests_are_refused_and_write_nothing() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let token = app.default_token();
    let empty = app
        .request_cancellation_as(&token, &new_key(), &order.id, "   ", true)
        .await
        .unwrap_err();
    assert_eq!(error_of(&empty).code, ErrorCode::InvalidRequest);
    assert_eq!(field_of(&error_of(&empty)), "reason");
    let long = app
        .request_cancellation_as(&token, &new_key(), &order.id, &"x".repeat(2001), true)
        .await
        .unwrap_err();
    assert_eq!(field_of(&error_of(&long)), "reason");
    let unconfirmed = app
        .request_cancellation_as(&token, &new_key(), &order.id, "why not", false)
        .await
        .unwrap_err();
    assert_eq!(error_of(&unconfirmed).code, ErrorCode::ConfirmationRequired);
    let unknown = app
        .request_cancellation(&new_key(), "ORD-2026-999999")
        .await
        .unwrap_err();
    assert_eq!(error_of(&unknown).code, ErrorCode::NotFound);
    let stranger = app.token(uuid::Uuid::now_v7(), &ORDER_SCOPES, None);
    let foreign = app
        .request_cancellation_as(&stranger, &new_key(), &order.id, "not mine", true)
        .await
        .unwrap_err();
    assert_eq!(error_of(&foreign).code, ErrorCode::NotFound);
    assert_eq!(error_of(&foreign).message, error_of(&unknown).message);

    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.cancel_requests")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    assert!(
        app.outbox_events_of("order.cancellation_requested")
            .await
            .is_empty()
    );
    assert!(app.get_order(&order.id).await.unwrap().cancellation.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_approvals_before_receipt_cancel_the_order_once_with_nothing_charged() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.request_cancellation(&new_key(), &order.id).await.unwrap();

    let answers = futures::future::join_all(
        (0..8).map(|_| app.decide(&order.order_number, CancelDecision::Approve, None)),
    )
    .await;
    let answers: Vec<_> = answers
        .into_iter()
        .map(|answer| answer.expect("approved"))
        .collect();
    assert_eq!(answers.iter().filter(|answer| !answer.unchanged).count(), 1);
    for answer in &answers {
        let request = answer.cancel_request.as_ref().unwrap();
        assert_eq!((request.status.as_str(), request.charge_cents), ("approved", 0));
        assert_eq!(request.decided_by, OPERATOR);
        assert_eq!(status_of(answer.order.as_ref().unwrap()), "cancelled");
    }

    let cancelled = app.outbox_events_of("order.cancelled").await;
    assert_eq!(cancelled.len(), 1, "order.cancelled exactly once");
    let Some(Data::OrderCancelled(data)) = &cancelled[0].data else {
        panic!("{:?}", cancelled[0].data)
    };
    assert_eq!(data.charge_cents, 0);
    assert_eq!(data.total_cents, order.total_cents);
    assert_eq!(data.currency, order.currency);
    assert_eq!(data.reason, "ordered the wrong compound");
    assert_eq!(data.note, "as you asked");
    assert_eq!(data.legacy_from_status, "invoice_sent");
    let moves = app.outbox_events_of("order.status_changed").await;
    assert_eq!(
        moves
            .iter()
            .filter(|event| matches!(&event.data, Some(Data::OrderStatusChanged(change)) if change.legacy_to_status == "cancelled"))
            .count(),
        1
    );

    let read = app.get_order(&order.id).await.unwrap();
    assert_eq!(status_of(&read), "cancelled");
    let shown = read.cancellation.unwrap();
    assert_eq!(
        (shown.status.as_str(), shown.decided_by.as_str()),
        ("approved", ""),
        "who decided stays with staff"
    );
    let view = app.get_order_view(&order.id).await.unwrap();
    assert_eq!(view["status"], "cancelled");
    assert_eq!(view["cancellation"]["status"], "approved");
    assert_eq!(view["cancellation"]["chargeCents"], 0);
    assert_eq!(view["cancellation"]["note"], "as you asked");

    let other_way = app
        .decide(&order.order_number, CancelDecision::Decline, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&other_way).code, ErrorCode::Conflict);
    let again = app.request_cancellation(&new_key(), &order.id).await.unwrap_err();
    assert_eq!(error_of(&again).code, ErrorCode::OrderNotCancellable);
}

#[tokio::test]
async fn a_declined_request_leaves_the_order_going_and_a_new_one_may_be_filed() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.request_cancellation(&new_key(), &order.id).await.unwrap();
    let charged = app
        .decide(&order.id, CancelDecision::Decline, Some(100))
        .await
        .unwrap_err();
    assert_eq!(field_of(&error_of(&charged)), "chargeCents");
    let declined = app
        .decide(&order.id, CancelDecision::Decline, None)
        .await
        .unwrap();
    assert!(!declined.unchanged);
    assert_eq!(declined.cancel_request.as_ref().unwrap().status, "declined");
    assert_eq!(status_of(declined.order.as_ref().unwrap()), "invoice_sent");

    let events = app.outbox_events_of("order.cancellation_declined").await;
    assert_eq!(events.len(), 1);
    let Some(Data::OrderCancellationDeclined(data)) = &events[0].data else {
        panic!("{:?}", events[0].data)
    };
    assert_eq!(
        (data.status.as_str(), data.note.as_str()),
        ("declined", "as you asked")
    );
    assert!(app.outbox_events_of("order.cancelled").await.is_empty());
    assert!(
        app.decide(&order.id, CancelDecision::Decline, None)
            .await
            .unwrap()
            .unchanged
    );

    let second = app.request_cancellation(&new_key(), &order.id).await.unwrap();
    assert_eq!(second.into_inner().cancel_request.unwrap().status, "pending");
    let view = app.get_order_view(&order.id).await.unwrap();
    assert_eq!(
        view["cancellation"]["status"], "pending",
        "the order shows its latest request"
    );
}

#[tokio::test]
async fn after_receipt_an_approval_needs_a_charge_within_the_total_and_keeps_it() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    app.receive(&order).await;
    app.request_cancellation(&new_key(), &order.id).await.unwrap();
    for charge in [None, Some(-1), Some(order.total_cents + 1)] {
        let refused = app
            .decide(&order.id, CancelDecision::Approve, charge)
            .await
            .unwrap_err();
        assert_eq!(field_of(&error_of(&refused)), "chargeCents", "{charge:?}");
    }
    let approved = app
        .decide(&order.id, CancelDecision::Approve, Some(2_500))
        .await
        .unwrap();
    assert_eq!(approved.cancel_request.as_ref().unwrap().charge_cents, 2_500);
    assert_eq!(status_of(approved.order.as_ref().unwrap()), "cancelled");
    let cancelled = app.outbox_events_of("order.cancelled").await;
    let Some(Data::OrderCancelled(data)) = &cancelled[0].data else {
        panic!("{:?}", cancelled[0].data)
    };
    assert_eq!(
        (data.charge_cents, data.legacy_from_status.as_str()),
        (2_500, "sample_received")
    );
}

#[tokio::test]
async fn before_receipt_a_charge_is_refused_and_deciding_without_a_request_is_not_found() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let none = app
        .decide(&order.id, CancelDecision::Approve, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&none).code, ErrorCode::NotFound);
    app.request_cancellation(&new_key(), &order.id).await.unwrap();
    let charged = app
        .decide(&order.id, CancelDecision::Approve, Some(100))
        .await
        .unwrap_err();
    assert_eq!(field_of(&error_of(&charged)), "chargeCents");
    assert!(app.outbox_events_of("order.cancelled").await.is_empty());
}

#[tokio::test]
async fn staff_list_pending_requests_first_and_only_payments_admins_decide() {
    let app = spawn_app().await;
    let first = app.place_order().await;
    let second = app.place_order().await;
    let decided = app.place_order().await;
    for order in [&first, &second, &decided] {
        app.request_cancellation(&new_key(), &order.id).await.unwrap();
    }
    app.decide(&decided.id, CancelDecision::Decline, None)
        .await
        .unwrap();

    let token = app.keys.staff("sam", &[]);
    let listed = app
        .client
        .clone()
        .list_cancel_requests(platform::grpc::outgoing(
            ListCancelRequestsRequest::default(),
            &token,
        ))
        .await
        .unwrap()
        .into_inner()
        .cancel_requests;
    let numbers: Vec<_> = listed
        .iter()
        .map(|request| request.order_number.as_str())
        .collect();
    assert_eq!(
        numbers,
        [
            first.order_number.as_str(),
            second.order_number.as_str(),
            decided.order_number.as_str()
        ]
    );
    let pending = app
        .client
        .clone()
        .list_cancel_requests(platform::grpc::outgoing(
            ListCancelRequestsRequest {
                status: Some("pending".into()),
                limit: 0,
            },
            &token,
        ))
        .await
        .unwrap()
        .into_inner()
        .cancel_requests;
    assert_eq!(pending.len(), 2);

    let technician = app.keys.staff("tom", &["lab.technician"]);
    let request = DecideCancelRequestRequest {
        reference: first.id.clone(),
        decision: CancelDecision::Approve as i32,
        note: "no".into(),
        charge_cents: None,
    };
    let refused = app
        .client
        .clone()
        .decide_cancel_request(platform::grpc::outgoing(request, &technician))
        .await
        .unwrap_err();
    assert_eq!(error_of(&refused).code, ErrorCode::Forbidden);
    let customer = app
        .client
        .clone()
        .list_cancel_requests(platform::grpc::outgoing(
            ListCancelRequestsRequest::default(),
            &app.default_token(),
        ))
        .await
        .unwrap_err();
    assert_eq!(error_of(&customer).code, ErrorCode::Forbidden);
}

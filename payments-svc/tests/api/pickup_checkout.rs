//! The hosted payment of a door pickup: a checkout session bound to the pickup (not to an
//! invoice), locked to its price, opened once per pickup and only by shipping-svc, committing the
//! price to the key's spend envelope; paid once through the page's settlement, which emits
//! `pickup_payment.paid` for shipping-svc.

use crate::helpers::{code_of, data, spawn_app};
use proto::events::event_envelope::Data;
use proto::payments as pb;
use uuid::Uuid;

fn open_request(
    pickup_id: Uuid,
    order_id: Uuid,
    amount_cents: i64,
    key_id: &str,
) -> pb::OpenPickupCheckoutRequest {
    pb::OpenPickupCheckoutRequest {
        pickup_id: pickup_id.to_string(),
        order_id: order_id.to_string(),
        order_number: "ORD-20261123-0007".into(),
        description: "Door pickup of order ORD-20261123-0007 on 2026-11-25 between 15:00 and 18:00 (UTC)"
            .into(),
        amount_cents,
        currency: "USD".into(),
        key_id: key_id.into(),
        pay_by: Some(platform::time::to_timestamp(
            platform::time::now() + chrono::Duration::hours(6),
        )),
        sandbox: false,
    }
}

#[tokio::test]
async fn a_pickup_session_is_opened_once_locked_to_its_price_and_paid_once_with_an_event_for_shipping() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let (pickup_id, order_id) = (Uuid::now_v7(), Uuid::now_v7());
    let shipping = app.keys.mint_service("shipping-svc", Some(customer));
    let open = |request: pb::OpenPickupCheckoutRequest, token: String| {
        let mut client = app.client.clone();
        async move {
            client
                .open_pickup_checkout(platform::tokens::testing::delegated(
                    platform::grpc::outgoing(request, &token),
                    customer,
                ))
                .await
                .map(|answer| answer.into_inner().session.unwrap())
        }
    };

    let session = open(
        open_request(pickup_id, order_id, 1500, "key-pickup"),
        shipping.clone(),
    )
    .await
    .unwrap();
    assert!(session.id.starts_with("cs_"), "{session:?}");
    assert!(session.hosted_url.ends_with(&format!("/pay/{}", session.id)));
    assert_eq!((session.amount_cents, session.status.as_str()), (1500, "open"));
    // The same pickup answers its session; another amount for it is refused.
    let again = open(
        open_request(pickup_id, order_id, 1500, "key-pickup"),
        shipping.clone(),
    )
    .await
    .unwrap();
    assert_eq!(again.id, session.id);
    let other_amount = open(
        open_request(pickup_id, order_id, 1, "key-pickup"),
        shipping.clone(),
    )
    .await
    .unwrap_err();
    assert_eq!(code_of(&other_amount), "conflict");
    // Only shipping-svc opens pickup payments.
    let as_orders = open(
        open_request(Uuid::now_v7(), order_id, 1500, "key-pickup"),
        app.keys.mint_service("orders-svc", Some(customer)),
    )
    .await
    .unwrap_err();
    assert_eq!(as_orders.code(), tonic::Code::PermissionDenied);

    // The page: the pickup's one line, no invoice.
    let gateway = app.keys.mint_service("gateway", None);
    let page = app
        .client
        .clone()
        .get_checkout(platform::grpc::outgoing(
            pb::GetCheckoutRequest {
                session_id: session.id.clone(),
            },
            &gateway,
        ))
        .await
        .unwrap()
        .into_inner()
        .page
        .unwrap();
    assert_eq!(page.purpose, "pickup");
    assert_eq!(page.invoice_number, "");
    assert_eq!(page.order_number, "ORD-20261123-0007");
    assert_eq!(page.lines.len(), 1);
    assert_eq!((page.lines[0].amount_cents, page.total_cents), (1500, 1500));

    // Paid once: the second attempt charges nothing.
    let pay = || {
        let mut client = app.client.clone();
        let request = pb::PayCheckoutRequest {
            session_id: session.id.clone(),
            card: Some(pb::CardInput {
                number: "4242424242424242".into(),
                exp_month: 12,
                exp_year: 2034,
                cvc: "123".into(),
            }),
            saved_card_token: None,
            save_card: false,
        };
        let gateway = gateway.clone();
        async move {
            client
                .pay_checkout(platform::grpc::outgoing(request, &gateway))
                .await
                .unwrap()
                .into_inner()
        }
    };
    let card_paid = || {
        platform::metrics::metrics()
            .payment_settlements
            .get_or_create(&platform::metrics::SettlementLabels {
                rail: "card",
                outcome: "paid",
            })
            .get()
    };
    let paid_before = card_paid();
    assert_eq!(pay().await.outcome, "paid");
    assert_eq!(pay().await.outcome, "already_paid");
    assert!(
        card_paid() > paid_before,
        "the settlement is counted in payment_settlements_total (the second attempt charged nothing)"
    );
    let paid = app.events_of("pickup_payment.paid").await;
    assert_eq!(paid.len(), 1, "one settlement, one event");
    let Data::PickupPaymentUpdated(event) = data(&paid[0]) else {
        panic!("unexpected payload {:?}", paid[0].data);
    };
    assert_eq!(event.pickup_id, pickup_id.to_string());
    assert_eq!(event.status, "paid");
    assert_eq!(event.amount_cents, 1500);
    assert!(!event.payment_reference.is_empty());
    assert_eq!(paid[0].customer_id, customer.to_string());
    assert!(
        app.events_of("invoice.updated").await.is_empty(),
        "a pickup payment touches no invoice"
    );
    let recorded: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, amount_cents FROM payments.pickup_payments WHERE pickup_id = $1")
            .bind(pickup_id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded, [("succeeded".to_owned(), 1500)]);
}

#[tokio::test]
async fn a_pickup_session_commits_its_price_to_the_keys_envelope_and_a_refusal_leaves_no_session() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let shipping = app.keys.mint_service("shipping-svc", Some(customer));
    let envelope = pb::SetSpendEnvelopeRequest {
        customer_id: customer.to_string(),
        key_id: "key-frugal".into(),
        per_order_cap_cents: Some(1_000),
        daily_cap_cents: Some(2_000),
        monthly_cap_cents: None,
    };
    app.client
        .clone()
        .set_spend_envelope(platform::grpc::outgoing(envelope, &app.admin()))
        .await
        .unwrap();
    let open = |amount: i64| {
        let mut client = app.client.clone();
        let request = open_request(Uuid::now_v7(), Uuid::now_v7(), amount, "key-frugal");
        let shipping = shipping.clone();
        async move {
            client
                .open_pickup_checkout(platform::tokens::testing::delegated(
                    platform::grpc::outgoing(request, &shipping),
                    customer,
                ))
                .await
        }
    };
    let refused = open(1_500).await.unwrap_err();
    assert_eq!(code_of(&refused), "spend_limit_exceeded");
    let details = platform::error::ApiError::from_status(&refused).details.unwrap();
    assert_eq!(details["cap"], "per_order");
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.checkout_sessions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 0, "a refused envelope leaves no session");
    // Two pickups of 900 fit the per-order cap; the third passes the daily cap of 2,000.
    open(900).await.unwrap();
    open(900).await.unwrap();
    let daily = open(900).await.unwrap_err();
    assert_eq!(code_of(&daily), "spend_limit_exceeded");
    assert_eq!(
        platform::error::ApiError::from_status(&daily).details.unwrap()["cap"],
        "daily"
    );
}

#[tokio::test]
async fn cancelling_the_order_closes_its_unpaid_pickup_pay_link_and_releases_the_pickups_spend() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let (order_id, pickup_id) = (Uuid::now_v7(), Uuid::now_v7());
    let invoice = app
        .create_invoice(customer, crate::helpers::invoice_request_for(order_id, 12_500))
        .await;
    let shipping = app.keys.mint_service("shipping-svc", Some(customer));
    let session = app
        .client
        .clone()
        .open_pickup_checkout(platform::tokens::testing::delegated(
            platform::grpc::outgoing(open_request(pickup_id, order_id, 1500, "key-pickup"), &shipping),
            customer,
        ))
        .await
        .unwrap()
        .into_inner()
        .session
        .unwrap();

    let cancelled = crate::cancellation::order_cancelled(customer, &invoice, 0);
    crate::consumer::publish(&app, &cancelled).await;
    let last = crate::consumer::publish(&app, &cancelled).await;
    crate::consumer::wait_until_consumed(&app, &last).await;

    let expired = app.events_of("pickup_payment.expired").await;
    assert_eq!(expired.len(), 1, "one pickup_payment.expired for two deliveries");
    let released: bool = sqlx::query_scalar(
        "SELECT released_at IS NOT NULL FROM payments.spend_commitments WHERE kind = 'pickup' AND subject_id = $1",
    )
    .bind(pickup_id.to_string())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(released, "the pickup's spend is released");
    let gateway = app.keys.mint_service("gateway", None);
    let attempt = app
        .client
        .clone()
        .pay_checkout(platform::grpc::outgoing(
            pb::PayCheckoutRequest {
                session_id: session.id.clone(),
                card: Some(pb::CardInput {
                    number: "4242424242424242".into(),
                    exp_month: 12,
                    exp_year: 2034,
                    cvc: "123".into(),
                }),
                saved_card_token: None,
                save_card: false,
            },
            &gateway,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(attempt.outcome, "expired", "the link no longer takes a payment");
    assert!(app.events_of("pickup_payment.paid").await.is_empty());
}

//! Paid door pickups across the mesh: options → signed quote token → request → pay on the
//! hosted checkout page → booked with the carrier (signed `shipment.updated` webhook with the
//! confirmation number), paying twice refused, and every refusal (unpaid order, expired,
//! tampered or foreign tokens, past or unoffered dates, confirmation, spend limit and spend
//! envelope, a second pickup); an expired payment link refuses payment and frees the shipment
//! for a new request; staff confirm a bank-transfer payment with labctl.

use crate::browser_checkout::{browser_available, drive, signed_body};
use crate::card_checkout::{DECLINE_CARD, SUCCESS_CARD, expire_session, open_page, pay_with};
use crate::shipping_flow::labelled_order;
use crate::spend_envelopes::{customer_with_key_id, set_envelope};
use crate::support::{bank_order, stream_events};
use base64::Engine;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use proto::events::event_envelope::Data;
use serde_json::{Value, json};
use shipping_svc::domain::pickup::{QuoteClaims, sign};
use std::time::Duration;
use tests::{Customer, Sandbox};
use uuid::Uuid;

/// A bank order of `customer`, labelled and paid; returns (order id, shipment id).
pub(crate) async fn paid_order(sandbox: &Sandbox, customer: &Customer, key: &str) -> (String, String) {
    let (order_id, invoice_number, total) = bank_order(sandbox, customer, key).await;
    let order = labelled_order(sandbox, customer, &order_id).await;
    let shipment_id = order["shipping"]["shipmentId"].as_str().unwrap().to_owned();
    crate::support::record_bank_payment(sandbox, &invoice_number, &total, &format!("BANK-{key}")).await;
    (order_id, shipment_id)
}

/// The pickup options once the order's payment reached shipping-svc.
pub(crate) async fn options_of(sandbox: &Sandbox, customer: &Customer, order_id: &str) -> Value {
    wait_for("the pickup options", Duration::from_secs(30), || async {
        let answer = sandbox
            .get(&customer.key, &format!("/orders/{order_id}/pickup"))
            .await;
        (answer.status == 200).then_some(answer.body["data"]["pickupOptions"].clone())
    })
    .await
}

/// A request body for the first offered date and the last window (never started yet on a
/// first date that is today).
pub(crate) fn first_choice(options: &Value) -> Value {
    json!({
        "date": options["dates"][0],
        "window": "15:00-18:00",
        "quoteToken": options["quoteToken"],
        "confirm": true,
    })
}

/// The shipment's pickup as `GET /shipments/{id}` shows it.
pub(crate) async fn shipment_pickup(sandbox: &Sandbox, customer: &Customer, shipment_id: &str) -> Value {
    let shipment = sandbox
        .get(&customer.key, &format!("/shipments/{shipment_id}"))
        .await;
    assert_eq!(shipment.status, 200, "{:?}", shipment.body);
    shipment.body["data"]["shipment"]["pickup"].clone()
}

/// Waits for the shipment's pickup to reach `status`.
async fn wait_for_pickup(sandbox: &Sandbox, customer: &Customer, shipment_id: &str, status: &str) -> Value {
    wait_for(
        &format!("the pickup to be {status}"),
        Duration::from_secs(30),
        || async {
            let pickup = shipment_pickup(sandbox, customer, shipment_id).await;
            (pickup["status"] == status).then_some(pickup)
        },
    )
    .await
}

/// Pickup payments recorded by payments-svc for `pickup_id`: (status, amount).
async fn pickup_payments(sandbox: &Sandbox, pickup_id: &str) -> Vec<(String, i64)> {
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, amount_cents FROM payments.pickup_payments WHERE pickup_id = $1 ORDER BY created_at",
    )
    .bind(Uuid::parse_str(pickup_id).unwrap())
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows
}

pub(crate) async fn request(
    sandbox: &Sandbox,
    customer: &Customer,
    order_id: &str,
    body: &Value,
    key: &str,
) -> tests::Answer {
    sandbox
        .post(
            &customer.key,
            &format!("/orders/{order_id}/pickup"),
            body,
            &[("Idempotency-Key", key)],
        )
        .await
}

#[tokio::test]
async fn a_paid_order_books_a_door_pickup_through_options_token_request_and_payment_and_every_refusal_is_clear()
 {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Pickup Pia", "all").await;
    let registered = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &json!({ "url": receiver.url("/hooks"), "events": ["shipment.updated"] }),
            &[("Idempotency-Key", "pickup-hook-0001")],
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let secret = registered.body["data"]["signingSecret"]
        .as_str()
        .unwrap()
        .to_owned();
    let (order_id, invoice_number, total) = bank_order(&sandbox, &agent, "pickup-order-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let shipment_id = order["shipping"]["shipmentId"].as_str().unwrap().to_owned();

    // Unpaid: no options, no request.
    let unpaid = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/pickup"))
        .await;
    assert_eq!(
        (unpaid.status, unpaid.error_code()),
        (409, "order_not_paid"),
        "{:?}",
        unpaid.body
    );

    crate::support::record_bank_payment(&sandbox, &invoice_number, &total, "PICKUP-BANK-1").await;
    let options = wait_for("the pickup options", Duration::from_secs(30), || async {
        let answer = sandbox
            .get(&agent.key, &format!("/orders/{order_id}/pickup"))
            .await;
        (answer.status == 200).then_some(answer.body["data"]["pickupOptions"].clone())
    })
    .await;
    let dates: Vec<String> = options["dates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|date| date.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(dates.len(), 5);
    for date in &dates {
        let day = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap();
        assert!(!matches!(
            chrono::Datelike::weekday(&day),
            chrono::Weekday::Sat | chrono::Weekday::Sun
        ));
    }
    assert_eq!(options["priceCents"], 1500);
    assert_eq!(options["windows"][0]["id"], "09:00-12:00");
    let token = options["quoteToken"].as_str().unwrap().to_owned();
    let good = first_choice(&options);

    // Refusals, none of which creates a pickup.
    let mut unconfirmed = good.clone();
    unconfirmed["confirm"] = json!(false);
    let answer = request(&sandbox, &agent, &order_id, &unconfirmed, "pickup-refused-01").await;
    assert_eq!(
        (answer.status, answer.error_code()),
        (400, "confirmation_required")
    );
    let (payload, signature) = token.split_once('.').unwrap();
    let mut claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    claims["p"] = json!(1);
    let edited = format!(
        "{}.{signature}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut tampered = good.clone();
    tampered["quoteToken"] = json!(edited);
    let answer = request(&sandbox, &agent, &order_id, &tampered, "pickup-refused-02").await;
    assert_eq!(
        (answer.status, answer.error_code()),
        (400, "pickup_quote_invalid")
    );
    let expired_claims = QuoteClaims {
        c: Uuid::parse_str(&agent.id).unwrap(),
        o: Uuid::parse_str(&order_id).unwrap(),
        s: Uuid::parse_str(&shipment_id).unwrap(),
        d: dates.clone(),
        w: vec!["09:00-12:00".to_owned()],
        p: 1500,
        e: chrono::Utc::now().timestamp() - 60,
    };
    let mut expired = good.clone();
    expired["quoteToken"] = json!(sign(
        shipping_svc::config::DEVELOPMENT_SIGNING_KEY.as_bytes(),
        &expired_claims
    ));
    let answer = request(&sandbox, &agent, &order_id, &expired, "pickup-refused-03").await;
    assert_eq!(
        (answer.status, answer.error_code()),
        (409, "pickup_quote_expired")
    );
    for (field, value, code) in [
        ("date", "2020-01-06", "pickup_date_unavailable"),
        ("date", "2099-01-05", "pickup_date_unavailable"),
        ("window", "03:00-04:00", "pickup_date_unavailable"),
        ("date", "tomorrow", "invalid_request"),
    ] {
        let mut body = good.clone();
        body[field] = json!(value);
        let answer = request(
            &sandbox,
            &agent,
            &order_id,
            &body,
            &format!("pickup-refused-{field}-{value}"),
        )
        .await;
        assert_eq!(
            (answer.status, answer.error_code()),
            (400, code),
            "{field}={value}: {:?}",
            answer.body
        );
    }
    let mut extra = good.clone();
    extra["priceCents"] = json!(0);
    let answer = request(&sandbox, &agent, &order_id, &extra, "pickup-refused-04").await;
    assert_eq!(answer.status, 400, "unknown fields are refused");
    let frugal = sandbox.customer("Pickup Pia", "all").await;
    let frugal_key = sandbox
        .labctl(&[
            "keys",
            "create",
            "--customer",
            &frugal.id,
            "--name",
            "frugal",
            "--spend-limit-cents",
            "100",
        ])
        .await
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let frugal = Customer {
        id: frugal.id,
        key: frugal_key,
    };
    let answer = request(&sandbox, &frugal, &order_id, &good, "pickup-refused-05").await;
    assert_eq!(
        (answer.status, answer.error_code()),
        (403, "spend_limit_exceeded")
    );
    let shipment = sandbox
        .get(&agent.key, &format!("/shipments/{shipment_id}"))
        .await;
    assert_eq!(shipment.body["data"]["shipment"]["pickup"], Value::Null);

    // The request: awaiting payment with a payUrl; a replay answers the same.
    let requested = request(&sandbox, &agent, &order_id, &good, "pickup-request-01").await;
    assert_eq!(requested.status, 201, "{:?}", requested.body);
    let pickup = requested.body["data"]["pickup"].clone();
    assert_eq!(pickup["status"], "awaiting_payment");
    assert_eq!(pickup["priceCents"], 1500);
    assert_eq!(pickup["orderId"], order_id.as_str());
    let pickup_id = pickup["id"].as_str().unwrap().to_owned();
    let pay_url = pickup["payUrl"].as_str().unwrap().to_owned();
    assert!(
        pay_url.starts_with(&format!("{}/pay/cs_", sandbox.base_url)),
        "the payUrl is the site's hosted checkout page: {pay_url}"
    );
    assert!(pickup["payExpiresAt"].is_string(), "{pickup}");
    let replay = request(&sandbox, &agent, &order_id, &good, "pickup-request-01").await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body["data"]["pickup"]["id"], pickup_id.as_str());
    let second = request(&sandbox, &agent, &order_id, &good, "pickup-request-02").await;
    assert_eq!(
        (second.status, second.error_code()),
        (409, "pickup_already_requested")
    );
    let options_again = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/pickup"))
        .await;
    assert_eq!(
        (options_again.status, options_again.error_code()),
        (409, "pickup_already_requested")
    );

    // The hosted page: the pickup's one line and its locked price; a decline leaves it payable.
    let page = open_page(&sandbox, &pay_url).await;
    assert_eq!((page.status, page.session_status()), (200, "open"));
    assert!(page.html.contains("data-purpose=\"pickup\""), "{}", page.html);
    assert!(page.html.contains("Door pickup of order"), "{}", page.html);
    assert!(page.html.contains("$15.00"), "{}", page.html);
    let declined = pay_with(&sandbox, &pay_url, DECLINE_CARD).await;
    assert_eq!((declined.status, declined.outcome()), (402, "declined"));
    assert_eq!(
        shipment_pickup(&sandbox, &agent, &shipment_id).await["status"],
        "awaiting_payment"
    );

    // Paid on the page: booked with the carrier, confirmation stored, shipment.updated reports it.
    let paid = pay_with(&sandbox, &pay_url, SUCCESS_CARD).await;
    assert_eq!((paid.status, paid.outcome()), (200, "paid"), "{}", paid.html);
    assert_eq!(paid.session_status(), "completed");
    let booked = wait_for_pickup(&sandbox, &agent, &shipment_id, "booked").await;
    let confirmation = booked["confirmationNumber"].as_str().unwrap().to_owned();
    assert!(confirmation.starts_with("PU"), "{booked}");

    // Paying twice is refused and charges nothing.
    let twice = pay_with(&sandbox, &pay_url, SUCCESS_CARD).await;
    assert_eq!((twice.status, twice.outcome()), (200, "already_paid"));
    assert!(
        !twice.html.contains("id=\"card-number\""),
        "a paid link offers no card form"
    );
    assert_eq!(
        pickup_payments(&sandbox, &pickup_id).await,
        [("succeeded".to_owned(), 1500)],
        "one payment of the locked price"
    );
    // The order's invoice is untouched by the pickup's charge.
    let invoice = sandbox
        .get(&agent.key, &format!("/invoices/{invoice_number}"))
        .await;
    assert_eq!(
        invoice.body["data"]["invoice"]["amountPaidCents"].to_string(),
        total
    );

    // A signed shipment.updated webhook carries the confirmation number.
    let hook = wait_for(
        "a signed shipment.updated webhook of the pickup",
        Duration::from_secs(30),
        || async {
            receiver.requests_to("/hooks").into_iter().find_map(|request| {
                let body = signed_body(&secret, &request.header("x-svc-signature"), &request.body)?;
                (body["type"] == "shipment.updated" && body["data"]["status"] == "pickup_booked")
                    .then_some(body)
            })
        },
    )
    .await;
    assert_eq!(hook["data"]["pickup_confirmation_number"], confirmation.as_str());
    assert_eq!(hook["data"]["order_id"], order_id.as_str());

    // Staff confirming the same payment again (labctl) changes nothing.
    let again = sandbox
        .labctl(&[
            "shipments",
            "pickup-paid",
            &pickup_id,
            "--payment-reference",
            "PICKUP-PAY-1",
        ])
        .await
        .unwrap();
    assert_eq!(
        again["confirmationNumber"],
        confirmation.as_str(),
        "booking twice changes nothing"
    );
    let shipment = sandbox
        .get(&agent.key, &format!("/shipments/{shipment_id}"))
        .await;
    assert_eq!(shipment.body["data"]["shipment"]["pickup"]["status"], "booked");
    assert_eq!(
        shipment.body["data"]["shipment"]["pickup"]["confirmationNumber"],
        confirmation.as_str()
    );
    let reported = wait_for(
        "shipment.updated of the pickup",
        Duration::from_secs(10),
        || async {
            stream_events(&sandbox, "shipping")
                .await
                .into_iter()
                .find_map(|event| match event.data {
                    Some(Data::ShipmentUpdated(data))
                        if data.status() == proto::common::ShipmentStatus::PickupBooked =>
                    {
                        Some(data)
                    }
                    _ => None,
                })
        },
    )
    .await;
    assert_eq!(
        reported.pickup_confirmation_number.as_deref(),
        Some(confirmation.as_str())
    );
    let updated = stream_events(&sandbox, "shipping")
        .await
        .into_iter()
        .filter(|event| event.r#type == "shipment.updated")
        .count();
    assert_eq!(updated, 1, "one booking, one event");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn an_expired_pickup_payment_link_takes_no_payment_and_frees_the_shipment_for_a_new_request() {
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.jobs_interval = Duration::from_millis(200);
    })
    .await;
    let agent = sandbox.customer("Late Lars", "all").await;
    let (order_id, shipment_id) = paid_order(&sandbox, &agent, "pickup-late-0001").await;
    let options = options_of(&sandbox, &agent, &order_id).await;
    let requested = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "pickup-late-request-1",
    )
    .await;
    assert_eq!(requested.status, 201, "{:?}", requested.body);
    let first = requested.body["data"]["pickup"].clone();
    let pay_url = first["payUrl"].as_str().unwrap().to_owned();

    // The link runs out: the sweeper expires it and shipping-svc ends the pickup.
    expire_session(&sandbox, &pay_url).await;
    let ended = wait_for_pickup(&sandbox, &agent, &shipment_id, "payment_expired").await;
    assert_eq!(ended["id"], first["id"]);
    let refused = pay_with(&sandbox, &pay_url, SUCCESS_CARD).await;
    assert_eq!((refused.status, refused.outcome()), (410, "expired"));
    assert_eq!(open_page(&sandbox, &pay_url).await.session_status(), "expired");
    assert!(
        pickup_payments(&sandbox, first["id"].as_str().unwrap())
            .await
            .is_empty()
    );

    // A new pickup may be requested (new token, new link) and paid.
    let options = options_of(&sandbox, &agent, &order_id).await;
    let again = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "pickup-late-request-2",
    )
    .await;
    assert_eq!(again.status, 201, "{:?}", again.body);
    let second = again.body["data"]["pickup"].clone();
    assert_ne!(second["id"], first["id"]);
    let second_url = second["payUrl"].as_str().unwrap().to_owned();
    assert_ne!(second_url, pay_url);
    let paid = pay_with(&sandbox, &second_url, SUCCESS_CARD).await;
    assert_eq!(paid.outcome(), "paid", "{}", paid.html);
    let booked = wait_for_pickup(&sandbox, &agent, &shipment_id, "booked").await;
    assert_eq!(booked["id"], second["id"]);
    // Staff cannot book the ended pickup.
    let staff = sandbox
        .labctl(&[
            "shipments",
            "pickup-paid",
            first["id"].as_str().unwrap(),
            "--payment-reference",
            "LATE-BANK-1",
        ])
        .await;
    assert!(staff.is_err(), "an ended pickup is not booked: {staff:?}");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_pickup_request_is_checked_against_the_keys_spend_envelope_and_its_payment_counts_in_it() {
    let sandbox = Sandbox::start().await;
    let (agent, key_id) = customer_with_key_id(&sandbox, "Envelope Ezra").await;
    let (order_id, shipment_id) = paid_order(&sandbox, &agent, "pickup-envelope-0001").await;
    let options = options_of(&sandbox, &agent, &order_id).await;

    // A per-order cap below the price: refused with the remainders, nothing created.
    set_envelope(&sandbox, &agent, &key_id, &[("per-order-cents", 1_000)]).await;
    let refused = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "pickup-envelope-1",
    )
    .await;
    assert_eq!(
        (refused.status, refused.error_code()),
        (403, "spend_limit_exceeded"),
        "{:?}",
        refused.body
    );
    assert_eq!(refused.body["error"]["details"]["cap"], "per_order");
    assert_eq!(refused.body["error"]["details"]["amountCents"], 1500);
    assert_eq!(shipment_pickup(&sandbox, &agent, &shipment_id).await, Value::Null);

    // A daily cap that fits: the pickup's price is committed against it.
    set_envelope(&sandbox, &agent, &key_id, &[("daily-cents", 1_000_000)]).await;
    let before = sandbox.get(&agent.key, "/spend-envelope").await;
    assert_eq!(before.status, 200, "{:?}", before.body);
    let requested = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "pickup-envelope-2",
    )
    .await;
    assert_eq!(requested.status, 201, "{:?}", requested.body);
    let after = sandbox.get(&agent.key, "/spend-envelope").await;
    let spent = |answer: &tests::Answer| {
        answer.body["data"]["envelope"]["spentTodayCents"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(spent(&after) - spent(&before), 1500, "{:?}", after.body);
    // A replay of the request commits nothing more.
    let replay = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "pickup-envelope-2",
    )
    .await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let replayed = sandbox.get(&agent.key, "/spend-envelope").await;
    assert_eq!(spent(&replayed), spent(&after));
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_browser_pays_a_door_pickup_on_the_hosted_page_and_the_paid_link_takes_no_more() {
    if !browser_available() {
        return;
    }
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Browser Bo", "all").await;
    let (order_id, shipment_id) = paid_order(&sandbox, &agent, "pickup-browser-0001").await;
    let options = options_of(&sandbox, &agent, &order_id).await;
    let requested = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "pickup-browser-1",
    )
    .await;
    assert_eq!(requested.status, 201, "{:?}", requested.body);
    let pay_url = requested.body["data"]["pickup"]["payUrl"]
        .as_str()
        .unwrap()
        .to_owned();

    let opened = drive(&pay_url, "inspect", "").await;
    assert_eq!(opened["status"], 200, "{opened}");
    assert_eq!(opened["sessionStatus"], "open");
    assert_eq!(opened["hasCardForm"], true);
    assert_eq!(opened["total"], "$15.00");
    let paid = drive(&pay_url, "pay", SUCCESS_CARD).await;
    assert_eq!(paid["outcome"], "paid", "{paid}");
    assert_eq!(paid["sessionStatus"], "completed");
    let booked = wait_for_pickup(&sandbox, &agent, &shipment_id, "booked").await;
    assert!(booked["confirmationNumber"].is_string(), "{booked}");
    let again = drive(&pay_url, "inspect", "").await;
    assert_eq!(
        again["hasCardForm"], false,
        "a paid pickup link cannot be paid twice"
    );
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

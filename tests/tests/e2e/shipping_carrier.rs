//! The external-carrier adapter (EasyPost shape) against a local double of its API: the label is
//! bought through the API with the configured carrier and service, its tracker webhooks move
//! the order when their timestamped HMAC verifies, and a forged, unsigned, legacy-signed or
//! edited webhook is refused and changes nothing (replays and stale timestamps:
//! `shipping_carrier_webhooks.rs`); a purchase retried after the carrier bought but our side
//! failed before its commit reuses that label and buys no second one; so does a door pickup's
//! booking.

use crate::shipping_flow::labelled_order;
use crate::support::bank_order;
use platform::testing::{holds_for, wait_for};
use serde_json::Value;
use shipping_svc::carrier::easypost::{DEFAULT_WEBHOOK_TOLERANCE, EasyPostSettings};
use shipping_svc::config::CarrierSettings;
use std::time::Duration;
use tests::Sandbox;
use tests::easypost::{API_KEY, EasyPostDouble, WEBHOOK_PATH, WEBHOOK_SECRET};

/// The EasyPost carrier against the double at `base_url` (default webhook tolerance, 300 s).
pub fn easypost(base_url: String) -> CarrierSettings {
    CarrierSettings::EasyPost(EasyPostSettings {
        base_url,
        api_key: API_KEY.to_owned().into(),
        webhook_secret: WEBHOOK_SECRET.to_owned().into(),
        webhook_tolerance: DEFAULT_WEBHOOK_TOLERANCE,
        carrier: "UPS".to_owned(),
        service: "Ground".to_owned(),
    })
}

/// Posts a webhook delivery of `body` with `headers`; answers the status and the JSON body.
pub async fn post_webhook(sandbox: &Sandbox, body: &[u8], headers: &[(&str, String)]) -> (u16, Value) {
    let mut request = sandbox
        .http
        .post(format!("{}{WEBHOOK_PATH}", sandbox.base_url))
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_easypost_adapter_buys_the_label_from_the_api_and_only_signed_tracker_webhooks_move_the_order() {
    let double = EasyPostDouble::start().await;
    let base_url = double.base_url();
    let sandbox = Sandbox::start_with(|settings| {
        settings.shipping.carrier = easypost(base_url);
    })
    .await;
    let agent = sandbox.customer("Easy Ezra", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "easy-order-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let shipping = &order["shipping"];
    let tracking = shipping["trackingNumber"].as_str().unwrap().to_owned();
    assert!(tracking.starts_with("1ZEZD001"), "{tracking}");
    assert_eq!(shipping["carrierCode"], "ups");
    assert_eq!(shipping["serviceCode"], "ups_ground");
    assert!(shipping["trackingUrl"].as_str().unwrap().contains(&tracking));

    // The adapter sent the documented requests: addresses and parcel, then the UPS Ground rate.
    let requests = double.requests();
    let paths: Vec<&str> = requests.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v2/shipments",
            "GET /v2/shipments/shp_000001",
            "/v2/shipments/shp_000001/buy"
        ]
    );
    let shipment = &requests[0].1["shipment"];
    assert_eq!(shipment["to_address"]["city"], "Madison");
    assert_eq!(shipment["to_address"]["zip"], "53719");
    assert_eq!(shipment["from_address"]["email"], "easy.ezra@example.com");
    assert!(shipment["parcel"]["weight"].is_number());
    assert_eq!(requests[2].1["rate"]["id"], "rate_shp_000001_2");
    assert_eq!(double.labels_bought(), 1);

    // A forged webhook (wrong secret), an unsigned one, one with only the legacy body-only
    // signature (no timestamp) and an edited body are refused.
    let body = EasyPostDouble::tracker_updated(
        &tracking,
        &[(
            "in_transit",
            "arrived_at_facility",
            "Origin Scan",
            "2026-11-23T10:00:00Z",
        )],
    );
    let signed = EasyPostDouble::signed_headers(&body);
    let forged = EasyPostDouble::headers_signed_with("not-the-secret", &body, chrono::Utc::now());
    assert_eq!(post_webhook(&sandbox, &body, &forged).await.0, 401);
    assert_eq!(post_webhook(&sandbox, &body, &[]).await.0, 401);
    let legacy_only: Vec<(&str, String)> = signed
        .iter()
        .filter(|(name, _)| *name == "x-hmac-signature")
        .cloned()
        .collect();
    assert_eq!(legacy_only.len(), 1);
    assert_eq!(post_webhook(&sandbox, &body, &legacy_only).await.0, 401);
    let mut edited = body.clone();
    edited.extend_from_slice(b" ");
    assert_eq!(post_webhook(&sandbox, &edited, &signed).await.0, 401);
    holds_for(
        "the order stays label_generated",
        Duration::from_secs(2),
        || async {
            let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
            answer.body["data"]["order"]["status"] == "label_generated"
        },
    )
    .await;
    let shipment = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    assert_eq!(
        shipment.body["data"]["shipment"]["events"]
            .as_array()
            .unwrap()
            .len(),
        0
    );

    // The signed webhook records the scan and moves the order; sent again, it changes nothing.
    let (status, answer) = post_webhook(&sandbox, &body, &signed).await;
    assert_eq!(
        (status, &answer["recorded"]),
        (200, &Value::Bool(true)),
        "{answer}"
    );
    let (status, answer) = post_webhook(&sandbox, &body, &signed).await;
    assert_eq!(
        (status, &answer["duplicate"]),
        (200, &Value::Bool(true)),
        "{answer}"
    );
    wait_for("the order in transit", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["status"] == "in_transit").then_some(())
    })
    .await;
    let shipment = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    let events = shipment.body["data"]["shipment"]["events"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["statusCode"], "arrived_at_facility");
    assert_eq!(events[0]["location"], "Chicago, IL, US");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_label_purchase_retried_after_the_carrier_bought_but_before_our_commit_reuses_that_label() {
    let double = EasyPostDouble::start().await;
    // The first purchase happens at the carrier but its answer never reaches our commit: the
    // label is billed, the transaction rolls back and order.created is delivered again.
    double.lose_next_buy_answers(1);
    let base_url = double.base_url();
    let sandbox = Sandbox::start_with(|settings| {
        settings.shipping.carrier = easypost(base_url);
        settings.shipping.consumer.reclaim_idle = Duration::from_secs(1);
    })
    .await;
    let agent = sandbox.customer("Retry Rhea", "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, "easy-retry-0001").await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();

    // One carrier shipment, bought once; the retry read it back instead of buying again.
    assert_eq!(double.labels_bought(), 1, "exactly one label is billed");
    let requests = double.requests();
    let paths: Vec<&str> = requests.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v2/shipments",
            "GET /v2/shipments/shp_000001",
            "/v2/shipments/shp_000001/buy",
            "GET /v2/shipments/shp_000001"
        ],
        "the retry creates no second carrier shipment and buys nothing"
    );
    let bought = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    assert_eq!(bought.status, 200, "{:?}", bought.body);
    assert!(tracking.starts_with("1ZEZD001"), "{tracking}");
    holds_for("one label_created event", Duration::from_secs(2), || async {
        crate::support::stream_events(&sandbox, "shipping")
            .await
            .iter()
            .filter(|event| event.r#type == "shipment.label_created")
            .count()
            == 1
    })
    .await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_pickup_booking_retried_after_the_carrier_booked_but_before_our_commit_reuses_that_booking() {
    use crate::shipping_pickup::{first_choice, options_of, paid_order, request, shipment_pickup};
    let double = EasyPostDouble::start().await;
    let base_url = double.base_url();
    let sandbox = Sandbox::start_with(|settings| settings.shipping.carrier = easypost(base_url)).await;
    let agent = sandbox.customer("Pickup Retry Pete", "all").await;
    let (order_id, shipment_id) = paid_order(&sandbox, &agent, "easy-pickup-0001").await;
    let options = options_of(&sandbox, &agent, &order_id).await;
    let requested = request(
        &sandbox,
        &agent,
        &order_id,
        &first_choice(&options),
        "easy-pickup-req",
    )
    .await;
    assert_eq!(requested.status, 201, "{:?}", requested.body);
    let pickup_id = requested.body["data"]["pickup"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The carrier books the pickup but its answer never reaches our commit (as when our side
    // crashes in between): the confirmation fails and nothing is recorded as booked.
    double.lose_next_pickup_buy_answers(1);
    let confirm = || async {
        sandbox
            .labctl(&[
                "shipments",
                "pickup-paid",
                &pickup_id,
                "--payment-reference",
                "PICKUP-BANK-1",
            ])
            .await
    };
    assert!(confirm().await.is_err(), "a lost carrier answer is not a booking");
    assert_eq!(
        shipment_pickup(&sandbox, &agent, &shipment_id).await["status"],
        "awaiting_payment"
    );

    // The retry reads the carrier's pickup back: its booking is ours, and nothing is booked twice.
    let booked = confirm().await.unwrap();
    assert_eq!(booked["status"], "booked", "{booked}");
    assert_eq!(
        booked["confirmationNumber"], "WTC12345001",
        "the first (billed) booking"
    );
    assert_eq!(double.pickups_bought(), 1, "exactly one pickup is billed");
    let pickup_calls: Vec<String> = double
        .requests()
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| path.contains("/v2/pickups"))
        .collect();
    assert_eq!(
        pickup_calls,
        [
            "/v2/pickups",
            "GET /v2/pickups/pickup_000001",
            "/v2/pickups/pickup_000001/buy",
            "GET /v2/pickups/pickup_000001"
        ],
        "the retry creates no second carrier pickup and buys nothing"
    );
    let pickup = shipment_pickup(&sandbox, &agent, &shipment_id).await;
    assert_eq!(
        (pickup["status"].as_str(), pickup["confirmationNumber"].as_str()),
        (Some("booked"), Some("WTC12345001"))
    );
    // A third confirmation answers the booking as it stands and calls the carrier no more.
    let again = confirm().await.unwrap();
    assert_eq!(again["confirmationNumber"], "WTC12345001");
    let calls_after = double
        .requests()
        .iter()
        .filter(|(path, _)| path.contains("/v2/pickups"))
        .count();
    assert_eq!(
        calls_after,
        pickup_calls.len(),
        "a booked pickup calls the carrier no more"
    );
    sandbox.stop().await;
}

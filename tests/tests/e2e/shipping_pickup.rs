//! Paid door pickups across the mesh: options → signed quote token → request → pay → booked
//! with the carrier, and every refusal (unpaid order, expired, tampered or foreign tokens, past
//! or unoffered dates, confirmation, spend envelope, a second pickup).

use crate::shipping_flow::labelled_order;
use crate::support::{bank_order, stream_events};
use base64::Engine;
use platform::testing::wait_for;
use proto::events::event_envelope::Data;
use serde_json::{Value, json};
use shipping_svc::domain::pickup::{QuoteClaims, sign};
use std::time::Duration;
use tests::{Customer, Sandbox};
use uuid::Uuid;

async fn request(
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
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Pickup Pia", "all").await;
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

    sandbox
        .labctl(&[
            "payments",
            "record",
            "--invoice",
            &invoice_number,
            "--amount-cents",
            &total,
            "--bank-reference",
            "PICKUP-BANK-1",
        ])
        .await
        .unwrap();
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
    let good = json!({ "date": dates[0], "window": "09:00-12:00", "quoteToken": token, "confirm": true });

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
    assert!(pickup["payUrl"].as_str().unwrap().contains(&pickup_id));
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

    // Paid: booked with the carrier, confirmation stored, shipment.updated reports it.
    let booked = sandbox
        .labctl(&[
            "shipments",
            "pickup-paid",
            &pickup_id,
            "--payment-reference",
            "PICKUP-PAY-1",
        ])
        .await
        .unwrap();
    assert_eq!(booked["status"], "booked");
    let confirmation = booked["confirmationNumber"].as_str().unwrap().to_owned();
    assert!(confirmation.starts_with("PU"));
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
                    Some(Data::ShipmentUpdated(data)) if data.status == "pickup_booked" => Some(data),
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
    sandbox.stop().await;
}

//! Replays of EasyPost tracker webhooks, against the EasyPost double: a delivery sent again, or
//! many times at once, is applied once (one scan, one `shipment.updated`) and every copy is
//! answered 200 so EasyPost stops retrying; a validly signed delivery older than the timestamp
//! tolerance is refused and changes nothing; a timestamp (or path) edited to look fresh breaks
//! the signature; claimed event ids are pruned only after their retention.

use crate::shipping_carrier::{easypost, post_webhook};
use crate::shipping_flow::labelled_order;
use crate::support::bank_order;
use platform::testing::events::outbox_events_of;
use platform::testing::{holds_for, wait_for};
use serde_json::Value;
use shipping_svc::config::MAX_WEBHOOK_TOLERANCE_SECS;
use shipping_svc::repo::webhook_events::{self, WebhookEventClaim};
use shipping_svc::service::webhooks::EVENT_ID_RETENTION;
use sqlx::PgPool;
use std::time::Duration;
use tests::easypost::{EasyPostDouble, WEBHOOK_SECRET};
use tests::{Customer, Sandbox};

/// A mesh on the EasyPost double with a bank order whose label is bought: the sandbox, the
/// double (kept running), the customer, the order id and the tracking number.
async fn labelled_on_easypost(
    name: &str,
    idempotency_key: &str,
) -> (Sandbox, EasyPostDouble, Customer, String, String) {
    let double = EasyPostDouble::start().await;
    let base_url = double.base_url();
    let sandbox = Sandbox::start_with(|settings| settings.shipping.carrier = easypost(base_url)).await;
    let agent = sandbox.customer(name, "all").await;
    let (order_id, _, _) = bank_order(&sandbox, &agent, idempotency_key).await;
    let order = labelled_order(&sandbox, &agent, &order_id).await;
    let tracking = order["shipping"]["trackingNumber"].as_str().unwrap().to_owned();
    (sandbox, double, agent, order_id, tracking)
}

fn origin_scan(tracking: &str) -> Vec<u8> {
    EasyPostDouble::tracker_updated(
        tracking,
        &[(
            "in_transit",
            "arrived_at_facility",
            "Origin Scan",
            "2026-11-23T10:00:00Z",
        )],
    )
}

async fn claimed_ids(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM shipping.carrier_webhook_events")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The shipment's scans and its status, as the customer reads them.
async fn shipment_of(sandbox: &Sandbox, agent: &Customer, tracking: &str) -> (usize, String) {
    let answer = sandbox.get(&agent.key, &format!("/shipments/{tracking}")).await;
    let shipment = &answer.body["data"]["shipment"];
    (
        shipment["events"].as_array().map_or(0, Vec::len),
        shipment["status"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Nothing changed after a refused delivery: the order still awaits the parcel, the shipment has
/// no scan, no `shipment.updated` was written and no event id was claimed.
async fn assert_nothing_changed(
    sandbox: &Sandbox,
    agent: &Customer,
    order_id: &str,
    tracking: &str,
    pool: &PgPool,
) {
    holds_for(
        "the order stays label_generated",
        Duration::from_secs(2),
        || async {
            let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
            answer.body["data"]["order"]["status"] == "label_generated"
        },
    )
    .await;
    assert_eq!(shipment_of(sandbox, agent, tracking).await.0, 0);
    assert!(
        outbox_events_of(pool, "shipping", "shipment.updated")
            .await
            .is_empty()
    );
    assert_eq!(claimed_ids(pool).await, 0);
}

#[tokio::test]
async fn a_replayed_tracker_webhook_moves_the_shipment_once_and_emits_one_shipment_updated_event() {
    let (sandbox, _double, agent, order_id, tracking) =
        labelled_on_easypost("Replay Rory", "easy-replay-0001").await;
    let pool = PgPool::connect(&sandbox.database_url).await.unwrap();

    // The same body and headers twice: applied once, the copy answered 200 as a duplicate.
    let accepted = origin_scan(&tracking);
    let headers = EasyPostDouble::signed_headers(&accepted);
    let (status, first) = post_webhook(&sandbox, &accepted, &headers).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        (&first["recorded"], &first["duplicate"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    let (status, copy) = post_webhook(&sandbox, &accepted, &headers).await;
    assert_eq!(status, 200, "{copy}");
    assert_eq!(
        (&copy["recorded"], &copy["duplicate"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    assert_eq!(
        outbox_events_of(&pool, "shipping", "shipment.updated")
            .await
            .len(),
        1
    );

    // The next event (EasyPost resends every tracking detail), eight copies at once: exactly
    // one applies it, every copy gets 200.
    let out_for_delivery = EasyPostDouble::tracker_updated(
        &tracking,
        &[
            (
                "in_transit",
                "arrived_at_facility",
                "Origin Scan",
                "2026-11-23T10:00:00Z",
            ),
            (
                "out_for_delivery",
                "out_for_delivery",
                "Out For Delivery",
                "2026-11-24T08:00:00Z",
            ),
        ],
    );
    let headers = EasyPostDouble::signed_headers(&out_for_delivery);
    let answers =
        futures::future::join_all((0..8).map(|_| post_webhook(&sandbox, &out_for_delivery, &headers))).await;
    assert!(answers.iter().all(|(status, _)| *status == 200), "{answers:?}");
    let applied: Vec<&Value> = answers
        .iter()
        .map(|(_, answer)| answer)
        .filter(|answer| answer["duplicate"] == Value::Bool(false))
        .collect();
    assert_eq!(applied.len(), 1, "{answers:?}");
    assert_eq!(applied[0]["recorded"], Value::Bool(true));

    // Two events, two moves: two scans, one shipment.updated each, two claimed ids.
    assert_eq!(
        shipment_of(&sandbox, &agent, &tracking).await,
        (2, "out_for_delivery".to_owned())
    );
    let updates = outbox_events_of(&pool, "shipping", "shipment.updated").await;
    assert_eq!(updates.len(), 2, "one shipment.updated per event, none per copy");
    assert_eq!(claimed_ids(&pool).await, 2);
    wait_for("the order in transit", Duration::from_secs(30), || async {
        let answer = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
        (answer.body["data"]["order"]["status"] == "in_transit").then_some(())
    })
    .await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_validly_signed_tracker_webhook_older_than_the_tolerance_is_refused_and_changes_nothing() {
    let (sandbox, _double, agent, order_id, tracking) =
        labelled_on_easypost("Stale Stella", "easy-stale-0001").await;
    let pool = PgPool::connect(&sandbox.database_url).await.unwrap();
    let body = origin_scan(&tracking);

    // Signed correctly ten minutes ago (the tolerance is 300 s): a captured delivery replayed.
    let ten_minutes_ago = chrono::Utc::now() - chrono::Duration::minutes(10);
    let stale = EasyPostDouble::headers_signed_with(WEBHOOK_SECRET, &body, ten_minutes_ago);
    let (status, refused) = post_webhook(&sandbox, &body, &stale).await;
    assert_eq!(status, 401, "{refused}");
    assert_eq!(refused["error"]["code"], "unauthenticated");
    assert_eq!(
        refused["error"]["message"],
        "the webhook timestamp is outside the tolerance"
    );
    // As far in the future is refused alike.
    let ten_minutes_ahead = chrono::Utc::now() + chrono::Duration::minutes(10);
    let early = EasyPostDouble::headers_signed_with(WEBHOOK_SECRET, &body, ten_minutes_ahead);
    assert_eq!(post_webhook(&sandbox, &body, &early).await.0, 401);
    assert_nothing_changed(&sandbox, &agent, &order_id, &tracking, &pool).await;

    // The refused copies claimed nothing: the same event signed now is applied.
    let (status, fresh) = post_webhook(&sandbox, &body, &EasyPostDouble::signed_headers(&body)).await;
    assert_eq!(status, 200, "{fresh}");
    assert_eq!(
        (&fresh["recorded"], &fresh["duplicate"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn a_tampered_tracker_webhook_timestamp_breaks_the_signature() {
    let (sandbox, _double, agent, order_id, tracking) =
        labelled_on_easypost("Tamper Tobias", "easy-tamper-0001").await;
    let pool = PgPool::connect(&sandbox.database_url).await.unwrap();
    let body = origin_scan(&tracking);
    let ten_minutes_ago = chrono::Utc::now() - chrono::Duration::minutes(10);
    let stale = EasyPostDouble::headers_signed_with(WEBHOOK_SECRET, &body, ten_minutes_ago);
    let fresh_timestamp = EasyPostDouble::signed_headers(&body)
        .into_iter()
        .find(|(name, _)| *name == "x-timestamp")
        .unwrap()
        .1;

    // The stale delivery with its timestamp replaced by a fresh one: the signature no longer
    // matches. So does an edited path.
    let tampered: Vec<(&str, String)> = stale
        .iter()
        .map(|(name, value)| match *name {
            "x-timestamp" => (*name, fresh_timestamp.clone()),
            _ => (*name, value.clone()),
        })
        .collect();
    let (status, refused) = post_webhook(&sandbox, &body, &tampered).await;
    assert_eq!(status, 401, "{refused}");
    assert_eq!(refused["error"]["message"], "invalid webhook signature");
    let fresh = EasyPostDouble::signed_headers(&body);
    let other_path: Vec<(&str, String)> = fresh
        .iter()
        .map(|(name, value)| match *name {
            "x-path" => (*name, "/api/v1/carriers/other/webhooks".to_owned()),
            _ => (*name, value.clone()),
        })
        .collect();
    let (status, refused) = post_webhook(&sandbox, &body, &other_path).await;
    assert_eq!(status, 401, "{refused}");
    assert_eq!(refused["error"]["message"], "invalid webhook signature");
    assert_nothing_changed(&sandbox, &agent, &order_id, &tracking, &pool).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn claimed_webhook_event_ids_are_pruned_only_after_their_retention() {
    let sandbox = Sandbox::start().await;
    let pool = PgPool::connect(&sandbox.database_url).await.unwrap();
    let now = chrono::Utc::now();
    let retention = chrono::Duration::from_std(EVENT_ID_RETENTION).unwrap();
    let largest_tolerance = chrono::Duration::seconds(MAX_WEBHOOK_TOLERANCE_SECS as i64);
    assert!(
        retention > largest_tolerance * 2,
        "ids outlive twice the largest tolerance"
    );
    let mut conn = pool.acquire().await.unwrap();
    for (event_id, received_at) in [
        ("evt_old", now - retention - chrono::Duration::minutes(1)),
        ("evt_recent", now - retention + chrono::Duration::minutes(1)),
    ] {
        let claim = WebhookEventClaim {
            carrier: "easypost",
            event_id,
            description: "tracker.updated",
            signed_at: received_at,
            received_at,
        };
        assert!(webhook_events::claim(&mut conn, &claim).await.unwrap());
        assert!(
            !webhook_events::claim(&mut conn, &claim).await.unwrap(),
            "claimed once"
        );
    }
    drop(conn);
    assert_eq!(webhook_events::prune(&pool, now - retention).await.unwrap(), 1);
    let left: Vec<String> = sqlx::query_scalar("SELECT event_id FROM shipping.carrier_webhook_events")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(left, ["evt_recent"]);
    sandbox.stop().await;
}

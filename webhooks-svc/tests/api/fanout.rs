//! Events from the streams become signed deliveries: envelope, headers, signatures verified as a
//! customer would, coa.published with results.published, tenant isolation, trace context.

use crate::envelopes::{coa_published, order_created};
use crate::helpers::{PATIENCE, new_path, spawn_app};
use crate::verify::assert_verified;
use proto::webhooks as pb;
use uuid::Uuid;

#[tokio::test]
async fn published_events_arrive_signed_at_the_subscribed_endpoints_of_their_customer_only() {
    let app = spawn_app().await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    let (alice_path, bob_path, results_path) = (new_path(), new_path(), new_path());
    let alice_endpoint = app
        .register(alice, &alice_path, &["order.created", "coa.published"])
        .await;
    let bob_endpoint = app
        .register(bob, &bob_path, &["order.created", "coa.published"])
        .await;
    let results_only = app.register(alice, &results_path, &["results.published"]).await;

    let order = order_created(alice);
    let coa = coa_published(alice);
    app.publish(platform::streams::ORDERS, &order).await;
    app.publish(platform::streams::RESULTS, &coa).await;
    let unsubscribed = crate::envelopes::envelope(
        alice,
        "order.status_changed",
        proto::events::event_envelope::Data::OrderStatusChanged(Default::default()),
    );
    app.publish(platform::streams::ORDERS, &unsubscribed).await;
    // Bob gets one event of his own.
    let bobs = order_created(bob);
    app.publish(platform::streams::ORDERS, &bobs).await;

    let alice_requests = app.wait_for_requests(&alice_path, 2).await;
    let results_requests = app.wait_for_requests(&results_path, 1).await;
    let bob_requests = app.wait_for_requests(&bob_path, 1).await;
    assert_verified(&alice_requests, &alice_endpoint.signing_secret);
    assert_verified(&results_requests, &results_only.signing_secret);
    assert_verified(&bob_requests, &bob_endpoint.signing_secret);

    let event_ids: Vec<String> = alice_requests
        .iter()
        .map(|r| r.header("x-svc-event-id"))
        .collect();
    assert!(event_ids.contains(&order.id) && event_ids.contains(&coa.id));
    assert!(!event_ids.contains(&bobs.id) && !event_ids.contains(&unsubscribed.id));
    assert_eq!(bob_requests[0].header("x-svc-event-id"), bobs.id);

    // The order body: the documented envelope with the spec's snake_case data.
    let order_request = alice_requests
        .iter()
        .find(|request| request.header("x-svc-event-id") == order.id)
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&order_request.body).unwrap();
    assert_eq!(body["type"], "order.created");
    assert_eq!(body["createdAt"], order.occurred_at);
    assert_eq!(body["data"]["total_cents"], 12_500);
    assert_eq!(body["data"]["payment_method"], "bank_invoice");
    assert_eq!(order_request.header("x-svc-event-type"), "order.created");

    // results.published: its own stable id, the same data as coa.published.
    let coa_request = alice_requests
        .iter()
        .find(|request| request.header("x-svc-event-id") == coa.id)
        .unwrap();
    let coa_body: serde_json::Value = serde_json::from_slice(&coa_request.body).unwrap();
    let results_body: serde_json::Value = serde_json::from_slice(&results_requests[0].body).unwrap();
    assert_eq!(results_body["type"], "results.published");
    assert_eq!(results_body["data"], coa_body["data"]);
    assert_eq!(coa_body["data"]["accession_number"], "ACC-2026-0001");
    assert_eq!(coa_body["data"]["lot_number"], "LOT-7");
    let derived = Uuid::new_v5(&coa.id.parse().unwrap(), b"results.published").to_string();
    assert_eq!(results_requests[0].header("x-svc-event-id"), derived);

    // The receiver's traceparent continues the event's trace.
    let trace_id = |traceparent: &str| traceparent.split('-').nth(1).unwrap_or_default().to_owned();
    let sent = order_request.header("traceparent");
    assert_eq!(trace_id(&sent), trace_id(&order.traceparent), "{sent}");

    // Nothing else ever reached anyone; the deliveries read back as succeeded.
    let alice_id = alice_endpoint.endpoint.unwrap().id;
    let deliveries = app
        .wait_for_deliveries(alice, &alice_id, "two succeeded deliveries", |deliveries| {
            deliveries.len() == 2 && deliveries.iter().all(|delivery| delivery.status == "succeeded")
        })
        .await;
    for delivery in &deliveries {
        assert_eq!(delivery.attempt_count, 1);
        assert_eq!(delivery.attempts[0].status_code, Some(200));
        assert_eq!(delivery.attempts[0].outcome, "succeeded");
    }
    assert_eq!(app.receiver.requests().len(), 4);
}

#[tokio::test]
async fn a_redelivered_stream_entry_is_delivered_once_and_bodies_are_identical_across_endpoints() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let (first, second) = (new_path(), new_path());
    app.register(customer, &first, &["order.created"]).await;
    app.register(customer, &second, &["order.created"]).await;
    let order = order_created(customer);
    app.publish(platform::streams::ORDERS, &order).await;
    app.publish(platform::streams::ORDERS, &order).await;
    let at_first = app.wait_for_requests(&first, 1).await;
    let at_second = app.wait_for_requests(&second, 1).await;
    assert_eq!(at_first[0].body, at_second[0].body);
    assert_ne!(
        at_first[0].header("x-svc-delivery-id"),
        at_second[0].header("x-svc-delivery-id")
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM webhooks.deliveries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 2, "the duplicate entry queued nothing");
    platform::testing::nothing_more_arrives(
        "a request for the duplicate entry",
        std::time::Duration::from_millis(300),
        || async { app.receiver.requests().len() },
    )
    .await;
    assert_eq!(app.receiver.requests().len(), 2);
}

#[tokio::test]
async fn a_test_delivery_is_attempted_at_once_and_reports_its_outcome() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let created = app.register(customer, &path, &["order.created"]).await;
    let endpoint_id = created.endpoint.unwrap().id;
    let key = crate::helpers::new_key();
    let send = || {
        let request = pb::SendTestDeliveryRequest {
            endpoint_id: endpoint_id.clone(),
        };
        let request = platform::grpc::outgoing_idempotent(request, &app.token(customer), &key);
        let mut client = app.client.clone();
        async move { client.send_test_delivery(request).await }
    };
    let delivery = send().await.unwrap().into_inner().delivery.unwrap();
    assert_eq!(delivery.event_type, "webhook.test");
    assert_eq!(delivery.status, "succeeded");
    assert_eq!(delivery.attempts.len(), 1);
    assert_eq!(delivery.attempts[0].status_code, Some(200));
    let requests = app.receiver.requests_to(&path);
    assert_eq!(requests.len(), 1);
    assert_verified(&requests, &created.signing_secret);
    let body: serde_json::Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["data"]["endpoint_id"], endpoint_id);
    assert!(body["data"]["message"].as_str().unwrap().contains("test"));
    let replay = send().await.unwrap();
    assert_eq!(replay.metadata().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(replay.into_inner().delivery.unwrap(), delivery);
    assert_eq!(app.receiver.requests_to(&path).len(), 1, "a replay sends nothing");
}

#[tokio::test]
async fn events_read_together_are_each_fanned_out_once_and_an_unusable_one_is_dead_lettered_alone() {
    let app = spawn_app().await;
    let (customer, other) = (Uuid::new_v4(), Uuid::new_v4());
    let (orders_path, results_path) = (new_path(), new_path());
    app.register(customer, &orders_path, &["order.created", "coa.published"])
        .await;
    app.register(customer, &results_path, &["results.published"])
        .await;
    let (first, second, coa) = (
        order_created(customer),
        order_created(customer),
        coa_published(customer),
    );
    let elsewhere = order_created(other);
    let mut unusable = order_created(customer);
    unusable.customer_id = "no customer".into();
    let results = platform::streams::RESULTS;
    app.publish_together(
        platform::streams::ORDERS,
        &[&first, &second, &first, &unusable, &elsewhere],
    )
    .await;
    app.publish_together(results, &[&coa, &coa]).await;

    let at_orders = app.wait_for_requests(&orders_path, 3).await;
    let at_results = app.wait_for_requests(&results_path, 1).await;
    let mut delivered: Vec<String> = at_orders
        .iter()
        .map(|request| request.header("x-svc-event-id"))
        .collect();
    delivered.sort();
    let mut expected = vec![first.id.clone(), second.id.clone(), coa.id.clone()];
    expected.sort();
    assert_eq!(delivered, expected);
    let derived = Uuid::new_v5(&coa.id.parse().unwrap(), b"results.published").to_string();
    assert_eq!(at_results[0].header("x-svc-event-id"), derived);

    let dead_stream = platform::streams::dead_letter_stream(&platform::streams::stream_name(
        &app.stream_prefix,
        platform::streams::ORDERS,
    ));
    let dead = dead_letters(&app, &dead_stream).await;
    assert_eq!(dead.ids.len(), 1, "only the unusable envelope is dead-lettered");
    let reason: String = dead.ids[0].get("reason").unwrap();
    assert!(reason.contains("customer"), "{reason}");

    let processed: Vec<Uuid> =
        sqlx::query_scalar("SELECT event_id FROM webhooks.processed_events ORDER BY event_id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let mut sources: Vec<Uuid> = [&first, &second, &coa, &elsewhere]
        .iter()
        .map(|envelope| envelope.id.parse().unwrap())
        .collect();
    sources.sort();
    assert_eq!(
        processed, sources,
        "each usable event recorded once, the other customer's too"
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM webhooks.deliveries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        stored, 4,
        "one delivery per subscribed endpoint and event, none for duplicates"
    );
    platform::testing::nothing_more_arrives(
        "a second request for an event",
        std::time::Duration::from_millis(300),
        || async { app.receiver.requests().len() },
    )
    .await;
    assert_eq!(app.receiver.requests().len(), 4, "nothing arrived twice");
}

#[tokio::test]
async fn an_event_the_database_refuses_does_not_hold_back_the_others_of_its_read() {
    let app = spawn_app().await;
    let (customer, refused_customer) = (Uuid::new_v4(), Uuid::new_v4());
    let path = new_path();
    app.register(customer, &path, &["order.created"]).await;
    // Stands for any row the database refuses: a trigger rejects one customer's events.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE FUNCTION webhooks.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.customer_id = '{refused_customer}' THEN RAISE EXCEPTION 'refused'; END IF; \
         RETURN NEW; END $$; \
         CREATE TRIGGER refuse BEFORE INSERT ON webhooks.events FOR EACH ROW EXECUTE FUNCTION webhooks.refuse();"
    )))
    .execute(&app.pool)
    .await
    .unwrap();
    let (first, refused, second) = (
        order_created(customer),
        order_created(refused_customer),
        order_created(customer),
    );
    app.publish_together(platform::streams::ORDERS, &[&first, &refused, &second])
        .await;

    let requests = app.wait_for_requests(&path, 2).await;
    let mut delivered: Vec<String> = requests
        .iter()
        .map(|request| request.header("x-svc-event-id"))
        .collect();
    delivered.sort();
    let mut expected = vec![first.id.clone(), second.id.clone()];
    expected.sort();
    assert_eq!(delivered, expected, "the others of the read went out");

    // The refused one is retried on its own and in the end dead-lettered, alone.
    let dead_stream = platform::streams::dead_letter_stream(&platform::streams::stream_name(
        &app.stream_prefix,
        platform::streams::ORDERS,
    ));
    let dead = dead_letters(&app, &dead_stream).await;
    assert_eq!(dead.ids.len(), 1);
    let envelope: Vec<u8> = dead.ids[0].get(platform::streams::ENVELOPE_FIELD).unwrap();
    let envelope = <proto::events::EventEnvelope as prost::Message>::decode(envelope.as_slice()).unwrap();
    assert_eq!(envelope.id, refused.id);
    let recorded: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhooks.processed_events WHERE event_id = $1")
            .bind(Uuid::parse_str(&refused.id).unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded, 0, "nothing of the refused event was committed");
    assert_eq!(app.receiver.requests().len(), 2);
}

/// Waits until `dead_stream` holds an entry, then checks that no duplicate shows up; returns
/// its entries.
async fn dead_letters(app: &crate::helpers::TestApp, dead_stream: &str) -> redis::streams::StreamRangeReply {
    let client = redis::Client::open(app.redis_url.as_str()).unwrap();
    let read = || {
        let client = client.clone();
        async move {
            let mut redis = client.get_multiplexed_async_connection().await.ok()?;
            let dead: redis::streams::StreamRangeReply =
                redis::AsyncCommands::xrange_all(&mut redis, dead_stream)
                    .await
                    .ok()?;
            (!dead.ids.is_empty()).then_some(dead)
        }
    };
    platform::testing::wait_for("an entry in the dead-letter stream", PATIENCE, read).await;
    platform::testing::nothing_more_arrives(
        "a second dead letter",
        std::time::Duration::from_millis(300),
        || async { read().await.map_or(0, |dead| dead.ids.len()) },
    )
    .await;
    read().await.expect("the dead-letter stream")
}

//! Scaling proven: the mesh as separate processes with two replicas of identity-svc, orders-svc,
//! payments-svc and webhooks-svc takes 500 orders with their bank payments and webhooks while
//! one replica of each is killed (`SIGKILL`, no drain), orders go on through the survivors (the
//! gateway verifies the driver's key through its cache or the other identity-svc replica), and
//! the killed replicas are started again. Clients retry as the docs tell them (same
//! `Idempotency-Key`, same bank reference); in the end every order, invoice, payment, event and
//! delivery exists exactly once, every delivery reached the receiver, and the OTLP receiver
//! holds one trace per HTTP request.

use crate::support::{assert_order_views_fresh, order_body, quote_body, two_tests};
use crate::traces::{subscribe, traced_plan};
use chrono::{DateTime, Utc};
use platform::test_receiver::TestReceiver;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tests::otlp::{OtlpReceiver, kind};
use tests::{Customer, Sandbox};

const ORDERS: usize = 500;
const WORKERS: usize = 8;
const EVENTS: [&str; 3] = ["order.created", "invoice.created", "payment.confirmed"];
const SCALED: [&str; 4] = ["identity-svc", "orders-svc", "payments-svc", "webhooks-svc"];
/// Orders completed while a replica of each scaled service is down, before it starts again.
const DURING_OUTAGE: usize = 10;

/// What the driver saw of one order.
#[derive(Clone, Debug)]
struct Placed {
    order_id: String,
    order_number: String,
}

/// Retries `attempt` until it answers `Some`, pausing between tries; panics after two minutes.
async fn retry<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        match attempt().await {
            Ok(value) => return value,
            Err(error) => last = error,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what} never succeeded; last: {last}");
}

/// An answer the client may retry with the same key: the mesh was unavailable, a call timed
/// out, or the same key is still in flight elsewhere.
fn retryable(status: u16, body: &Value) -> bool {
    status >= 500
        || status == 409 && body["error"]["code"] == "idempotency_request_in_progress"
        || status == 429
}

async fn place(
    sandbox: &Sandbox,
    customer: &Customer,
    quote_body: &Value,
    index: usize,
    posts: &AtomicUsize,
) -> Placed {
    // catalog-svc and the gateway run one replica each and are never killed, but the gateway may
    // fail to verify the key while an identity-svc replica dies (a quote it then makes without
    // answering is never used).
    let quote = retry("a quote", || async {
        let answer = sandbox.post(&customer.key, "/quotes", quote_body, &[]).await;
        match answer.status {
            201 => Ok(answer.body["data"]["quote"]["id"].as_str().unwrap().to_owned()),
            status if retryable(status, &answer.body) => Err(format!("{status} {}", answer.body)),
            status => panic!("quote {index}: {status} {}", answer.body),
        }
    })
    .await;
    retry("an order", || async {
        posts.fetch_add(1, Ordering::Relaxed);
        let answer = sandbox
            .post(
                &customer.key,
                "/orders",
                &order_body(&quote),
                &[("Idempotency-Key", &format!("scale-order-{index}"))],
            )
            .await;
        match answer.status {
            201 => Ok(Placed {
                order_id: answer.body["data"]["order"]["id"].as_str().unwrap().to_owned(),
                order_number: answer.body["data"]["order"]["orderNumber"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            }),
            status if retryable(status, &answer.body) => Err(format!("{status} {}", answer.body)),
            status => panic!("order {index}: {status} {}", answer.body),
        }
    })
    .await
}

/// Records the bank payment of an order's invoice through labctl (the live payments-svc
/// replica), retrying with the same bank reference.
async fn pay(sandbox: &Sandbox, customer: &Customer, placed: &Placed, index: usize) {
    let order = retry("the order", || async {
        let answer = sandbox
            .get(&customer.key, &format!("/orders/{}", placed.order_id))
            .await;
        match answer.status {
            200 => Ok(answer.body["data"]["order"].clone()),
            status => Err(format!("{status} {}", answer.body)),
        }
    })
    .await;
    let invoice = order["payment"]["invoiceNumber"].as_str().unwrap().to_owned();
    let total = order["totalCents"].as_i64().unwrap().to_string();
    let reference = format!("SCALE-{index}");
    retry("the payment", || async {
        crate::support::try_record_bank_payment(sandbox, &invoice, &total, &reference)
            .await
            .map_err(|error| error.to_string())
    })
    .await;
}

async fn count(pool: &sqlx::PgPool, sql: &str) -> i64 {
    // The test's own statements (the only value spliced in is a customer UUID it was given).
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(pool)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

#[tokio::test]
async fn five_hundred_orders_happen_exactly_once_while_a_replica_of_each_scaled_service_is_killed_and_restarted()
 {
    let traces = OtlpReceiver::start().await;
    let webhooks = TestReceiver::start().await;
    let mut plan = traced_plan(&traces, &webhooks);
    for service in SCALED {
        plan = plan.replicas(service, 2);
    }
    // Work a killed replica held (idempotency claims, unacknowledged stream entries, delivery
    // leases) is taken over after seconds instead of the production half minute.
    let plan = plan
        .env("ORDERS_IDEMPOTENCY_LEASE_MS", "3000")
        .env("ORDERS_CONSUMER_RECLAIM_IDLE_MS", "3000")
        .env("PAYMENTS_CONSUMER_RECLAIM_IDLE_MS", "3000")
        .env("WEBHOOKS_CONSUMER_RECLAIM_IDLE_MS", "3000")
        .env("WEBHOOKS_REQUEST_TIMEOUT_MS", "2000")
        .env("WEBHOOKS_DELIVERY_LEASE_MS", "5000")
        .env("WEBHOOKS_RETRY_SCHEDULE_MS", "500,1000,2000,4000,8000")
        // The gateway asks identity-svc about the driver's key every second rather than every
        // 5 s, so its lookups meet the outages of identity-svc's replicas.
        .env("GATEWAY_KEY_CACHE_TTL_MS", "1000");
    let sandbox = Sandbox::start_processes(&plan).await;
    let customer = sandbox.customer("Scale Sam", "all").await;
    subscribe(&sandbox, &customer, &webhooks.url("/sam"), &EVENTS).await;
    let quote_body = quote_body(&two_tests(&sandbox, &customer, "peptides").await, &["BPC-157"]);
    let database = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();

    let sandbox = Arc::new(sandbox);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let posts = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..WORKERS {
        let (sandbox, customer, quote_body, next, done, posts) = (
            Arc::clone(&sandbox),
            customer.clone(),
            quote_body.clone(),
            Arc::clone(&next),
            Arc::clone(&done),
            Arc::clone(&posts),
        );
        workers.spawn(async move {
            let mut placed = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= ORDERS {
                    return placed;
                }
                let order = place(&sandbox, &customer, &quote_body, index, &posts).await;
                pay(&sandbox, &customer, &order, index).await;
                done.fetch_add(1, Ordering::Relaxed);
                placed.push((index, order));
            }
        });
    }

    // The chaos: at 100 and 300 orders done, kill replica 0, then replica 1, of each scaled
    // service; start each again once the survivors have completed DURING_OUTAGE more orders.
    // When each round of kills started and ended.
    let mut kills: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
    let orders_done = |count: usize| {
        let done = Arc::clone(&done);
        async move { (done.load(Ordering::Relaxed) >= count).then_some(()) }
    };
    for (threshold, replica) in [(100, 0), (300, 1)] {
        let what = format!("{threshold} orders to be done");
        platform::testing::wait_for(&what, Duration::from_secs(600), || orders_done(threshold)).await;
        let started = Utc::now();
        for service in SCALED {
            sandbox.processes().kill(service, replica).await;
        }
        kills.push((started, Utc::now()));
        let during = done.load(Ordering::Relaxed) + DURING_OUTAGE;
        let what = format!("{DURING_OUTAGE} orders to be done by the surviving replicas");
        platform::testing::wait_for(&what, Duration::from_secs(120), || orders_done(during)).await;
        for service in SCALED {
            sandbox.processes().restart(service, replica).await;
        }
    }
    let mut placed: BTreeMap<usize, Placed> = BTreeMap::new();
    while let Some(joined) = workers.join_next().await {
        placed.extend(joined.expect("a worker finished"));
    }
    assert_eq!(placed.len(), ORDERS);
    let sandbox = Arc::into_inner(sandbox).expect("the workers are done");

    // Every order once: one per idempotency key, and every answer named a different order.
    let order_ids: BTreeSet<&str> = placed.values().map(|order| order.order_id.as_str()).collect();
    assert_eq!(order_ids.len(), ORDERS, "each key answered its own order");
    let customer_filter = format!("customer_id = '{}'", customer.id);
    assert_eq!(
        count(
            &database,
            &format!("SELECT count(*) FROM orders.orders WHERE {customer_filter}")
        )
        .await,
        ORDERS as i64,
        "no order was created twice"
    );
    // Every invoice and payment once, each order's invoice paid in full.
    assert_eq!(
        count(
            &database,
            &format!("SELECT count(*) FROM payments.invoices WHERE {customer_filter}")
        )
        .await,
        ORDERS as i64
    );
    assert_eq!(
        count(
            &database,
            &format!("SELECT count(*) FROM payments.payments WHERE {customer_filter}")
        )
        .await,
        ORDERS as i64,
        "no payment was recorded twice"
    );
    assert_eq!(
        count(
            &database,
            &format!("SELECT count(*) FROM payments.invoices WHERE {customer_filter} AND status <> 'paid'")
        )
        .await,
        0,
        "every invoice is paid"
    );
    // Each order consumed its payment exactly once: no status entered twice.
    assert_eq!(
        count(
            &database,
            "SELECT count(*) FROM (SELECT order_id, to_status FROM orders.order_status_history \
             GROUP BY order_id, to_status HAVING count(*) > 1) AS twice"
        )
        .await,
        0,
        "no order entered a status twice"
    );
    // Every event was published once.
    for (schema, event, expected) in [
        ("orders", "order.created", ORDERS),
        ("payments", "invoice.created", ORDERS),
        ("payments", "payment.confirmed", ORDERS),
    ] {
        assert_eq!(
            count(
                &database,
                &format!("SELECT count(*) FROM {schema}.outbox WHERE event_type = '{event}'")
            )
            .await,
            expected as i64,
            "{event} was enqueued once per order"
        );
    }

    // Every delivery once, and each reached the receiver.
    let expected_deliveries = (ORDERS * EVENTS.len()) as i64;
    platform::testing::wait_for("every delivery to succeed", Duration::from_secs(120), || async {
        let succeeded = count(
            &database,
            "SELECT count(*) FROM webhooks.deliveries WHERE status = 'succeeded'",
        )
        .await;
        (succeeded == expected_deliveries).then_some(())
    })
    .await;
    assert_eq!(
        count(&database, "SELECT count(*) FROM webhooks.deliveries").await,
        expected_deliveries,
        "one delivery per event and endpoint"
    );
    let requests = webhooks.requests_to("/sam");
    let mut by_event: HashMap<String, BTreeSet<String>> = HashMap::new();
    for request in &requests {
        by_event
            .entry(request.header("x-svc-event-id").to_owned())
            .or_default()
            .insert(request.header("x-svc-delivery-id").to_owned());
    }
    assert_eq!(
        by_event.len() as i64,
        expected_deliveries,
        "the receiver saw every event"
    );
    for (event, deliveries) in &by_event {
        assert_eq!(
            deliveries.len(),
            1,
            "event {event} came as one delivery (a resend repeats its delivery id)"
        );
    }
    let resent = requests.len() as i64 - expected_deliveries;

    // Stop the survivors with SIGTERM: they flush their spans.
    assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;

    // One trace per HTTP request: every POST /orders the driver sent has its own gateway span
    // and trace.
    let sent = posts.load(Ordering::Relaxed);
    let spans = traces
        .wait_until(Duration::from_secs(30), |spans| {
            spans
                .iter()
                .filter(|span| span.service == "gateway" && span.name == "POST /api/v1/agent/orders")
                .count()
                >= sent
        })
        .await;
    let gateway_posts: Vec<_> = spans
        .iter()
        .filter(|span| span.service == "gateway" && span.name == "POST /api/v1/agent/orders")
        .collect();
    assert_eq!(gateway_posts.len(), sent, "one server span per POST /orders");
    let post_traces: BTreeSet<&str> = gateway_posts.iter().map(|span| span.trace_id.as_str()).collect();
    assert_eq!(post_traces.len(), sent, "each POST /orders is its own trace");
    assert!(gateway_posts.iter().all(|span| span.parent_span_id.is_empty()));
    // Every CreateOrder that orders-svc exported lies in the trace of one of those requests, and
    // every order's creation was exported unless its replica was killed before it could export
    // (within the batch delay before a kill).
    let mut traced_numbers: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for span in spans.iter().filter(|span| {
        span.service == "orders-svc"
            && span.kind == kind::SERVER
            && span.name == "lab.orders.v1.OrdersService/CreateOrder"
    }) {
        assert!(
            post_traces.contains(span.trace_id.as_str()),
            "CreateOrder span {} is in a POST /orders trace",
            span.span_id
        );
        if let Some(number) = span.attribute("lab.order.number") {
            traced_numbers
                .entry(number)
                .or_default()
                .insert(span.trace_id.as_str());
        }
    }
    let created: Vec<(String, DateTime<Utc>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT order_number, created_at FROM orders.orders WHERE {customer_filter}"
    )))
    .fetch_all(&database)
    .await
    .unwrap();
    let stored: BTreeSet<&str> = created.iter().map(|(number, _)| number.as_str()).collect();
    let answered: BTreeSet<&str> = placed.values().map(|order| order.order_number.as_str()).collect();
    assert_eq!(stored, answered, "the orders answered are the orders stored");
    let mut untraced = 0;
    for (number, created_at) in &created {
        if traced_numbers.contains_key(number.as_str()) {
            continue;
        }
        untraced += 1;
        // CreateOrder's span ends (and is exported within 100 ms) only once the order's label
        // came back or the label wait passed (ORDERS_LABEL_WAIT_MS, 3 s): a replica killed within
        // that wait after the order was stored takes the span with it.
        let span_lifetime = chrono::Duration::seconds(5);
        assert!(
            kills
                .iter()
                .any(|(started, ended)| *created_at <= *ended && *started - *created_at < span_lifetime),
            "order {number} (created {created_at}) has no trace, and no replica was killed just after"
        );
    }
    eprintln!(
        "scaling: {ORDERS} orders, {sent} POST /orders sent, {resent} webhook resends, {untraced} orders whose \
         spans died with a killed replica, kills at {kills:?}"
    );
}

//! One trace per API call across the mesh run as separate processes, exported over OTLP/gRPC to a
//! real receiver: the gateway's HTTP server span, every gRPC hop (client and server), the
//! database work, the outbox's create and send, each consumer group's processing and the
//! webhook delivery attempts, named and parented per the OpenTelemetry semantic conventions.

use crate::support::{order_body, quote};
use platform::test_receiver::TestReceiver;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
use tests::otlp::{OtlpReceiver, Span, kind};
use tests::processes::Plan;
use tests::{Customer, Sandbox};

const REQUEST_ID: &str = "trace-test-order-1";
const CREATE_ORDER: &str = "lab.orders.v1.OrdersService/CreateOrder";

/// The mesh as processes exporting every span to `receiver`, its webhooks allowed to reach
/// `webhooks` on loopback.
pub(crate) fn traced_plan(receiver: &OtlpReceiver, webhooks: &TestReceiver) -> Plan {
    let ca_file = std::env::temp_dir().join(format!("lab-webhook-ca-{}.pem", uuid::Uuid::new_v4()));
    std::fs::write(&ca_file, webhooks.ca_pem()).expect("the CA is written");
    Plan::new(env!("CARGO_BIN_EXE_lab-process"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        // Export within 100 ms, and never drop a span under load.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "262144")
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096")
        .env("WEBHOOKS_ALLOW_LOOPBACK_TARGETS", "1")
        .env("WEBHOOKS_EXTRA_ROOT_CERTS_FILE", ca_file.to_string_lossy())
}

pub(crate) async fn subscribe(sandbox: &Sandbox, customer: &Customer, url: &str, events: &[&str]) {
    let answer = sandbox
        .post(
            &customer.key,
            "/webhooks",
            &json!({ "url": url, "events": events }),
            &[("Idempotency-Key", "trace-hook-1")],
        )
        .await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
}

fn one<'a>(spans: &'a [Span], what: &str, matches: impl Fn(&Span) -> bool) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|span| matches(span)).collect();
    assert_eq!(found.len(), 1, "exactly one {what}; found {found:#?}");
    found[0]
}

fn is_ancestor(spans: &HashMap<&str, &Span>, ancestor: &Span, span: &Span) -> bool {
    let mut current = span;
    for _ in 0..64 {
        let Some(parent) = spans.get(current.parent_span_id.as_str()) else {
            return false;
        };
        if parent.span_id == ancestor.span_id {
            return true;
        }
        current = parent;
    }
    false
}

#[tokio::test]
async fn one_post_orders_is_one_trace_through_every_hop_consumer_and_webhook_attempt() {
    let receiver = OtlpReceiver::start().await;
    let webhooks = TestReceiver::start().await;
    let sandbox = Sandbox::start_processes(&traced_plan(&receiver, &webhooks)).await;
    let customer = sandbox.customer("Trace Tina", "all").await;
    subscribe(
        &sandbox,
        &customer,
        &webhooks.url("/tina"),
        &["order.created", "invoice.created"],
    )
    .await;
    let quote = quote(&sandbox, &customer, &["BPC-157"]).await;
    let placed = sandbox
        .post(
            &customer.key,
            "/orders",
            &order_body(quote["id"].as_str().unwrap()),
            &[("Idempotency-Key", "trace-order-1"), ("X-Request-Id", REQUEST_ID)],
        )
        .await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);
    let order_number = placed.body["data"]["order"]["orderNumber"]
        .as_str()
        .expect("an order number")
        .to_owned();

    // The consumer groups of the orders stream: each must process order.created in the trace.
    let mut redis = redis::Client::open(sandbox.redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let orders_stream = platform::streams::stream_name(&sandbox.stream_prefix, "orders");
    let groups: redis::streams::StreamInfoGroupsReply = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(&orders_stream)
        .query_async(&mut redis)
        .await
        .unwrap();
    let groups: BTreeSet<String> = groups.groups.into_iter().map(|group| group.name).collect();
    assert!(groups.contains("webhooks-svc"), "{groups:?}");

    let root_of = |spans: &[Span]| {
        spans
            .iter()
            .find(|span| {
                span.service == "gateway"
                    && span.kind == kind::SERVER
                    && span.attribute("http.request.header.x-request-id") == Some(REQUEST_ID)
            })
            .map(|span| span.trace_id.clone())
    };
    let spans = receiver
        .wait_until(Duration::from_secs(60), |spans| {
            let Some(trace_id) = root_of(spans) else {
                return false;
            };
            let trace: Vec<&Span> = spans.iter().filter(|span| span.trace_id == trace_id).collect();
            let attempts = trace
                .iter()
                .filter(|span| span.service == "webhooks-svc" && span.kind == kind::CLIENT)
                .count();
            let processed: BTreeSet<&str> = trace
                .iter()
                .filter(|span| span.kind == kind::CONSUMER && span.name == "process events:orders")
                .map(|span| {
                    span.attribute("messaging.consumer.group.name")
                        .unwrap_or_default()
                })
                .collect();
            // The relay's `send` ends after its commit, possibly after a consumer processed
            // the event: wait for every event's.
            let created: BTreeSet<&str> = trace
                .iter()
                .filter(|span| span.name == "create events:orders")
                .filter_map(|span| span.attribute("messaging.message.id"))
                .collect();
            let sent: BTreeSet<&str> = trace
                .iter()
                .filter(|span| span.name == "send events:orders")
                .filter_map(|span| span.attribute("messaging.message.id"))
                .collect();
            // A parent span ends (and is exported) after its children: wait for every parent.
            let ids: BTreeSet<&str> = trace.iter().map(|span| span.span_id.as_str()).collect();
            let complete = trace
                .iter()
                .all(|span| span.parent_span_id.is_empty() || ids.contains(span.parent_span_id.as_str()));
            attempts >= 2
                && groups.iter().all(|group| processed.contains(group.as_str()))
                && !created.is_empty()
                && created == sent
                && complete
        })
        .await;
    let trace_id = root_of(&spans).unwrap_or_else(|| panic!("no gateway span for {REQUEST_ID}: {spans:#?}"));
    let trace: Vec<Span> = spans
        .iter()
        .filter(|span| span.trace_id == trace_id)
        .cloned()
        .collect();
    let by_id: HashMap<&str, &Span> = trace.iter().map(|span| (span.span_id.as_str(), span)).collect();

    // One root, and every other span's parent is in the trace.
    let roots: Vec<&Span> = trace
        .iter()
        .filter(|span| span.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "one root: {roots:#?}");
    let root = roots[0];
    for span in &trace {
        assert!(
            span.parent_span_id.is_empty() || by_id.contains_key(span.parent_span_id.as_str()),
            "the parent of {} ({}) is in the trace",
            span.name,
            span.service
        );
    }

    // The gateway's HTTP server span.
    assert_eq!(root.service, "gateway");
    assert_eq!(root.name, "POST /api/v1/agent/orders");
    assert_eq!(root.kind, kind::SERVER);
    assert_eq!(root.attribute("http.request.method"), Some("POST"));
    assert_eq!(root.attribute("http.route"), Some("/api/v1/agent/orders"));
    assert_eq!(root.attribute("http.response.status_code"), Some("201"));
    assert_eq!(root.attribute("lab.customer.id"), Some(customer.id.as_str()));

    // gateway → orders-svc, client and server, the server a child of the client.
    let gateway_call = one(&trace, "gateway CreateOrder client span", |span| {
        span.service == "gateway" && span.kind == kind::CLIENT && span.name == CREATE_ORDER
    });
    assert!(is_ancestor(&by_id, root, gateway_call));
    assert_eq!(gateway_call.attribute("rpc.system"), Some("grpc"));
    assert_eq!(gateway_call.attribute("rpc.grpc.status_code"), Some("0"));
    let orders_server = one(&trace, "orders-svc CreateOrder server span", |span| {
        span.service == "orders-svc" && span.kind == kind::SERVER && span.name == CREATE_ORDER
    });
    assert_eq!(orders_server.parent_span_id, gateway_call.span_id);
    assert_eq!(
        orders_server.attribute("rpc.service"),
        Some("lab.orders.v1.OrdersService")
    );
    assert_eq!(orders_server.attribute("rpc.method"), Some("CreateOrder"));
    assert_eq!(orders_server.attribute("rpc.grpc.status_code"), Some("0"));
    assert_eq!(
        orders_server.attribute("lab.order.number"),
        Some(order_number.as_str())
    );

    // orders-svc → catalog-svc and payments-svc inside the CreateOrder call; and every RPC
    // server span of the trace is the child of a client span of the same method in another
    // service (consumers call peers too: shipping-svc reads the quote for the label).
    for peer in ["catalog-svc", "payments-svc"] {
        let called_by_orders = trace.iter().any(|span| {
            span.service == peer
                && span.kind == kind::SERVER
                && by_id.get(span.parent_span_id.as_str()).is_some_and(|client| {
                    client.service == "orders-svc" && is_ancestor(&by_id, orders_server, client)
                })
        });
        assert!(
            called_by_orders,
            "orders-svc called {peer} while creating the order"
        );
    }
    for server in trace
        .iter()
        .filter(|span| span.kind == kind::SERVER && span.service != "gateway")
    {
        let client = by_id[server.parent_span_id.as_str()];
        assert_eq!(client.kind, kind::CLIENT, "the parent of {}", server.name);
        assert_eq!(client.name, server.name);
        assert_ne!(client.service, server.service);
        assert_eq!(client.attribute("rpc.system"), Some("grpc"));
    }

    // Database work, as client spans named `{operation} {collection}`.
    let insert = one(&trace, "INSERT orders.orders", |span| {
        span.name == "INSERT orders.orders"
    });
    assert_eq!(insert.service, "orders-svc");
    assert_eq!(insert.kind, kind::CLIENT);
    assert_eq!(insert.attribute("db.system.name"), Some("postgresql"));
    assert_eq!(insert.attribute("db.collection.name"), Some("orders.orders"));
    assert!(is_ancestor(&by_id, orders_server, insert));
    assert!(
        trace.iter().any(|span| span.service == "payments-svc"
            && span.name == "INSERT payments.invoices"
            && is_ancestor(&by_id, orders_server, span)),
        "payments-svc stored the order's invoice inside the call"
    );

    // The outbox: order.created is created inside the call and sent by the relay.
    let created: Vec<&Span> = trace
        .iter()
        .filter(|span| span.service == "orders-svc" && span.name == "create events:orders")
        .collect();
    assert!(!created.is_empty(), "orders-svc created an event");
    for create in &created {
        assert_eq!(create.kind, kind::PRODUCER);
        assert!(is_ancestor(&by_id, orders_server, create));
        assert_eq!(create.attribute("messaging.system"), Some("redis"));
        let event_id = create.attribute("messaging.message.id").unwrap();
        let send = one(&trace, "send of the event", |span| {
            span.name == "send events:orders" && span.attribute("messaging.message.id") == Some(event_id)
        });
        assert_eq!(send.kind, kind::PRODUCER);
        assert_eq!(send.parent_span_id, create.span_id);
    }

    // Each consumer group processed order.created as a child of its creation.
    let order_created = trace
        .iter()
        .find(|span| span.kind == kind::CONSUMER && span.attribute("lab.event.type") == Some("order.created"))
        .expect("order.created was processed")
        .attribute("messaging.message.id")
        .unwrap()
        .to_owned();
    let create = one(&trace, "create of order.created", |span| {
        span.kind == kind::PRODUCER
            && span.name == "create events:orders"
            && span.attribute("messaging.message.id") == Some(order_created.as_str())
    });
    for group in &groups {
        let process = one(&trace, &format!("{group} processing order.created"), |span| {
            span.kind == kind::CONSUMER
                && span.attribute("messaging.consumer.group.name") == Some(group.as_str())
                && span.attribute("messaging.message.id") == Some(order_created.as_str())
        });
        assert_eq!(process.service, *group, "a group is named after its service");
        assert_eq!(process.name, "process events:orders");
        assert_eq!(process.parent_span_id, create.span_id);
    }

    // The webhook attempts (order.created and invoice.created), each a child of webhooks-svc's
    // processing of its event, as HTTP client spans.
    let attempts: Vec<&Span> = trace
        .iter()
        .filter(|span| span.service == "webhooks-svc" && span.kind == kind::CLIENT)
        .collect();
    let types: BTreeSet<&str> = attempts
        .iter()
        .map(|span| span.attribute("lab.event.type").unwrap_or_default())
        .collect();
    assert_eq!(types, BTreeSet::from(["invoice.created", "order.created"]));
    for attempt in attempts {
        assert_eq!(attempt.name, "POST");
        assert_eq!(attempt.attribute("http.request.method"), Some("POST"));
        assert_eq!(attempt.attribute("http.response.status_code"), Some("200"));
        assert_eq!(attempt.attribute("server.address"), Some("127.0.0.1"));
        let parent = by_id[attempt.parent_span_id.as_str()];
        assert_eq!(parent.service, "webhooks-svc");
        assert_eq!(parent.kind, kind::CONSUMER);
        assert_eq!(
            parent.attribute("messaging.message.id"),
            attempt.attribute("lab.event.id"),
            "the attempt continues the processing of its own event"
        );
    }
    // The receiver saw the same trace in the `traceparent` of each delivery.
    for request in webhooks.requests_to("/tina") {
        assert!(
            request.header("traceparent").contains(&trace_id),
            "delivery traceparent {} names the trace",
            request.header("traceparent")
        );
    }

    // One trace per API call: no span of this request or this order lies in another trace.
    for span in &spans {
        let ours = span.attribute("http.request.header.x-request-id") == Some(REQUEST_ID)
            || span.attribute("lab.order.number") == Some(order_number.as_str());
        assert!(
            !ours || span.trace_id == trace_id,
            "{span:#?} is in another trace"
        );
    }
    sandbox.stop().await;
}

#[tokio::test]
async fn a_pay_link_never_reaches_a_span_or_a_log_of_any_process() {
    let receiver = OtlpReceiver::start().await;
    let webhooks = TestReceiver::start().await;
    let sandbox = Sandbox::start_processes(&traced_plan(&receiver, &webhooks).env("RUST_LOG", "info")).await;
    let customer = sandbox.customer("Pay Link Paula", "all").await;
    let order = crate::card_checkout::card_order(&sandbox, &customer, "pay-link-trace-1").await;
    let link = order["payment"]["hostedUrl"]
        .as_str()
        .expect("a pay link")
        .to_owned();
    let session = link.rsplit('/').next().unwrap().to_owned();
    assert!(session.len() > 20, "{link}");
    // The payer opens the page and pays: every hop of it is traced and logged at info.
    assert_eq!(crate::card_checkout::open_page(&sandbox, &link).await.status, 200);
    let paid = crate::card_checkout::pay_with(&sandbox, &link, crate::card_checkout::SUCCESS_CARD).await;
    assert_eq!(paid.outcome(), "paid", "{}", paid.html);
    let spans = receiver
        .wait_until(Duration::from_secs(60), |spans| {
            spans.iter().any(|span| {
                span.service == "gateway"
                    && span.kind == kind::SERVER
                    && span.name == "POST /pay/{session_id}"
            }) && spans
                .iter()
                .any(|span| span.service == "payments-svc" && span.kind == kind::SERVER)
        })
        .await;
    let pay_spans: Vec<&Span> = spans
        .iter()
        .filter(|span| {
            span.attribute("url.path")
                .is_some_and(|path| path.starts_with("/pay/"))
        })
        .collect();
    assert!(!pay_spans.is_empty(), "the pay page's server spans are exported");
    assert!(
        pay_spans.iter().all(|span| span
            .attribute("url.path")
            .is_some_and(|path| path.starts_with("/pay/{sessionId}"))),
        "{pay_spans:#?}"
    );
    for span in &spans {
        for (key, value) in &span.attributes {
            assert!(
                !value.contains(&session),
                "span {} of {} has {key}={value}",
                span.name,
                span.service
            );
        }
        assert!(!span.name.contains(&session), "{span:#?}");
    }
    let logs = sandbox.processes().logs();
    assert!(
        logs.contains("card checkout settled"),
        "the settlement is logged at info"
    );
    assert!(!logs.contains(&session), "a log line holds the session id");
    sandbox.stop().await;
}

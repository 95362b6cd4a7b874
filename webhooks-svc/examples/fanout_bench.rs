//! Benchmark of webhook fan-out to a local HTTPS receiver (not a test):
//!
//! 1. throughput: events published on the orders stream, fanned out to `ENDPOINTS` endpoints,
//!    signed and delivered; reports signed deliveries per second from the first publish to the
//!    last receipt;
//! 2. latency: one endpoint, events published at a fixed rate; reports publish-to-receipt
//!    percentiles (the XADD stands for the source's commit: the outbox relay publishes right
//!    after it).
//!
//! Needs the local PostgreSQL and Redis of the tests. Run:
//! `cargo run --release -p webhooks-svc --example fanout_bench [-- --rate 1000 --seconds 10 --plain-db
//! --consumers 4 --batch 32 --in-flight 64]`.

use chrono::{DateTime, Utc};
use platform::config::CommonSettings;
use platform::principal::{Principal, PrincipalKind};
use platform::test_receiver::TestReceiver;
use platform::tokens::testing::DevTokens;
use prost::Message;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::webhooks as pb;
use proto::webhooks::webhooks_service_client::WebhooksServiceClient;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;
use webhooks_svc::{Application, Settings};

/// Endpoints of the customer in the throughput run.
const ENDPOINTS: usize = 10;
/// Events of the throughput run.
const THROUGHPUT_EVENTS: usize = 2_000;

struct Bench {
    client: WebhooksServiceClient<Channel>,
    keys: DevTokens,
    receiver: TestReceiver,
    redis: redis::aio::MultiplexedConnection,
    stream: String,
    _shutdown: tokio_util::sync::DropGuard,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: u64| {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|index| args.get(index + 1))
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let (rate, seconds) = (flag("--rate", 1_000), flag("--seconds", 10));

    // `--plain-db`: no TLS to the loopback PostgreSQL (sqlx prefers TLS when the server offers it).
    let tuning = Tuning {
        database_tls: !args.iter().any(|arg| arg == "--plain-db"),
        consumers: usize::try_from(flag("--consumers", 0))?,
        consumer_batch: usize::try_from(flag("--batch", 0))?,
        max_in_flight: usize::try_from(flag("--in-flight", 0))?,
    };
    let bench = start(tuning).await?;
    let throughput_customer = Uuid::new_v4();
    for index in 0..ENDPOINTS {
        register(&bench, throughput_customer, &format!("/throughput/{index}")).await?;
    }
    let latency_customer = Uuid::new_v4();
    register(&bench, latency_customer, "/latency").await?;
    // Warm up connections, prepared statements and caches: a burst, then one second at the
    // measured rate (the first milliseconds at a new rate open database connections).
    publish_many(&bench, latency_customer, 200).await?;
    let warm_up = usize::try_from(rate)?;
    publish_at_rate(&bench, latency_customer, rate, warm_up).await?;
    wait_for(&bench, "/latency", 200 + warm_up, Duration::from_secs(60)).await?;

    let total = usize::try_from(rate * seconds)?;
    let published = publish_at_rate(&bench, latency_customer, rate, total).await?;
    wait_for(
        &bench,
        "/latency",
        200 + warm_up + total,
        Duration::from_secs(120),
    )
    .await?;
    let mut latencies: Vec<f64> = bench
        .receiver
        .requests_to("/latency")
        .iter()
        .filter_map(|request| {
            let sent = published.get(&request.header("x-svc-event-id"))?;
            Some((request.received_at - *sent).num_microseconds()? as f64 / 1000.0)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let percentile = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];

    // Let the database settle (autovacuum after the latency run) before measuring throughput.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deliveries = THROUGHPUT_EVENTS * ENDPOINTS;
    let started = Instant::now();
    publish_many(&bench, throughput_customer, THROUGHPUT_EVENTS).await?;
    let fanned_out = fan_out_done(&bench).await?;
    let received = wait_for(&bench, "/throughput/", deliveries, Duration::from_secs(600)).await?;
    let elapsed = started.elapsed();
    let fanned_out = fanned_out.saturating_duration_since(started);
    let per_second = received as f64 / elapsed.as_secs_f64();

    println!("| Measure | Value |");
    println!("|---|---|");
    println!(
        "| Signed deliveries/s ({THROUGHPUT_EVENTS} events × {ENDPOINTS} endpoints, HTTPS keep-alive) | {per_second:.0} |"
    );
    println!(
        "| Deliveries in that run | {received} in {:.2} s |",
        elapsed.as_secs_f64()
    );
    println!(
        "| Fan-out of that run (every event stored, its deliveries queued, XACKed) | {:.2} s ({:.0} events/s) |",
        fanned_out.as_secs_f64(),
        THROUGHPUT_EVENTS as f64 / fanned_out.as_secs_f64()
    );
    println!("| Latency run | {total} events at {rate}/s for {seconds} s, 1 endpoint |");
    for (name, p) in [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999)] {
        println!("| Publish-to-receipt {name} | {:.1} ms |", percentile(p));
    }
    println!(
        "| Publish-to-receipt max | {:.1} ms |",
        latencies.last().copied().unwrap_or_default()
    );
    Ok(())
}

/// Settings under test (0 keeps the service's default).
struct Tuning {
    database_tls: bool,
    consumers: usize,
    consumer_batch: usize,
    max_in_flight: usize,
}

async fn start(tuning: Tuning) -> anyhow::Result<Bench> {
    let receiver = TestReceiver::start().await;
    let mut database_url = platform::testing::fresh_database().await;
    // Explicit either way: without an sslmode, platform::db reaches a loopback server without TLS.
    database_url.push_str(if tuning.database_tls {
        "?sslmode=prefer"
    } else {
        "?sslmode=disable"
    });
    if let Ok(extra) = std::env::var("BENCH_DB_PARAMS") {
        database_url.push(if database_url.contains('?') { '&' } else { '?' });
        database_url.push_str(&extra);
    }
    let redis_url = platform::testing::redis_url();
    let prefix = platform::testing::unique_stream_prefix();
    let common = CommonSettings::local(&database_url, &redis_url, &prefix);
    let keys = DevTokens::new("webhooks-svc");
    let mut settings = Settings::local(common);
    settings.allow_loopback_targets = true;
    settings.extra_root_certificates_pem = vec![receiver.ca_pem()];
    settings.consumer.block = Duration::from_millis(500);
    if tuning.consumers > 0 {
        settings.consumers = tuning.consumers;
    }
    if tuning.consumer_batch > 0 {
        settings.consumer_batch = tuning.consumer_batch;
    }
    if tuning.max_in_flight > 0 {
        settings.delivery.max_in_flight = tuning.max_in_flight;
    }
    eprintln!(
        "consumers {}, entries per read {}, attempts in flight {}",
        settings.consumers, settings.consumer_batch, settings.delivery.max_in_flight
    );
    let application = Application::build(settings).await?;
    let address = application.local_addr();
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let channel = Channel::from_shared(format!("http://{address}"))?
        .connect()
        .await?;
    let redis = redis::Client::open(redis_url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    Ok(Bench {
        client: WebhooksServiceClient::new(channel),
        keys,
        receiver,
        redis,
        stream: platform::streams::stream_name(&prefix, platform::streams::ORDERS),
        _shutdown: shutdown.drop_guard(),
    })
}

async fn register(bench: &Bench, customer: Uuid, path: &str) -> anyhow::Result<()> {
    let token = bench.keys.mint(&Principal {
        kind: PrincipalKind::Customer,
        subject: "bench-key".into(),
        customer_id: Some(customer),
        scopes: vec!["webhooks:write".into(), "orders:read".into()],
        roles: vec![],
        spend_limit_cents: None,
        operator_id: None,
        credential_id: None,
        sandbox: false,
    });
    let request = pb::CreateEndpointRequest {
        url: bench.receiver.url(path),
        events: vec!["order.created".into()],
        description: None,
    };
    let key = format!("bench-{}", Uuid::new_v4());
    bench
        .client
        .clone()
        .create_endpoint(platform::grpc::outgoing_idempotent(request, &token, &key))
        .await?;
    Ok(())
}

fn order_created(customer: Uuid) -> EventEnvelope {
    let id = Uuid::now_v7();
    EventEnvelope {
        id: id.to_string(),
        r#type: "order.created".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer.to_string(),
        source: platform::streams::owner_of_domain(platform::streams::ORDERS)
            .unwrap_or_default()
            .to_owned(),
        subject_id: id.to_string(),
        traceparent: String::new(),
        tracestate: String::new(),
        schema_version: 1,
        data: Some(Data::OrderCreated(proto::orders::OrderCreated {
            order_id: id.to_string(),
            order_number: "ORD-BENCH".into(),
            status: proto::common::OrderStatus::InvoiceSent as i32,
            total_cents: 12_500,
            ..Default::default()
        })),
    }
}

async fn xadd(
    redis: &mut redis::aio::MultiplexedConnection,
    stream: &str,
    event: &EventEnvelope,
) -> anyhow::Result<()> {
    let owner = platform::streams::owner_of_stream(stream).unwrap_or(event.source.as_str());
    let fields = platform::testing::events::signed_fields(stream, event.encode_to_vec(), owner);
    let _: String = redis::AsyncCommands::xadd(redis, stream, "*", &fields).await?;
    Ok(())
}

/// Publishes `count` events at `rate` per second; returns when each was published, by event id.
async fn publish_at_rate(
    bench: &Bench,
    customer: Uuid,
    rate: u64,
    count: usize,
) -> anyhow::Result<HashMap<String, DateTime<Utc>>> {
    let mut published = HashMap::with_capacity(count);
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut redis = bench.redis.clone();
    for _ in 0..count {
        ticker.tick().await;
        let event = order_created(customer);
        published.insert(event.id.clone(), Utc::now());
        xadd(&mut redis, &bench.stream, &event).await?;
    }
    Ok(published)
}

async fn publish_many(bench: &Bench, customer: Uuid, count: usize) -> anyhow::Result<()> {
    let mut redis = bench.redis.clone();
    for _ in 0..count {
        xadd(&mut redis, &bench.stream, &order_created(customer)).await?;
    }
    Ok(())
}

/// Waits until the webhooks group has read and acknowledged every entry of the stream; returns
/// when that was seen (polled every 2 ms).
async fn fan_out_done(bench: &Bench) -> anyhow::Result<Instant> {
    let mut redis = bench.redis.clone();
    let started = Instant::now();
    loop {
        let groups: redis::streams::StreamInfoGroupsReply =
            redis::AsyncCommands::xinfo_groups(&mut redis, &bench.stream).await?;
        let done = groups
            .groups
            .iter()
            .find(|group| group.name == platform::streams::GROUP_WEBHOOKS)
            .is_some_and(|group| group.pending == 0 && group.lag == Some(0));
        if done {
            return Ok(Instant::now());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(600),
            "the fan-out never finished"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Waits until `count` requests whose path starts with `prefix` arrived; returns how many did.
async fn wait_for(bench: &Bench, prefix: &str, count: usize, limit: Duration) -> anyhow::Result<usize> {
    let started = Instant::now();
    loop {
        let received = bench
            .receiver
            .count_matching(|request| request.path.starts_with(prefix));
        if received >= count {
            return Ok(received);
        }
        anyhow::ensure!(
            started.elapsed() < limit,
            "only {received} of {count} deliveries to {prefix} after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

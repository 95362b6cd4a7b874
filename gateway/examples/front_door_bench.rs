//! Front-door benchmark: what authentication and the shared per-key rate limiter cost.
//!
//! ```sh
//! cargo run --release -p gateway --example front_door_bench [-- --iterations 200000 --seconds 3 --rounds 3]
//! ```
//!
//! Uses the PostgreSQL and Redis of the tests (`TEST_DATABASE_URL`, `TEST_REDIS_URL`; a fresh
//! database). Two parts:
//!
//! 1. **CPU per request**: on one thread (a current-thread runtime, so the Redis lease requests
//!    and their I/O run — and are counted — on it too), each iteration does what the front door
//!    does for a cached key: the per-address limit, `Authenticator::authenticate` (parse, cache,
//!    HMAC verify), the shared per-key limit, the scope check. Thread CPU time
//!    (`CLOCK_THREAD_CPUTIME_ID`) over all iterations, divided by their number; then each step alone.
//!    Minting the principal token (`Caller::new`) is not included: it belongs to the token model.
//! 2. **Throughput**: `GET /api/v1/agent/orders/{reference}` through the real router and HTTP
//!    server with a fake orders-svc over gRPC, the front door on and off
//!    (`app_without_front_door_for_benchmarks`, which this benchmark alone uses), 16 keep-alive
//!    connections, rounds alternating between the two so that machine noise hits both alike.
//!
//! `--mcp` runs a third part instead: **MCP against REST**, the CPU per request of `tools/call
//! svc.order.get` and of its twin `GET /orders/{reference}` through the whole application (front
//! door included) called in this thread without HTTP, on an order as orders-svc renders it
//! (`examples/order_view.json`, 4 KiB, from the mesh benchmark's seeded order); blocks of
//! `--iterations` alternate between the two for `--rounds` rounds. It tells the two front ends'
//! own costs apart from what HTTP, the kernel and the machine add in the mesh benchmark.
//! `--only rest` or `--only mcp` warms up and then calls one of the two alone `--iterations`
//! times, without timing, for counting under `valgrind --tool=cachegrind` (instructions and
//! simulated cache misses, where a machine has no hardware counters): two runs with different
//! `--iterations`, subtracted, give the count per request without the set-up. `--http` sends
//! part 3's requests through the gateway's own HTTP server instead (`gateway::server::serve` on
//! loopback, one keep-alive connection, the requests written as wrk writes them, the answers
//! read by a minimal client on the same thread): with `--only`, the count then includes hyper
//! (reading the request and its body, writing the answer) and the client's few reads.

use gateway::config::RateLimitSettings;
use gateway::limits::Policy;
use gateway::limits::shared::SharedLimiter;
use gateway::{Application, PeerAddrs, Settings};
use identity_svc::domain::api_key;
use identity_svc::domain::customer::{NewApiKey, NewCustomer};
use identity_svc::repo;
use proto::orders::orders_service_server::{OrdersService, OrdersServiceServer};
use proto::orders::{self, CreateOrderRequest, CreateOrderResponse, GetOrderRequest, GetOrderResponse};
use secrecy::ExposeSecret;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

/// The allocator of the gateway binary (see the `mimalloc` feature), so that allocation costs
/// what it costs in the service.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Limits that never refuse here: a key allowed far more than the load (as in the mesh
/// benchmark), whose leases (a quarter of the burst at most) are large, so Redis is asked a
/// few times a second. The CPU part measures the lease round trips amortized.
const UNLIMITED: RateLimitSettings = RateLimitSettings {
    per_second: 1_000_000,
    burst: 100_000,
};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let option = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|index| args.get(index + 1))
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let iterations = option("--iterations", 200_000);
    let seconds = option("--seconds", 3);
    let rounds = option("--rounds", 3);
    if args.iter().any(|arg| arg == "--mcp") {
        // One thread: the gateway, and the fake orders-svc called in memory (same runtime).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let only = match args.iter().position(|arg| arg == "--only") {
            None => None,
            Some(index) => match args.get(index + 1).map(String::as_str) {
                Some("rest") => Some(0),
                Some("mcp") => Some(1),
                other => anyhow::bail!("--only takes rest or mcp, not {other:?}"),
            },
        };
        let report = runtime.block_on(async {
            let (setup, key) = setup().await?;
            let app = gateway::app(setup.application.state());
            let http = args.iter().any(|arg| arg == "--http");
            mcp_against_rest(&app, &key, iterations, rounds, only, http).await
        })?;
        println!("{report}");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (setup, key) = runtime.block_on(setup())?;
    let identity_url = setup.identity_url.clone();
    let prefix = setup.stream_prefix.clone();
    let cpu = std::thread::spawn(move || cpu_per_request(&identity_url, &prefix, &key, iterations))
        .join()
        .map_err(|_| anyhow::anyhow!("the CPU benchmark panicked"))??;
    println!("{cpu}");
    let throughput = runtime.block_on(throughput(setup, seconds, rounds))?;
    println!("{throughput}");
    Ok(())
}

struct Setup {
    /// identity-svc, which verifies the key.
    identity_url: String,
    stream_prefix: String,
    application: Application,
    caller: gateway::caller::Caller,
    plaintext: String,
}

/// A fresh database with one customer and one key, a fake orders-svc, a built gateway.
async fn setup() -> anyhow::Result<(Setup, String)> {
    let database_url = platform::testing::fresh_database().await;
    let stream_prefix = platform::testing::unique_stream_prefix();
    let fake = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let orders = format!("http://{}", fake.local_addr()?);
    let router = platform::grpc::server_builder().add_service(OrdersServiceServer::new(FakeOrders));
    tokio::spawn(platform::grpc::serve(router, fake, CancellationToken::new()));
    let identity = identity_svc::Application::build(identity_svc::Settings::local(
        &database_url,
        &platform::testing::redis_url(),
        &stream_prefix,
    ))
    .await?;
    let identity_url = format!("http://{}", identity.local_addr());
    tokio::spawn(identity.run_until_stopped(CancellationToken::new()));
    let peers = PeerAddrs {
        identity: identity_url.clone(),
        catalog: orders.clone(),
        orders: orders.clone(),
        payments: orders.clone(),
        shipping: orders.clone(),
        webhooks: orders.clone(),
        results: orders,
    };
    let mut settings = Settings::local(&platform::testing::redis_url(), &stream_prefix, peers);
    settings.rate_limit = UNLIMITED;
    settings.front_door.per_address = UNLIMITED;
    let pepper: secrecy::SecretString = identity_svc::config::DEV_API_KEY_PEPPER.to_owned().into();
    let application = Application::build(settings).await?;
    let pool = sqlx::PgPool::connect(&database_url).await?;
    let customer = NewCustomer::parse("Bench Labs", "bench@example.com")?;
    let customer = repo::insert_customer(&pool, uuid::Uuid::now_v7(), &customer, "bench")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the customer exists"))?;
    let generated = api_key::generate(&pepper)?;
    let new_key = NewApiKey {
        customer_id: customer.id,
        name: "bench".into(),
        scopes: vec!["orders:read".into()],
        spend_limit_cents: None,
    };
    let key = repo::insert_api_key(
        &pool,
        uuid::Uuid::now_v7(),
        &new_key,
        &generated.public_id,
        &generated.verifier,
        "bench",
    )
    .await?;
    let state = application.state();
    let caller = gateway::caller::Caller::new(
        std::sync::Arc::new(gateway::authenticator::principal_of(
            &gateway::key_cache::VerifiedKey {
                id: key.id,
                customer_id: key.customer_id,
                public_id: key.public_id.clone(),
                scopes: key.scopes.clone(),
                spend_limit_cents: key.spend_limit_cents,
                sandbox: false,
            },
        )),
        state.tokens.clone(),
    );
    let plaintext = generated.plaintext.expose_secret().to_owned();
    let setup = Setup {
        identity_url,
        stream_prefix,
        application,
        caller,
        plaintext: plaintext.clone(),
    };
    Ok((setup, plaintext))
}

fn thread_cpu() -> Duration {
    cpu_clock(rustix::time::ClockId::ThreadCPUTime)
}

/// CPU time of the whole process (the server and its client, in this process).
fn process_cpu() -> Duration {
    cpu_clock(rustix::time::ClockId::ProcessCPUTime)
}

fn cpu_clock(clock: rustix::time::ClockId) -> Duration {
    let time = rustix::time::clock_gettime(clock);
    Duration::new(
        u64::try_from(time.tv_sec).unwrap_or(0),
        u32::try_from(time.tv_nsec).unwrap_or(0),
    )
}

/// Part 1, on a thread and runtime of its own.
fn cpu_per_request(identity_url: &str, prefix: &str, key: &str, iterations: u64) -> anyhow::Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let authenticator = gateway::authenticator::Authenticator::new(
            gateway::authenticator::KeyStore {
                client: proto::identity::identity_service_client::IdentityServiceClient::new(
                    platform::grpc::lazy_channel(identity_url, None)?,
                ),
                tokens: platform::tokens::TokenIssuer::new(
                    platform::mesh::GATEWAY,
                    platform::tokens::SigningKey::development(platform::mesh::GATEWAY),
                ),
            },
            gateway::authenticator::AuthenticatorSettings {
                ttl: gateway::config::MAX_KEY_CACHE_TTL,
                known_capacity: 1_000,
                unknown_capacity: 1_000,
                lookups: Policy::new("key-lookups", UNLIMITED),
                max_concurrent_lookups: 2,
            },
        );
        let per_address = gateway::limits::local::LocalLimiter::new(Policy::new("per-address", UNLIMITED), 1_000);
        let redis = redis::Client::open(platform::testing::redis_url())?;
        let manager = redis::aio::ConnectionManager::new(redis).await?;
        let per_key = SharedLimiter::new(Policy::new("per-key", UNLIMITED), manager, prefix);
        let header = format!("Bearer {key}");
        let client = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7));
        let (per_address, authenticator, per_key, header) = (&per_address, &authenticator, &per_key, header.as_str());
        let pass = move || async move {
            assert!(per_address.check(client).is_allowed());
            let record = authenticator.authenticate(Some(header), client).await.expect("the key authenticates");
            assert!(per_key.check(record.key.id).await.is_allowed());
            gateway::scopes::check(&["orders:read"], &record.principal.scopes).expect("the scope is held");
            record
        };
        let key_id = pass().await.key.id;
        for _ in 0..10_000 {
            pass().await;
        }
        let calls = per_key.redis_calls();
        let (cpu, wall) = measure(iterations, move || async move {
            pass().await;
        })
        .await;
        let leases = per_key.redis_calls() - calls;
        let address = measure(iterations, move || async move {
            per_address.check(client);
        })
        .await;
        let auth = measure(iterations, move || async move {
            authenticator.authenticate(Some(header), client).await.ok();
        })
        .await;
        let shared = measure(iterations, move || async move {
            per_key.check(key_id).await;
        })
        .await;
        let per = |total: Duration| total.as_secs_f64() * 1e6 / iterations as f64;
        Ok(format!(
            "| Front door, CPU per request (per-address limit + authenticate + shared per-key limit + scopes; {iterations} iterations, one thread) | {:.2} CPU-µs ({:.2} µs wall; {leases} Redis lease requests) |\n\
             | … per-address limit alone | {:.2} CPU-µs |\n\
             | … authenticate (cached key, HMAC verify) alone | {:.2} CPU-µs |\n\
             | … shared per-key limit alone | {:.2} CPU-µs |",
            per(cpu),
            per(wall),
            per(address.0),
            per(auth.0),
            per(shared.0),
        ))
    })
}

async fn measure<F, Fut>(iterations: u64, mut step: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let (cpu, wall) = (thread_cpu(), Instant::now());
    for _ in 0..iterations {
        step().await;
    }
    (thread_cpu() - cpu, wall.elapsed())
}

/// Part 2: the same route with the front door on and off, rounds alternating.
async fn throughput(setup: Setup, seconds: u64, rounds: u64) -> anyhow::Result<String> {
    let state = setup.application.state();
    let guarded = serve(gateway::app(state.clone())).await?;
    let open = serve(gateway::app::app_without_front_door_for_benchmarks(
        state,
        setup.caller,
    ))
    .await?;
    let client = reqwest::Client::builder().pool_max_idle_per_host(16).build()?;
    let round = Duration::from_secs(seconds);
    let mut totals = [0_u64; 2];
    let mut cpu = [Duration::ZERO; 2];
    // A short warm-up of both, then rounds alternating on, off, on, off, …
    load(&client, guarded, &setup.plaintext, Duration::from_millis(500)).await?;
    load(&client, open, &setup.plaintext, Duration::from_millis(500)).await?;
    for _ in 0..rounds {
        for (index, addr) in [guarded, open].into_iter().enumerate() {
            let before = process_cpu();
            totals[index] += load(&client, addr, &setup.plaintext, round).await?;
            cpu[index] += process_cpu() - before;
        }
    }
    drop(setup.application);
    let rate = |count: u64| count as f64 / (rounds as f64 * round.as_secs_f64());
    let (on, off) = (rate(totals[0]), rate(totals[1]));
    // CPU per request of the whole exchange (client, server, fake peer): the steadier measure
    // on a shared machine, since throughput also moves with whatever else runs.
    let per = |index: usize| cpu[index].as_secs_f64() * 1e6 / totals[index].max(1) as f64;
    let (cpu_on, cpu_off) = (per(0), per(1));
    Ok(format!(
        "| GET /orders/{{reference}} through the router, 16 connections, front door on ({rounds} × {seconds} s) | {on:.0} requests/s, {cpu_on:.1} CPU-µs per request |\n\
         | … the same with the front door off | {off:.0} requests/s, {cpu_off:.1} CPU-µs per request |\n\
         | … throughput cost of the front door | {:.1} % (by CPU per request: {:.1} %) |",
        (1.0 - on / off) * 100.0,
        (1.0 - cpu_off / cpu_on) * 100.0
    ))
}

async fn serve(router: axum::Router) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    Ok(addr)
}

/// 16 sequential request loops against `addr` for `duration`; returns the requests answered 200.
async fn load(
    client: &reqwest::Client,
    addr: SocketAddr,
    key: &str,
    duration: Duration,
) -> anyhow::Result<u64> {
    let url = format!("http://{addr}/api/v1/agent/orders/ORD-000001");
    let deadline = Instant::now() + duration;
    let workers = (0..16).map(|_| {
        let (client, url, key) = (client.clone(), url.clone(), key.to_owned());
        tokio::spawn(async move {
            let mut done = 0_u64;
            while Instant::now() < deadline {
                let response = client.get(&url).bearer_auth(&key).send().await?;
                anyhow::ensure!(response.status() == 200, "answered {}", response.status());
                response.bytes().await?;
                done += 1;
            }
            Ok(done)
        })
    });
    let mut total = 0;
    for worker in futures::future::join_all(workers).await {
        total += worker??;
    }
    Ok(total)
}

/// The order of part 3, as orders-svc's read model renders it.
const ORDER_VIEW: &[u8] = include_bytes!("order_view.json");
/// The reference that reads [`ORDER_VIEW`].
const VIEW_REFERENCE: &str = "ORD-VIEW";

/// Part 3, on the one thread of a current-thread runtime, where the fake orders-svc is called in
/// memory: the thread's CPU time is the gateway's (the fake's part is the same for both). With
/// `http`, through the gateway's HTTP server and a loopback connection.
async fn mcp_against_rest(
    app: &axum::Router,
    key: &str,
    iterations: u64,
    rounds: u64,
    only: Option<usize>,
    http: bool,
) -> anyhow::Result<String> {
    use axum::body::Body;
    use tower::ServiceExt;
    let bearer = format!("Bearer {key}");
    let message = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "svc.order.get", "arguments": { "reference": VIEW_REFERENCE } },
    })
    .to_string();
    // REST (0) or MCP (1).
    let request = |index: usize| {
        let builder = if index == 0 {
            http::Request::get(format!("/api/v1/agent/orders/{VIEW_REFERENCE}"))
        } else {
            http::Request::post("/api/mcp")
                .header(http::header::CONTENT_TYPE, "application/json")
                .header("mcp-protocol-version", "2025-11-25")
        };
        let body = if index == 0 {
            Body::empty()
        } else {
            Body::from(message.clone())
        };
        builder
            .header(http::header::AUTHORIZATION, &bearer)
            .body(body)
            .expect("a valid request")
    };
    let connection = if http {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(gateway::server::serve(
            listener,
            app.clone(),
            std::future::pending(),
        ));
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let host = format!("Host: {addr}\r\nAuthorization: {bearer}\r\n");
        let written = [
            format!("GET /api/v1/agent/orders/{VIEW_REFERENCE} HTTP/1.1\r\n{host}\r\n"),
            format!(
                "POST /api/mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\n\
                 MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{message}",
                message.len()
            ),
        ];
        Some((tokio::sync::Mutex::new(RawConnection::new(stream)), written))
    } else {
        None
    };
    let call = |index: usize| {
        let (connection, request) = (&connection, &request);
        async move {
            if let Some((connection, written)) = connection {
                return connection.lock().await.exchange(written[index].as_bytes()).await;
            }
            let response = app.clone().oneshot(request(index)).await.expect("infallible");
            assert_eq!(response.status(), 200);
            axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("the answer")
        }
    };
    // One call of each: both answer 200, and the sizes of their answers.
    let rest_bytes = call(0).await;
    let mcp_bytes = call(1).await;
    let answer: serde_json::Value = serde_json::from_slice(&mcp_bytes)?;
    anyhow::ensure!(
        answer["result"]["isError"] == false,
        "tools/call svc.order.get failed: {answer}"
    );
    let measured = |index: usize| only.is_none_or(|only| only == index);
    for _ in 0..2_000 {
        for index in [0, 1].into_iter().filter(|index| measured(*index)) {
            call(index).await;
        }
    }
    let through = if http {
        "over HTTP (the gateway's server, a loopback connection, the client in this thread)"
    } else {
        "no HTTP"
    };
    if let Some(only) = only {
        // No clock read here: rustix's vDSO lookup crashes under valgrind, and valgrind counts.
        for _ in 0..iterations {
            call(only).await;
        }
        let label = ["GET /orders/{reference}", "tools/call svc.order.get"][only];
        return Ok(format!(
            "`{label}` alone through the application, {through}: {iterations} calls"
        ));
    }
    let mut per_request = [Vec::new(), Vec::new()];
    for round in 0..rounds as usize {
        // REST first in even rounds, MCP first in odd ones.
        for index in [round % 2, 1 - round % 2] {
            let (cpu, _) = measure(iterations, || async move {
                call(index).await;
            })
            .await;
            per_request[index].push(cpu.as_secs_f64() * 1e6 / iterations as f64);
        }
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let [mut rest_cpu, mut mcp_cpu] = per_request;
    let (rest_median, mcp_median) = (median(&mut rest_cpu), median(&mut mcp_cpu));
    Ok(format!(
        "| `GET /orders/{{reference}}` through the application, {through} ({rounds} rounds × {iterations}, median) | {rest_median:.2} CPU-µs per request, {} bytes answered |\n\
         | `tools/call svc.order.get`, the same | {mcp_median:.2} CPU-µs per request, {} bytes answered |\n\
         | … MCP over REST | {:.3}× (+{:.2} CPU-µs) |",
        rest_bytes.len(),
        mcp_bytes.len(),
        mcp_median / rest_median,
        mcp_median - rest_median
    ))
}

/// A keep-alive HTTP/1.1 connection that writes a request and reads its answer: the status line,
/// the headers up to `content-length`, and that many bytes of body (all the gateway's answers
/// here have one). The body is handed out of the read buffer without a copy, so that the
/// client's own work stays out of the counts.
struct RawConnection {
    stream: tokio::net::TcpStream,
    buffer: tokio_util::bytes::BytesMut,
}

impl RawConnection {
    fn new(stream: tokio::net::TcpStream) -> Self {
        Self {
            stream,
            buffer: tokio_util::bytes::BytesMut::with_capacity(64 * 1024),
        }
    }

    /// Writes `request` and returns the body of its answer, which must be a 200.
    async fn exchange(&mut self, request: &[u8]) -> axum::body::Bytes {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.stream
            .write_all(request)
            .await
            .expect("the request is written");
        self.buffer.clear();
        let (head, length) = loop {
            let read = self.stream.read_buf(&mut self.buffer).await.expect("the answer");
            assert!(read > 0, "the gateway closed the connection");
            if let Some(end) = self.buffer.windows(4).position(|window| window == b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buffer[..end]).expect("an ASCII head");
                assert!(head.starts_with("HTTP/1.1 200 "), "answered {head}");
                let length = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .expect("a content-length");
                break (end + 4, length);
            }
        };
        while self.buffer.len() < head + length {
            let read = self.stream.read_buf(&mut self.buffer).await.expect("the body");
            assert!(read > 0, "the gateway closed the connection");
        }
        // The buffer gives up its front; its allocation is reused once the answer is dropped.
        self.buffer.split_to(head + length).freeze().slice(head..)
    }
}

/// orders-svc stand-in: `GetOrder` and `GetOrderView` answer a fixed order
/// ([`ORDER_VIEW`] for [`VIEW_REFERENCE`]).
struct FakeOrders;

#[tonic::async_trait]
impl OrdersService for FakeOrders {
    async fn create_order(
        &self,
        _: Request<CreateOrderRequest>,
    ) -> Result<Response<CreateOrderResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn get_order(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<GetOrderResponse>, Status> {
        let time = Some(prost_types::Timestamp {
            seconds: 1_784_000_000,
            nanos: 0,
        });
        let order = orders::Order {
            id: "0190f0c6-0000-7000-8000-000000000001".into(),
            order_number: request.into_inner().reference,
            status: proto::common::OrderStatus::InvoiceSent as i32,
            currency: "USD".into(),
            created_at: time,
            updated_at: time,
            ..Default::default()
        };
        Ok(Response::new(GetOrderResponse { order: Some(order) }))
    }

    async fn get_data_release(
        &self,
        _: Request<GetOrderRequest>,
    ) -> Result<Response<proto::orders::DataRelease>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn get_order_view(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<orders::GetOrderViewResponse>, Status> {
        if request.get_ref().reference == VIEW_REFERENCE {
            return Ok(Response::new(orders::GetOrderViewResponse {
                json: ORDER_VIEW.to_vec(),
                shipping_unknown: false,
                shipping_offset: 0,
                order_id: "01a2187e-a2e2-73cd-872b-241efe3ac925".into(),
            }));
        }
        let order = self
            .get_order(request)
            .await?
            .into_inner()
            .order
            .unwrap_or_default();
        let order_id = order.id.clone();
        let rendered =
            gateway::dto::orders::Order::try_from(order).map_err(|error| Status::internal(error.message))?;
        Ok(Response::new(orders::GetOrderViewResponse {
            json: serde_json::to_vec(&rendered).map_err(|error| Status::internal(error.to_string()))?,
            shipping_unknown: false,
            shipping_offset: 0,
            order_id,
        }))
    }

    async fn list_orders(
        &self,
        _: Request<orders::ListOrdersRequest>,
    ) -> Result<Response<orders::ListOrdersResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn receive_samples(
        &self,
        _: Request<orders::ReceiveSamplesRequest>,
    ) -> Result<Response<orders::ReceiveSamplesResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn start_testing(
        &self,
        _: Request<orders::StartTestingRequest>,
    ) -> Result<Response<orders::StartTestingResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn get_lab_order(
        &self,
        _: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::GetOrderResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn list_samples(
        &self,
        _: Request<orders::ListSamplesRequest>,
    ) -> Result<Response<orders::ListSamplesResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn get_eta(
        &self,
        _: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::GetEtaResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn get_custody(
        &self,
        _: Request<orders::GetCustodyRequest>,
    ) -> Result<Response<orders::GetCustodyResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn dispose_sample(
        &self,
        _: Request<orders::DisposeSampleRequest>,
    ) -> Result<Response<orders::DisposeSampleResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn find_sandbox_order(
        &self,
        _: Request<orders::FindSandboxOrderRequest>,
    ) -> Result<Response<orders::FindSandboxOrderResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn simulate_lab_step(
        &self,
        _: Request<orders::SimulateLabStepRequest>,
    ) -> Result<Response<orders::SimulateLabStepResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn request_cancellation(
        &self,
        _: Request<orders::RequestCancellationRequest>,
    ) -> Result<Response<orders::RequestCancellationResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn request_addon(
        &self,
        _: Request<orders::RequestAddonRequest>,
    ) -> Result<Response<orders::RequestAddonResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn list_cancel_requests(
        &self,
        _: Request<orders::ListCancelRequestsRequest>,
    ) -> Result<Response<orders::ListCancelRequestsResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }

    async fn decide_cancel_request(
        &self,
        _: Request<orders::DecideCancelRequestRequest>,
    ) -> Result<Response<orders::DecideCancelRequestResponse>, Status> {
        Err(Status::unimplemented("not in this benchmark"))
    }
}

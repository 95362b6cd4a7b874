//! Test harness: an orders-svc Application on a fresh database and a unique stream prefix, with
//! in-test doubles of catalog-svc and payments-svc, a gRPC client and typed request helpers.

pub use crate::data::*;
use crate::fakes::Peers;
use orders_svc::config::{ConsumerTiming, IdempotencyTiming};
use orders_svc::{Application, Settings};
use platform::config::CommonSettings;
use platform::principal::{Principal, PrincipalKind};
use platform::tokens::testing::DevTokens;
use proto::catalog::Quote;
use proto::events::EventEnvelope;
use proto::orders::orders_service_client::OrdersServiceClient;
use proto::orders::*;
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Response, Status};
use uuid::Uuid;

/// Both scopes of the orders API.
pub const ORDER_SCOPES: [&str; 2] = ["orders:read", "orders:write"];

/// Timing knobs of one Application.
#[derive(Clone, Debug)]
pub struct Tuning {
    pub consumer: ConsumerTiming,
    pub idempotency: IdempotencyTiming,
    /// How long placing a card or bank order waits for its label.
    pub label_wait: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            consumer: ConsumerTiming {
                reclaim_idle: Duration::from_millis(500),
                block: Duration::from_millis(200),
                acknowledge: true,
            },
            idempotency: IdempotencyTiming {
                lease: Duration::from_secs(30),
                wait: Duration::from_secs(20),
            },
            label_wait: Duration::from_secs(5),
        }
    }
}

/// A running orders-svc with its doubles.
pub struct TestApp {
    pub pool: PgPool,
    pub database_url: String,
    pub stream_prefix: String,
    pub peers: Arc<Peers>,
    pub keys: Arc<DevTokens>,
    /// The default customer of the test.
    pub customer_id: Uuid,
    pub client: OrdersServiceClient<Channel>,
    /// The gRPC address (clients of the other services it serves connect here).
    pub addr: std::net::SocketAddr,
    shutdown: CancellationToken,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts orders-svc on a fresh database with default test timing.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(Tuning::default()).await
}

/// Starts orders-svc on a fresh database with `tuning`.
pub async fn spawn_app_with(tuning: Tuning) -> TestApp {
    let keys = Arc::new(DevTokens::new("orders-svc"));
    let peers = Arc::new(Peers::start().await);
    let database_url = platform::testing::fresh_database().await;
    let stream_prefix = platform::testing::unique_stream_prefix();
    start(database_url, stream_prefix, peers, keys, tuning).await
}

/// Starts orders-svc on the database at `database_url` (already prepared by the test).
pub async fn spawn_app_on(database_url: String) -> TestApp {
    let keys = Arc::new(DevTokens::new("orders-svc"));
    let peers = Arc::new(Peers::start().await);
    let stream_prefix = platform::testing::unique_stream_prefix();
    start(database_url, stream_prefix, peers, keys, Tuning::default()).await
}

async fn start(
    database_url: String,
    stream_prefix: String,
    peers: Arc<Peers>,
    keys: Arc<DevTokens>,
    tuning: Tuning,
) -> TestApp {
    let mut common = CommonSettings::local(&database_url, &platform::testing::redis_url(), &stream_prefix);
    common.database_max_connections = 20;
    let mut settings = Settings::local(
        common,
        &format!("http://{}", peers.catalog_addr),
        &format!("http://{}", peers.payments_addr),
    );
    settings.shipping_addr = format!("http://{}", peers.shipping_addr);
    settings.label_wait = tuning.label_wait;
    settings.consumer = tuning.consumer;
    settings.idempotency = tuning.idempotency;
    let application = Application::build(settings).await.expect("build orders-svc");
    let addr = application.local_addr();
    let pool = application.pool().clone();
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let client = OrdersServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect to orders-svc");
    TestApp {
        pool,
        database_url,
        stream_prefix,
        peers,
        keys,
        customer_id: Uuid::now_v7(),
        client,
        addr,
        shutdown,
        handle: Some(handle),
    }
}

impl TestApp {
    /// Starts a second orders-svc on the same database, streams and doubles.
    pub async fn sibling(&self, tuning: Tuning) -> TestApp {
        let mut sibling = start(
            self.database_url.clone(),
            self.stream_prefix.clone(),
            self.peers.clone(),
            self.keys.clone(),
            tuning,
        )
        .await;
        sibling.customer_id = self.customer_id;
        sibling
    }

    /// Stops the service and waits for it to drain.
    pub async fn stop(&mut self) {
        self.shutdown.cancel();
        if let Some(handle) = self.handle.take() {
            handle
                .await
                .expect("join orders-svc")
                .expect("orders-svc stopped cleanly");
        }
    }

    /// A customer token with `scopes` and an optional spend envelope.
    pub fn token(&self, customer_id: Uuid, scopes: &[&str], spend_limit_cents: Option<i64>) -> String {
        self.keys.mint(&Principal {
            kind: PrincipalKind::Customer,
            subject: format!("key-{customer_id}"),
            customer_id: Some(customer_id),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            roles: vec![],
            spend_limit_cents,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        })
    }

    /// A full-scope token of the default customer.
    pub fn default_token(&self) -> String {
        self.token(self.customer_id, &ORDER_SCOPES, None)
    }

    /// Stores a valid quote of the default customer in the catalog double.
    pub fn quote(&self) -> Quote {
        self.quote_for(self.customer_id, chrono::Duration::minutes(15))
    }

    /// Stores a quote of `customer_id` expiring after `lifetime` (negative: already expired).
    pub fn quote_for(&self, customer_id: Uuid, lifetime: chrono::Duration) -> Quote {
        self.peers.add_quote(sample_quote(customer_id, lifetime))
    }

    /// Calls CreateOrder as the default customer.
    pub async fn create_order(
        &self,
        key: &str,
        request: CreateOrderRequest,
    ) -> Result<Response<CreateOrderResponse>, Status> {
        self.create_order_as(&self.default_token(), Some(key), request)
            .await
    }

    /// Calls CreateOrder with a token and an optional idempotency key.
    pub async fn create_order_as(
        &self,
        token: &str,
        key: Option<&str>,
        request: CreateOrderRequest,
    ) -> Result<Response<CreateOrderResponse>, Status> {
        let request = match key {
            Some(key) => platform::grpc::outgoing_idempotent(request, token, key),
            None => platform::grpc::outgoing(request, token),
        };
        self.client.clone().create_order(request).await
    }

    /// Places an order from a fresh quote and returns it.
    pub async fn place_order(&self) -> Order {
        let quote = self.quote();
        let response = self
            .create_order(&new_key(), order_request(&quote.id))
            .await
            .expect("place an order");
        response.into_inner().order.expect("an order")
    }

    /// Calls GetOrder with a token.
    pub async fn get_order_as(&self, token: &str, reference: &str) -> Result<Order, Status> {
        let request = GetOrderRequest {
            reference: reference.to_owned(),
        };
        let response = self
            .client
            .clone()
            .get_order(platform::grpc::outgoing(request, token))
            .await?;
        Ok(response.into_inner().order.expect("an order"))
    }

    /// Calls GetOrder as the default customer.
    pub async fn get_order(&self, reference: &str) -> Result<Order, Status> {
        self.get_order_as(&self.default_token(), reference).await
    }

    /// Calls GetOrderView with a token; the answer's JSON parsed.
    pub async fn get_order_view_as(&self, token: &str, reference: &str) -> Result<serde_json::Value, Status> {
        let request = GetOrderRequest {
            reference: reference.to_owned(),
        };
        let response = self
            .client
            .clone()
            .get_order_view(platform::grpc::outgoing(request, token))
            .await?
            .into_inner();
        Ok(serde_json::from_slice(&response.json).expect("the view is JSON"))
    }

    /// Calls GetOrderView as the default customer.
    pub async fn get_order_view(&self, reference: &str) -> Result<serde_json::Value, Status> {
        self.get_order_view_as(&self.default_token(), reference).await
    }

    /// Calls ListOrders with a token.
    pub async fn list_orders_as(
        &self,
        token: &str,
        request: ListOrdersRequest,
    ) -> Result<ListOrdersResponse, Status> {
        Ok(self
            .client
            .clone()
            .list_orders(platform::grpc::outgoing(request, token))
            .await?
            .into_inner())
    }

    /// Every event in the outbox, oldest first.
    pub async fn outbox_events(&self) -> Vec<EventEnvelope> {
        platform::testing::events::outbox_events(&self.pool, orders_svc::SCHEMA).await
    }

    /// Outbox events of one type.
    pub async fn outbox_events_of(&self, event_type: &str) -> Vec<EventEnvelope> {
        platform::testing::events::outbox_events_of(&self.pool, orders_svc::SCHEMA, event_type).await
    }

    /// Number of orders in the schema (all customers).
    pub async fn order_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM orders.orders")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Name of a stream of this test.
    pub fn stream(&self, domain: &str) -> String {
        platform::streams::stream_name(&self.stream_prefix, domain)
    }

    /// Appends an event to the payments stream, as payments-svc's relay would; returns the entry id.
    pub async fn publish_payment_event(&self, envelope: &EventEnvelope) -> String {
        self.publish_event(platform::streams::PAYMENTS, envelope).await
    }

    /// Appends an event to a domain stream, as its owner's relay would; returns the entry id.
    pub async fn publish_event(&self, domain: &str, envelope: &EventEnvelope) -> String {
        let mut redis = redis_connection().await;
        platform::testing::events::xadd(&mut redis, &self.stream(domain), envelope).await
    }
}

/// A connection to the test Redis.
pub async fn redis_connection() -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(platform::testing::redis_url()).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

//! orders-svc: laboratory orders placed from quotes, their sample lines, status history and
//! payment block.
//!
//! It serves `lab.orders.v1.OrdersService` (CreateOrder, GetOrder, ListOrders) to the gateway,
//! reads quotes from catalog-svc and issues invoices through payments-svc, relays its outbox
//! (`order.created`, `order.status_changed`) to the orders stream, and consumes the payments
//! stream (group `orders-svc`) to move paid orders along.

#![forbid(unsafe_code)]

pub mod config;
pub mod convert;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod repo;
pub mod service;

pub use config::Settings;

use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::{Outbox, OutboxRelay};
use platform::principal::TokenKeys;
use proto::orders::orders_service_server::OrdersServiceServer;
use sqlx::PgPool;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "orders";
/// Service name in events, logs, traces and the service tokens it mints.
pub const SERVICE_NAME: &str = "orders-svc";
/// Outbox of this service.
pub const OUTBOX: Outbox = Outbox::new(SCHEMA, SERVICE_NAME);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    pool: PgPool,
    listener: TcpListener,
}

impl Application {
    /// Connects and migrates the database and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = platform::db::connect(
            &settings.common.database_url,
            settings.common.database_max_connections,
        )
        .await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let listener = TcpListener::bind(settings.common.grpc_addr).await?;
        Ok(Self {
            settings,
            pool,
            listener,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The database pool (tests inspect the schema through it).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Serves until `shutdown` fires, then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let common = &self.settings.common;
        let keys = Arc::new(TokenKeys::new(
            &common.internal_token_secret,
            &common.staff_token_secret,
        ));
        let orders = Arc::new(service::Orders::new(
            self.pool.clone(),
            &self.settings,
            keys.clone(),
        )?);

        let redis = redis::Client::open(common.redis_url.as_str())?;
        let (reporter, health) = tonic_health::server::health_reporter();
        let served_name = proto::orders::orders_service_server::SERVICE_NAME;
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![served_name],
            self.pool.clone(),
            redis,
            shutdown.clone(),
        );
        let relay = OutboxRelay::new(
            self.pool.clone(),
            OUTBOX,
            &common.redis_url,
            &common.stream_prefix,
            platform::streams::ORDERS,
        );
        let relay = tokio::spawn(relay.run(shutdown.clone()));
        let consumer = StreamConsumer::new(
            &common.redis_url,
            self.consumer_settings(),
            Arc::new(events::PaymentEventsHandler::new(orders.clone())),
        );
        let consumer = tokio::spawn(consumer.run(shutdown.clone()));

        let adapter = grpc::OrdersGrpc::new(orders);
        let router = platform::grpc::server_builder().add_service(health).add_service(
            OrdersServiceServer::with_interceptor(adapter, platform::grpc::auth_interceptor(keys)),
        );
        tracing::info!(addr = %self.local_addr(), "{SERVICE_NAME} serving");
        let served = platform::grpc::serve(router, self.listener, shutdown.clone()).await;
        shutdown.cancel();
        platform::shutdown::drain(SERVICE_NAME, async {
            let _ = tokio::join!(relay, probe, consumer);
        })
        .await;
        served
    }

    /// The payments-stream consumer of group `orders-svc`, with this process's timing.
    fn consumer_settings(&self) -> ConsumerSettings {
        let stream =
            platform::streams::stream_name(&self.settings.common.stream_prefix, platform::streams::PAYMENTS);
        let timing = &self.settings.consumer;
        ConsumerSettings {
            reclaim_idle: timing.reclaim_idle,
            block: timing.block,
            acknowledge: timing.acknowledge,
            ..ConsumerSettings::new(platform::streams::GROUP_ORDERS, vec![stream])
        }
    }
}

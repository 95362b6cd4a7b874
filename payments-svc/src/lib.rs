//! payments-svc: itemized invoices of orders, bank payments recorded by staff, and the
//! `order.created` backstop that guarantees every order an invoice.
//!
//! Owns the schema `payments`; emits `invoice.created`, `invoice.updated` and
//! `payment.confirmed` through its outbox to the stream `<prefix>:events:payments`; reads the
//! orders stream in the consumer group `payments-svc`.

#![forbid(unsafe_code)]

pub mod config;
pub mod convert;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod page;
pub mod repo;
pub mod service;

pub use config::Settings;

use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::{Outbox, OutboxRelay};
use platform::principal::TokenKeys;
use proto::payments::payments_service_server::{PaymentsServiceServer, SERVICE_NAME as GRPC_SERVICE_NAME};
use sqlx::PgPool;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "payments";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "payments-svc";
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
        let common = &settings.common;
        let pool = platform::db::connect(&common.database_url, common.database_max_connections).await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let listener = TcpListener::bind(common.grpc_addr).await?;
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

    /// Serves the API, relays the outbox and consumes the orders stream until `shutdown` fires,
    /// then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let common = &self.settings.common;
        let service = service::PaymentsService::new(
            self.pool.clone(),
            self.settings.bank.clone(),
            self.settings.invoice_due_days,
        );
        let redis = redis::Client::open(common.redis_url.as_str())?;
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![GRPC_SERVICE_NAME],
            self.pool.clone(),
            redis,
            shutdown.clone(),
        );
        let relay = OutboxRelay::new(
            self.pool.clone(),
            OUTBOX,
            &common.redis_url,
            &common.stream_prefix,
            platform::streams::PAYMENTS,
        );
        let relay = tokio::spawn(relay.run(shutdown.clone()));
        let orders_stream = platform::streams::stream_name(&common.stream_prefix, platform::streams::ORDERS);
        let mut consumer_settings =
            ConsumerSettings::new(platform::streams::GROUP_PAYMENTS, vec![orders_stream]);
        consumer_settings.reclaim_idle = self.settings.consumer.reclaim_idle;
        consumer_settings.block = self.settings.consumer.block;
        let handler = Arc::new(events::OrderEventsHandler::new(service.clone()));
        let consumer = StreamConsumer::new(&common.redis_url, consumer_settings, handler);
        let consumer = tokio::spawn(consumer.run(shutdown.clone()));
        let keys = Arc::new(TokenKeys::new(
            &common.internal_token_secret,
            &common.staff_token_secret,
        ));
        let api = PaymentsServiceServer::with_interceptor(
            grpc::PaymentsGrpc::new(service),
            platform::grpc::auth_interceptor(keys),
        );
        let router = platform::grpc::server_builder()
            .add_service(health)
            .add_service(api);
        tracing::info!(addr = %self.local_addr(), "{SERVICE_NAME} serving");
        let served = platform::grpc::serve(router, self.listener, shutdown.clone()).await;
        shutdown.cancel();
        platform::shutdown::drain(SERVICE_NAME, async {
            let _ = tokio::join!(relay, consumer, probe);
        })
        .await;
        served
    }
}

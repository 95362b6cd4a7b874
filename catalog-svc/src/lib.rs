//! catalog-svc: the authoritative catalog (immutable revisions of tests, bundles, categories,
//! matrices and turnarounds) and immutable, server-priced, expiring quotes.
//!
//! It serves `lab.catalog.v1.CatalogService` over gRPC, owns the `catalog` schema, and reads the
//! orders stream (group `catalog-svc`) to record which order consumed a quote.

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
use proto::catalog::catalog_service_server::{CatalogServiceServer, SERVICE_NAME as GRPC_SERVICE};
use sqlx::PgPool;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "catalog";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "catalog-svc";
/// Outbox of this service (catalog-svc emits no lifecycle events today; the relay runs anyway).
pub const OUTBOX: Outbox = Outbox::new(SCHEMA, SERVICE_NAME);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    pool: PgPool,
    listener: TcpListener,
    service: Arc<service::Service>,
}

impl Application {
    /// Connects and migrates the database, imports the seed document when no catalog exists
    /// yet, and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = &settings.common;
        let pool = platform::db::connect(&common.database_url, common.database_max_connections).await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let service = Arc::new(service::Service::new(pool.clone(), settings.quote_ttl));
        if let Some(path) = &settings.seed_file
            && !service.has_catalog().await?
        {
            let document = std::fs::read_to_string(path).map_err(|error| {
                anyhow::anyhow!("cannot read CATALOG_SEED_FILE {}: {error}", path.display())
            })?;
            let outcome = service
                .import_document(&document, &format!("seed from {}", path.display()))
                .await
                .map_err(|error| {
                    anyhow::anyhow!("seed catalog {} refused: {}", path.display(), error.message)
                })?;
            tracing::info!(revision = %outcome.revision, "seed catalog imported");
        }
        let listener = TcpListener::bind(common.grpc_addr).await?;
        Ok(Self {
            settings,
            pool,
            listener,
            service,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until `shutdown` fires, then drains the server, the relay and the consumer.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let common = &self.settings.common;
        let redis = redis::Client::open(common.redis_url.as_str())?;
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![GRPC_SERVICE],
            self.pool.clone(),
            redis,
            shutdown.clone(),
        );
        let relay = OutboxRelay::new(
            self.pool.clone(),
            OUTBOX,
            &common.redis_url,
            &common.stream_prefix,
            platform::streams::CATALOG,
        );
        let relay = tokio::spawn(relay.run(shutdown.clone()));
        let orders_stream = platform::streams::stream_name(&common.stream_prefix, platform::streams::ORDERS);
        let mut consumer_settings =
            ConsumerSettings::new(platform::streams::GROUP_CATALOG, vec![orders_stream]);
        consumer_settings.reclaim_idle = self.settings.consumer_reclaim_idle;
        consumer_settings.block = self.settings.consumer_block;
        let handler = Arc::new(events::OrderEvents::new(self.pool.clone()));
        let consumer = StreamConsumer::new(&common.redis_url, consumer_settings, handler);
        let consumer = tokio::spawn(consumer.run(shutdown.clone()));

        let keys = Arc::new(TokenKeys::new(
            &common.internal_token_secret,
            &common.staff_token_secret,
        ));
        let adapter = grpc::CatalogGrpc::new(self.service.clone());
        let catalog = CatalogServiceServer::with_interceptor(adapter, platform::grpc::auth_interceptor(keys));
        let router = platform::grpc::server_builder()
            .add_service(health)
            .add_service(catalog);
        tracing::info!(addr = %self.local_addr(), "{SERVICE_NAME} serving");
        let served = platform::grpc::serve(router, self.listener, shutdown.clone()).await;
        shutdown.cancel();
        platform::shutdown::drain(SERVICE_NAME, async {
            let _ = tokio::join!(relay, probe, consumer);
        })
        .await;
        served
    }
}

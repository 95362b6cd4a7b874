//! catalog-svc: the authoritative catalog (immutable revisions of tests, bundles, categories,
//! matrices and turnarounds) and immutable, server-priced, expiring quotes.
//!
//! It serves `lab.catalog.v1.CatalogService` over gRPC, owns the `catalog` schema, and reads the
//! orders stream (group `catalog-svc`) to record which order consumed a quote.

#![forbid(unsafe_code)]

pub mod config;
pub mod consumer;
pub mod convert;
pub mod domain;
pub mod grpc;
pub mod repo;
pub mod service;

pub use config::Settings;

use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use proto::catalog::catalog_service_server::{CatalogServiceServer, SERVICE_NAME as GRPC_SERVICE};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "catalog";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "catalog-svc";
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::CATALOG,
};
/// Outbox of this service (catalog-svc emits no lifecycle events today; the relay runs anyway).
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    base: ServiceBase,
    service: Arc<service::CatalogService>,
}

impl Application {
    /// Connects and migrates the database, imports the seed document when no catalog exists
    /// yet, and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        let service = Arc::new(service::CatalogService::new(
            base.pool.clone(),
            settings.quote_ttl,
        ));
        if let Some(path) = &settings.seed_file
            && !service.has_catalog().await?
        {
            let document = tokio::fs::read_to_string(path).await.map_err(|error| {
                anyhow::anyhow!("cannot read CATALOG_SEED_FILE {}: {error}", path.display())
            })?;
            let outcome = service
                .import_document(&document, &format!("seed from {}", path.display()), "seed")
                .await
                .map_err(|error| {
                    anyhow::anyhow!("seed catalog {} refused: {}", path.display(), error.message)
                })?;
            tracing::info!(revision = %outcome.revision, "seed catalog imported");
        }
        Ok(Self {
            settings,
            base,
            service,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.base.local_addr()
    }

    /// Serves until `shutdown` fires, then drains the server, the relay and the consumer.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let base = self.base;
        let consumer_settings = ConsumerSettings::new(
            platform::streams::GROUP_CATALOG,
            vec![base.stream(platform::streams::ORDERS)],
        )
        .with_timing(self.settings.consumer_reclaim_idle, self.settings.consumer_block);
        let handler = Arc::new(consumer::OrderEvents::new(self.service.clone()));
        let consumer = tokio::spawn(
            StreamConsumer::new(
                &base.common.redis_url,
                consumer_settings,
                handler,
                base.event_verifier(),
            )
            .run(shutdown.clone()),
        );
        let adapter = grpc::CatalogGrpc::new(self.service.clone());
        let catalog = base.guarded(CatalogServiceServer::new(adapter), grpc::ACCESS);
        base.serve(
            vec![GRPC_SERVICE],
            vec![consumer],
            |router| router.add_service(catalog),
            shutdown,
        )
        .await
    }
}

/// The catalog-svc process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`CATALOG_METRICS_ADDR`, default `127.0.0.1:51051`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "CATALOG",
        "127.0.0.1:51051",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

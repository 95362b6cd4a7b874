//! orders-svc: laboratory orders placed from quotes, their sample lines, status history and
//! payment block.
//!
//! It serves `lab.orders.v1.OrdersService` (CreateOrder, GetOrder, ListOrders) to the gateway,
//! reads quotes from catalog-svc and issues invoices through payments-svc, relays its outbox
//! (`order.created`, `order.status_changed`) to the orders stream, and consumes the payments
//! stream (group `orders-svc`) to move paid orders along. It also serves
//! `lab.orders.v1.SupportService`, the customers' support tickets (docs/support.md).

#![forbid(unsafe_code)]

pub mod config;
pub mod consumer;
pub mod convert;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod grpc_support;
pub mod repo;
pub mod service;
pub mod view;

pub use config::Settings;

use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use proto::orders::orders_service_server::{OrdersServiceServer, SERVICE_NAME as GRPC_SERVICE};
use proto::orders::support_service_server::{SERVICE_NAME as SUPPORT_GRPC_SERVICE, SupportServiceServer};
use sqlx::PgPool;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "orders";
/// Service name in events, logs, traces and the service tokens it mints.
pub const SERVICE_NAME: &str = platform::mesh::ORDERS_SVC;
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::ORDERS,
};
/// Outbox of this service.
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    base: ServiceBase,
    tokens: platform::tokens::TokenIssuer,
    label_links: platform::label_links::LabelLinks,
}

impl Application {
    /// Connects and migrates the database and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        // orders-svc calls catalog-svc and payments-svc: without its signing key it cannot start.
        let tokens = base.token_issuer()?;
        // The shipping block's label URL is signed with shipping-svc's key.
        let label_key = platform::config::refuse_development_secret(
            settings.common.dev_mode,
            "ORDERS_LABEL_SIGNING_KEY (or SHIPPING_SIGNING_KEY)",
            settings.label_links.signing_key.as_ref(),
            platform::label_links::DEVELOPMENT_KEY,
        )?;
        let label_links = platform::label_links::LabelLinks::new(
            secrecy::ExposeSecret::expose_secret(&label_key)
                .as_bytes()
                .to_vec(),
            &settings.label_links.public_base_url,
            settings.label_links.ttl,
        );
        Ok(Self {
            settings,
            base,
            tokens,
            label_links,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.base.local_addr()
    }

    /// The database pool (tests inspect the schema through it).
    pub fn pool(&self) -> &PgPool {
        &self.base.pool
    }

    /// Serves until `shutdown` fires, then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let base = self.base;
        let orders = Arc::new(service::OrdersService::new(
            base.pool.clone(),
            &self.settings,
            self.tokens,
            self.label_links,
        )?);
        // Orders placed before the read model existed get their views (once, in the background).
        let backfill_pool = base.pool.clone();
        tokio::spawn(async move {
            match repo::view::backfill(&backfill_pool).await {
                Ok(0) => {}
                Ok(rendered) => tracing::info!(rendered, "order views rendered for existing orders"),
                Err(error) => {
                    tracing::warn!(%error, "order views not backfilled; reads render them on demand")
                }
            }
        });
        let timing = &self.settings.consumer;
        let consumer_settings = ConsumerSettings {
            acknowledge: timing.acknowledge,
            ..ConsumerSettings::new(
                platform::streams::GROUP_ORDERS,
                vec![
                    base.stream(platform::streams::PAYMENTS),
                    base.stream(platform::streams::RESULTS),
                    base.stream(platform::streams::SHIPPING),
                ],
            )
            .with_timing(timing.reclaim_idle, timing.block)
        };
        let handler = Arc::new(consumer::PaymentEventsHandler::new(orders.clone()));
        let consumer = tokio::spawn(
            StreamConsumer::new(
                &base.common.redis_url,
                consumer_settings,
                handler,
                base.event_verifier(),
            )
            .run(shutdown.clone()),
        );
        let api = base.guarded(
            OrdersServiceServer::new(grpc::OrdersGrpc::new(orders)),
            grpc::ACCESS,
        );
        // Support tickets: their own gRPC service beside OrdersService (docs/support.md).
        let support = base.guarded(
            SupportServiceServer::new(grpc_support::SupportGrpc::new(Arc::new(
                service::SupportDesk::new(base.pool.clone(), &self.settings),
            ))),
            grpc_support::ACCESS,
        );
        base.serve(
            vec![GRPC_SERVICE, SUPPORT_GRPC_SERVICE],
            vec![consumer],
            |router| router.add_service(api).add_service(support),
            shutdown,
        )
        .await
    }
}

/// The orders-svc process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`ORDERS_METRICS_ADDR`, default `127.0.0.1:51052`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(SERVICE_NAME, "ORDERS", "127.0.0.1:51052", |shutdown| async move {
        let application = Application::build(Settings::from_env()?).await?;
        application.run_until_stopped(shutdown).await
    })
    .await
}

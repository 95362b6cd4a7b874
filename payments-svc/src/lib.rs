//! payments-svc: itemized invoices of orders, bank payments recorded by staff, and the
//! `order.created` backstop that guarantees every order an invoice.
//!
//! Owns the schema `payments`; emits `invoice.created`, `invoice.updated` and
//! `payment.confirmed` through its outbox to the stream `<prefix>:events:payments`; reads the
//! orders stream in the consumer group `payments-svc`.

#![forbid(unsafe_code)]

pub mod config;
pub mod consumer;
pub mod convert;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod repo;
pub mod service;

pub use config::Settings;

use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use proto::payments::payments_service_server::{PaymentsServiceServer, SERVICE_NAME as GRPC_SERVICE_NAME};
use sqlx::PgPool;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "payments";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "payments-svc";
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::PAYMENTS,
};
/// Outbox of this service.
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    base: ServiceBase,
}

impl Application {
    /// Connects and migrates the database and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        Ok(Self { settings, base })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.base.local_addr()
    }

    /// The database pool (tests inspect the schema through it).
    pub fn pool(&self) -> &PgPool {
        &self.base.pool
    }

    /// Serves the API, relays the outbox and consumes the orders stream until `shutdown` fires,
    /// then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let base = self.base;
        let service = service::PaymentsService::new(
            base.pool.clone(),
            self.settings.bank.clone(),
            self.settings.invoice_due_days,
        );
        let timing = self.settings.consumer;
        let consumer_settings = ConsumerSettings::new(
            platform::streams::GROUP_PAYMENTS,
            vec![base.stream(platform::streams::ORDERS)],
        )
        .with_timing(timing.reclaim_idle, timing.block);
        let handler = Arc::new(consumer::OrderEventsHandler::new(service.clone()));
        let consumer = tokio::spawn(
            StreamConsumer::new(&base.common.redis_url, consumer_settings, handler).run(shutdown.clone()),
        );
        let api = base.guarded(
            PaymentsServiceServer::new(grpc::PaymentsGrpc::new(service)),
            grpc::ACCESS,
        );
        base.serve(
            vec![GRPC_SERVICE_NAME],
            vec![consumer],
            |router| router.add_service(api),
            shutdown,
        )
        .await
    }
}

//! shipping-svc: prepaid inbound labels, tracking and door pickups.
//!
//! Owns the schema `shipping`; buys each order's label once (ship-first on the card and bank
//! rails, after settlement on the stablecoin rail) from a carrier behind one interface (the
//! built-in sandbox or EasyPost), renders the 4×6 in label PDF, records carrier scans, emails
//! the label when a bank invoice is paid, books paid door pickups, and voids the label of an
//! order cancelled before the carrier has the parcel. Emits `shipment.label_created`,
//! `shipment.updated` and `shipment.label_voided` through its outbox to the stream
//! `<prefix>:events:shipping`; reads the orders and payments streams in the consumer group
//! `shipping-svc`. Design and settings: `docs/shipping.md`, `shipping-svc/README.md`.

#![forbid(unsafe_code)]

pub mod carrier;
pub mod config;
pub mod consumer;
pub mod convert;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod label;
pub mod mail;
pub mod repo;
pub mod service;

pub use config::Settings;

use carrier::CarrierAdapter;
use config::CarrierSettings;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use proto::shipping::shipping_service_server::{SERVICE_NAME as GRPC_SERVICE_NAME, ShippingServiceServer};
use secrecy::ExposeSecret;
use sqlx::PgPool;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "shipping";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "shipping-svc";
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::SHIPPING,
};
/// Outbox of this service.
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener, use cases ready.
pub struct Application {
    settings: Settings,
    base: ServiceBase,
    service: service::ShippingService,
}

impl Application {
    /// Connects and migrates the database, binds the gRPC listener and prepares the carrier,
    /// the mailer and the peers; refuses a missing or development signing key outside
    /// development mode.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        // shipping-svc calls catalog-svc and identity-svc: without its key it cannot start.
        let tokens = base.token_issuer()?;
        let signing_key = platform::config::refuse_development_secret(
            settings.common.dev_mode,
            "SHIPPING_SIGNING_KEY",
            settings.signing_key.as_ref(),
            config::DEVELOPMENT_SIGNING_KEY,
        )?;
        let carrier = match &settings.carrier {
            CarrierSettings::Sandbox => CarrierAdapter::Sandbox(carrier::sandbox::SandboxCarrier),
            CarrierSettings::EasyPost(easypost) => {
                CarrierAdapter::EasyPost(carrier::easypost::EasyPostCarrier::new(easypost.clone())?)
            }
        };
        let mailer = mail::Mailer::new(&settings.mail_from, &settings.mail)?;
        let files = platform::blobs::BlobStore::new(&settings.blobs, "labels")?;
        let service = service::ShippingService::new(
            base.pool.clone(),
            &settings,
            carrier,
            tokens,
            signing_key.expose_secret().as_bytes().to_vec(),
            mailer,
            files,
        )?;
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

    /// The database pool (tests inspect the schema through it).
    pub fn pool(&self) -> &PgPool {
        &self.base.pool
    }

    /// Serves the API, relays the outbox, consumes the orders and payments streams and (with
    /// EasyPost) prunes old carrier webhook event ids until `shutdown` fires, then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let base = self.base;
        let timing = self.settings.consumer;
        let consumer_settings = ConsumerSettings::new(
            platform::streams::GROUP_SHIPPING,
            vec![
                base.stream(platform::streams::ORDERS),
                base.stream(platform::streams::PAYMENTS),
            ],
        )
        .with_timing(timing.reclaim_idle, timing.block);
        let handler = Arc::new(consumer::ShippingEventsHandler::new(self.service.clone()));
        let consumer = tokio::spawn(
            StreamConsumer::new(
                &base.common.redis_url,
                consumer_settings,
                handler,
                base.event_verifier(),
            )
            .run(shutdown.clone()),
        );
        // Labels bought before the label store existed move out of the database.
        let mut workers = vec![consumer, self.service.spawn_label_move(shutdown.clone())];
        if matches!(self.settings.carrier, CarrierSettings::EasyPost(_)) {
            workers.push(self.service.spawn_webhook_event_pruning(shutdown.clone()));
        }
        let api = base.guarded(
            ShippingServiceServer::new(grpc::ShippingGrpc::new(self.service)),
            grpc::ACCESS,
        );
        base.serve(
            vec![GRPC_SERVICE_NAME],
            workers,
            |router| router.add_service(api),
            shutdown,
        )
        .await
    }
}

/// The shipping-svc process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`SHIPPING_METRICS_ADDR`, default `127.0.0.1:51054`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "SHIPPING",
        "127.0.0.1:51054",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

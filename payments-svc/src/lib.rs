//! payments-svc: itemized invoices of orders, bank payments recorded by staff, hosted card
//! checkout (sandbox processor or a Stripe-shaped PSP), payment preparation, the overdue job,
//! and the `order.created` backstop that guarantees every order an invoice.
//!
//! Owns the schema `payments`; emits `invoice.created`, `invoice.updated` and
//! `payment.confirmed` through its outbox to the stream `<prefix>:events:payments`; reads the
//! orders stream in the consumer group `payments-svc`.

#![forbid(unsafe_code)]

pub mod chain;
pub mod config;
pub mod consumer;
pub mod convert;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod processor;
pub mod repo;
pub mod service;
pub mod stablecoin;

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

    /// Sets the site root of the hosted pay page (labd knows the gateway's address only after
    /// this service is built).
    pub fn set_site_url(&mut self, site_url: &str) {
        self.settings.site_url = site_url.trim_end_matches('/').to_owned();
    }

    /// The use cases as this application runs them (tests drive the jobs through it).
    pub fn service(&self) -> anyhow::Result<service::PaymentsService> {
        let processor: Arc<dyn processor::CardProcessor> = match &self.settings.card_processor {
            config::CardProcessorSettings::Sandbox => Arc::new(processor::sandbox::SandboxProcessor),
            config::CardProcessorSettings::Stripe(stripe) => {
                Arc::new(processor::stripe::StripeProcessor::new(stripe.clone())?)
            }
        };
        Ok(service::PaymentsService::new(
            self.base.pool.clone(),
            self.settings.bank.clone(),
            self.settings.invoice_due_days,
            service::CardSettings {
                processor,
                site_url: self.settings.site_url.clone(),
                checkout_ttl: self.settings.checkout_ttl,
            },
            self.settings.spend_without_envelope,
            self.settings.stablecoin.is_some(),
        ))
    }

    /// Serves the API, relays the outbox and consumes the orders stream until `shutdown` fires,
    /// then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let service = self.service()?;
        let base = self.base;
        let timing = self.settings.consumer;
        let consumer_settings = ConsumerSettings::new(
            platform::streams::GROUP_PAYMENTS,
            vec![base.stream(platform::streams::ORDERS)],
        )
        .with_timing(timing.reclaim_idle, timing.block);
        let handler = Arc::new(consumer::OrderEventsHandler::new(service.clone()));
        let rail = match self.settings.stablecoin.clone() {
            Some(chain) => {
                // One crypto stack for the workspace: ring, installed once (a second install is a no-op).
                let _ = rustls::crypto::ring::default_provider().install_default();
                Some(stablecoin::StablecoinRail::new(base.pool.clone(), chain)?)
            }
            None => None,
        };
        let consumer = tokio::spawn(
            StreamConsumer::new(
                &base.common.redis_url,
                consumer_settings,
                handler,
                base.event_verifier(),
            )
            .run(shutdown.clone()),
        );
        let jobs = tokio::spawn(run_jobs(
            service.clone(),
            self.settings.jobs_interval,
            shutdown.clone(),
        ));
        let mut workers = vec![consumer, jobs];
        if let Some(rail) = rail.clone() {
            workers.push(tokio::spawn(rail.run_scanner(shutdown.clone())));
        }
        let api = base.guarded(
            PaymentsServiceServer::new(
                grpc::PaymentsGrpc::new(service)
                    .with_stablecoin(rail)
                    .with_stablecoin_for_sandbox(self.settings.stablecoin_for_sandbox),
            ),
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

/// Runs the periodic jobs (expiring checkout sessions, overdue invoices) every `interval` until
/// `shutdown`; a failed run is logged and retried at the next tick.
async fn run_jobs(
    service: service::PaymentsService,
    interval: std::time::Duration,
    shutdown: CancellationToken,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = ticker.tick() => {
                if let Err(error) = service.run_jobs_once().await {
                    tracing::warn!(%error, "a payments job run failed");
                }
            }
        }
    }
}

/// The payments-svc process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`PAYMENTS_METRICS_ADDR`, default `127.0.0.1:51053`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "PAYMENTS",
        "127.0.0.1:51053",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

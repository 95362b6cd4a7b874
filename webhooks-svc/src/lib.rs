//! webhooks-svc: customer webhook endpoints and signed, at-least-once deliveries of every event
//! kind, guarded against server-side request forgery.
//!
//! Owns the schema `webhooks`. Reads every domain stream (`platform::streams::EVENT_DOMAINS`)
//! in the consumer group `webhooks-svc`, stores each event once and queues one delivery per
//! subscribed active endpoint of that event's customer; an in-process dispatcher signs and
//! sends them with retries, dead letters and a lease that survives crashes. See README.md.

#![forbid(unsafe_code)]

pub mod config;
pub mod consumer;
pub mod convert;
pub mod dispatcher;
pub mod domain;
pub mod grpc;
pub mod keyring;
pub mod maintenance;
pub mod repo;
pub mod sender;
pub mod service;
pub mod ssrf;

pub use config::Settings;

use dispatcher::Dispatcher;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use proto::webhooks::webhooks_service_server::{SERVICE_NAME as GRPC_SERVICE_NAME, WebhooksServiceServer};
use sender::Sender;
use service::WebhooksService;
use sqlx::PgPool;
use ssrf::{AddressGuard, Resolver, StaticResolver, SystemResolver};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "webhooks";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "webhooks-svc";
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::WEBHOOKS,
};
/// Outbox of this service (it emits no events of its own today).
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built service: migrated database, bound listener, ready dispatcher.
pub struct Application {
    settings: Settings,
    base: ServiceBase,
    service: WebhooksService,
    dispatcher: Arc<Dispatcher>,
}

impl Application {
    /// Connects and migrates the database, binds the gRPC listener and builds the HTTP client.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        if settings.secret_keys.is_development() {
            anyhow::ensure!(
                settings.common.dev_mode,
                "WEBHOOKS_SECRET_KEYS is not set or holds the published development key; set a real keyring, \
                 or {}=1 for local development only",
                platform::config::DEV_MODE_VAR
            );
            tracing::warn!(
                "WEBHOOKS_SECRET_KEYS is not set: signing secrets are sealed with the PUBLIC development key \
                 (development mode)"
            );
        }
        if settings.allow_loopback_targets {
            anyhow::ensure!(
                settings.common.dev_mode,
                "WEBHOOKS_ALLOW_LOOPBACK_TARGETS is on outside development mode: webhooks to loopback addresses are for local development and tests only"
            );
            tracing::warn!(
                "WEBHOOKS_ALLOW_LOOPBACK_TARGETS is on: webhooks may reach 127.0.0.0/8 and ::1 (unsafe)"
            );
        }
        anyhow::ensure!(
            settings.delivery.lease >= settings.delivery.request_timeout * 2,
            "WEBHOOKS_DELIVERY_LEASE_MS must be at least twice WEBHOOKS_REQUEST_TIMEOUT_MS"
        );
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        let resolver: Arc<dyn Resolver> = if settings.dns_overrides.is_empty() {
            Arc::new(SystemResolver)
        } else {
            Arc::new(StaticResolver::new(
                &settings.dns_overrides,
                Arc::new(SystemResolver),
            ))
        };
        let guard = AddressGuard::new(resolver, settings.allow_loopback_targets);
        let sender = Sender::new(
            guard.clone(),
            settings.delivery.request_timeout,
            &settings.extra_root_certificates_pem,
        )?;
        let dispatcher = Arc::new(Dispatcher::new(
            dispatch_pool(&base.pool, settings.delivery.max_in_flight),
            sender,
            settings.secret_keys.clone(),
            settings.delivery.clone(),
        ));
        let service = WebhooksService::new(
            base.pool.clone(),
            settings.secret_keys.clone(),
            guard,
            Arc::clone(&dispatcher),
            settings.idempotency,
        )
        .with_endpoint_limit(settings.max_endpoints_per_customer);
        Ok(Self {
            settings,
            base,
            service,
            dispatcher,
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

    /// Serves the API, fans events out and dispatches deliveries until `shutdown` fires, then
    /// drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let base = self.base;
        let streams: Vec<String> = platform::streams::EVENT_DOMAINS
            .iter()
            .map(|domain| base.stream(domain))
            .collect();
        let timing = self.settings.consumer;
        let handler = Arc::new(consumer::FanOutHandler::new(self.service.clone()));
        // Several consumers of the group share the streams: fan-out commits run in parallel.
        let mut workers: Vec<_> = (0..self.settings.consumers.max(1))
            .map(|_| {
                let mut settings = ConsumerSettings::new(platform::streams::GROUP_WEBHOOKS, streams.clone())
                    .with_timing(timing.reclaim_idle, timing.block);
                settings.batch = self.settings.consumer_batch.max(1);
                let consumer = StreamConsumer::new(
                    &base.common.redis_url,
                    settings,
                    Arc::clone(&handler),
                    base.event_verifier(),
                );
                tokio::spawn(consumer.run(shutdown.clone()))
            })
            .collect();
        workers.push(tokio::spawn(Arc::clone(&self.dispatcher).run(shutdown.clone())));
        workers.push(maintenance::spawn(
            base.pool.clone(),
            self.settings.secret_keys.clone(),
            self.settings.delivery.event_retention_days,
            shutdown.clone(),
        ));
        let api = base.guarded(
            WebhooksServiceServer::new(grpc::WebhooksGrpc::new(self.service)),
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

/// The dispatcher's own pool, whose transactions commit asynchronously
/// (`synchronous_commit = off`). Safe because everything it writes is a lease or an attempt
/// record: a commit lost in a database crash only means an attempt is made again (at least
/// once, same event id). Fan-out and API writes stay on the durable pool.
fn dispatch_pool(pool: &PgPool, max_in_flight: usize) -> PgPool {
    let options = (*pool.connect_options())
        .clone()
        .options([("synchronous_commit", "off")]);
    let connections = u32::try_from(max_in_flight / 16 + 3).unwrap_or(8).min(12);
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .connect_lazy_with(options)
}

/// The webhooks-svc process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`WEBHOOKS_METRICS_ADDR`, default `127.0.0.1:51056`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "WEBHOOKS",
        "127.0.0.1:51056",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

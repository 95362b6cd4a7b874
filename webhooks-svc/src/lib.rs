//! webhooks-svc: customer endpoints and signed, at-least-once webhook deliveries.
//!
//! Today a shell that owns its schema, migrates, relays its (empty) outbox and reports healthy;
//! endpoint management and delivery arrive with their issue.

#![forbid(unsafe_code)]

use platform::config::CommonSettings;
use platform::outbox::{Outbox, OutboxRelay};
use sqlx::PgPool;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "webhooks";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = "webhooks-svc";
/// Outbox of this service.
pub const OUTBOX: Outbox = Outbox::new(SCHEMA, SERVICE_NAME);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Settings of webhooks-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
}

impl Settings {
    /// Reads settings from `WEBHOOKS_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self { common: CommonSettings::from_env("WEBHOOKS", "127.0.0.1:50056")? })
    }
}

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    pool: PgPool,
    listener: TcpListener,
}

impl Application {
    /// Connects and migrates the database and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = platform::db::connect(&settings.common.database_url, settings.common.database_max_connections).await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let listener = TcpListener::bind(settings.common.grpc_addr).await?;
        Ok(Self { settings, pool, listener })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// Serves until `shutdown` fires, then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let common = &self.settings.common;
        let redis = redis::Client::open(common.redis_url.as_str())?;
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(reporter, vec![], self.pool.clone(), redis, shutdown.clone());
        let relay = OutboxRelay::new(self.pool.clone(), OUTBOX, &common.redis_url, &common.stream_prefix, platform::streams::WEBHOOKS);
        let relay = tokio::spawn(relay.run(shutdown.clone()));
        let housekeeping = platform::housekeeping::spawn(self.pool.clone(), SCHEMA, shutdown.clone());
        let router = platform::grpc::server_builder().add_service(health);
        tracing::info!(addr = %self.local_addr(), "{SERVICE_NAME} serving");
        let served = platform::grpc::serve(router, self.listener, shutdown.clone()).await;
        shutdown.cancel();
        platform::shutdown::drain(SERVICE_NAME, async {
            let _ = tokio::join!(relay, probe, housekeeping);
        })
        .await;
        served
    }
}

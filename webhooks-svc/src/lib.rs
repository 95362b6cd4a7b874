//! webhooks-svc: customer endpoints and signed, at-least-once webhook deliveries.
//!
//! Today a shell that owns its schema, migrates, relays its (empty) outbox and reports healthy;
//! endpoint management and delivery arrive with their issue.

#![forbid(unsafe_code)]

use platform::config::CommonSettings;
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use std::net::SocketAddr;
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
/// Outbox of this service.
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Settings of webhooks-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
}

impl Settings {
    /// Reads settings from `WEBHOOKS_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            common: CommonSettings::from_env("WEBHOOKS", "127.0.0.1:50056")?,
        })
    }
}

/// A built service: migrated database, bound listener.
pub struct Application {
    base: ServiceBase,
}

impl Application {
    /// Connects and migrates the database and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Ok(Self {
            base: ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.base.local_addr()
    }

    /// Serves health, relays the outbox and prunes until `shutdown` fires, then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        self.base.serve(vec![], vec![], |router| router, shutdown).await
    }
}

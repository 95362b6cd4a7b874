//! identity-svc: customers and their API keys, lab operators and their staff tokens.
//!
//! It serves `lab.identity.v1.IdentityService` over gRPC and owns the `identity` schema. Staff
//! reach it through labctl (an operator's credential for a staff token, then `identity.admin`
//! for customers, keys and operators); the gateway verifies presented API keys through
//! `VerifyApiKey` (and caches the answers); shipping-svc reads the customer it acts for. It signs
//! every staff token of the mesh, and announces what stops working: revoked API keys on the
//! gateway's key-revocation channel ([`revocations`]), disabled operators and rotated
//! credentials in the staff-token revocation list ([`staff::revocations`]).

#![forbid(unsafe_code)]

pub mod config;
pub mod domain;
pub mod grpc;
pub mod repo;
pub mod revocations;
pub mod service;
pub mod staff;

pub use config::Settings;

use platform::service::{ServiceBase, ServiceIdentity};
use platform::tokens::StaffRevocations;
use proto::identity::identity_service_server::{IdentityServiceServer, SERVICE_NAME as GRPC_SERVICE};
use revocations::KeyRevocations;
use std::net::SocketAddr;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "identity";
/// Service name in logs, traces and tokens (the issuer of staff tokens).
pub const SERVICE_NAME: &str = platform::mesh::IDENTITY_SVC;
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::IDENTITY,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Registers one of the first two admins of a deployment (`identity-svc bootstrap-operator NAME
/// [ROLES]`) and returns their credential, which is shown once: connects and migrates the
/// database with identity-svc's settings, refuses once two enabled admins exist (further admins
/// and QA officers need a second admin's approval) and refuses lab roles.
pub async fn bootstrap_operator(settings: &Settings, name: &str, roles: &[String]) -> anyhow::Result<String> {
    let common = &settings.common;
    let pepper = platform::config::refuse_development_secret(
        common.dev_mode,
        "LAB_API_KEY_PEPPER",
        Some(&settings.api_key_pepper),
        config::DEV_API_KEY_PEPPER,
    )?;
    let pool = platform::db::connect(common.require_database_url()?, 1).await?;
    platform::db::migrate(&pool, &MIGRATOR).await?;
    staff::bootstrap_operator(&pool, &pepper, name, roles).await
}

/// A built service: migrated database, revocation list read, bound listener.
pub struct Application {
    base: ServiceBase,
    identity: service::IdentityService,
    staff: staff::StaffService,
    /// Verifies the staff tokens of this API against identity-svc's own revocation list (read
    /// from its database, so it needs no Redis to refuse a revoked token).
    verifier: platform::tokens::TokenVerifier,
    /// Keeps that list current from the database and writes it to Redis for the mesh.
    announcer: staff::revocations::Announcer,
}

impl Application {
    /// Connects and migrates the database (moving the gateway's identity tables here on the
    /// first start, `migrations/0002_identity.sql`), reads the staff-token revocations, prepares
    /// the Redis connection of the announcements and binds the gRPC listener; in development
    /// mode, makes sure the development operator exists.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pepper = platform::config::refuse_development_secret(
            settings.common.dev_mode,
            "LAB_API_KEY_PEPPER",
            Some(&settings.api_key_pepper),
            config::DEV_API_KEY_PEPPER,
        )?;
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        // identity-svc signs the staff tokens: without its key it cannot start.
        let issuer = base.token_issuer()?;
        let common = &base.common;
        let redis = platform::db::redis_client(&common.redis_url)?;
        let manager_config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(Duration::from_millis(500)))
            .set_number_of_retries(1);
        let manager = redis::aio::ConnectionManager::new_lazy_with_config(redis, manager_config)?;
        let staff_revocations = StaffRevocations::new();
        let verifier = base
            .token_verifier()
            .with_staff_revocations(staff_revocations.clone());
        let announcer =
            staff::revocations::Announcer::new(manager.clone(), &common.stream_prefix, staff_revocations);
        announcer.read(&base.pool).await;
        let staff = staff::StaffService::new(
            base.pool.clone(),
            pepper.clone(),
            issuer,
            common.dev_mode,
            announcer.clone(),
        );
        if common.dev_mode {
            staff.ensure_development_operator().await?;
        }
        let identity = service::IdentityService::new(
            base.pool.clone(),
            pepper,
            KeyRevocations::new(manager, &common.stream_prefix),
        );
        Ok(Self {
            base,
            identity,
            staff,
            verifier,
            announcer,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.base.local_addr()
    }

    /// Serves until `shutdown` fires, then drains the server and the revocation announcer.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let base = self.base;
        let announcer = tokio::spawn(self.announcer.run(base.pool.clone(), shutdown.clone()));
        let identity = platform::access::guarded(
            IdentityServiceServer::new(grpc::IdentityGrpc::new(self.identity, self.staff)),
            self.verifier,
            grpc::ACCESS,
        )
        .for_streams(&base.common.stream_prefix);
        base.serve(
            vec![GRPC_SERVICE],
            vec![announcer],
            |router| router.add_service(identity),
            shutdown,
        )
        .await
    }
}

/// The identity-svc process once its telemetry is installed: settings from the environment,
/// build, Prometheus metrics on the internal port (`IDENTITY_METRICS_ADDR`, default
/// `127.0.0.1:51057`; docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "IDENTITY",
        "127.0.0.1:51057",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

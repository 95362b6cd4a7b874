//! The gateway: a thin axum application that authenticates API keys, enforces scopes and rate
//! limits, and translates REST (`/api/v1/agent/...`) into gRPC calls on the domain services;
//! plus the internal `lab.identity.v1.IdentityService` (customers and API keys, schema
//! `gateway`) that staff reach through labctl.

#![forbid(unsafe_code)]

pub mod authenticator;
pub mod caller;
pub mod config;
pub mod domain;
pub mod dto;
pub mod grpc;
pub mod http;
pub mod operations;
pub mod peers;
pub mod repo;
pub mod scopes;
pub mod service;
pub mod staff;

pub use config::{PeerAddrs, RateLimitSettings, Settings};
pub use http::{AppState, app};

use authenticator::Authenticator;
use http::rate_limit::RateLimiter;
use peers::Peers;
use platform::tokens::ProcessTokens;
use proto::identity::identity_service_server::IdentityServiceServer;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by the gateway.
pub const SCHEMA: &str = "gateway";
/// Service name in logs and traces.
pub const SERVICE_NAME: &str = platform::mesh::GATEWAY;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Registers the first operator of a deployment (`gateway bootstrap-operator NAME [ROLES]`) and
/// returns their credential, which is shown once: connects and migrates the database with the
/// gateway's settings, refuses when operators already exist.
pub async fn bootstrap_operator(settings: &Settings, name: &str, roles: &[String]) -> anyhow::Result<String> {
    let common = &settings.common;
    let pepper = platform::config::refuse_development_secret(
        common.dev_mode,
        "LAB_API_KEY_PEPPER",
        Some(&settings.api_key_pepper),
        config::DEV_API_KEY_PEPPER,
    )?;
    let pool = platform::db::connect(&common.database_url, 1).await?;
    platform::db::migrate(&pool, &MIGRATOR).await?;
    staff::bootstrap_operator(&pool, &pepper, name, roles).await
}

/// A built gateway: migrated database, both listeners bound, state ready.
pub struct Application {
    settings: Settings,
    state: AppState,
    http_listener: TcpListener,
    grpc_listener: TcpListener,
    staff: staff::StaffService,
    /// Verifies the staff tokens of the identity API.
    verifier: platform::tokens::TokenVerifier,
}

impl Application {
    /// Connects and migrates the database, prepares the peer channels and binds the REST and
    /// the internal gRPC listeners.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let mut settings = settings;
        let common = &settings.common;
        settings.api_key_pepper = platform::config::refuse_development_secret(
            common.dev_mode,
            "LAB_API_KEY_PEPPER",
            Some(&settings.api_key_pepper),
            config::DEV_API_KEY_PEPPER,
        )?;
        let tokens = ProcessTokens::load(common, SERVICE_NAME)?;
        let issuer = tokens.issuer()?;
        if common.dev_mode {
            platform::config::warn_development_mode(SERVICE_NAME);
        }
        let pool = platform::db::connect(&common.database_url, common.database_max_connections).await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let staff = staff::StaffService::new(
            pool.clone(),
            settings.api_key_pepper.clone(),
            issuer.clone(),
            common.dev_mode,
        );
        if common.dev_mode {
            staff.ensure_development_operator().await?;
        }
        let state = AppState {
            peers: Peers::connect(&settings.peers)?,
            authenticator: Authenticator::new(
                pool.clone(),
                settings.api_key_pepper.clone(),
                settings.key_cache_ttl,
            ),
            tokens: issuer,
            rate_limiter: RateLimiter::new(settings.rate_limit),
            redis: redis::Client::open(common.redis_url.as_str())?,
            pool,
            peer_health_timeout: settings.peer_health_timeout,
        };
        let http_listener = TcpListener::bind(settings.http_addr).await?;
        let grpc_listener = TcpListener::bind(common.grpc_addr).await?;
        Ok(Self {
            settings,
            state,
            http_listener,
            grpc_listener,
            staff,
            verifier: tokens.verifier,
        })
    }

    /// The bound REST address.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The bound internal gRPC (identity) address.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc_listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves REST and gRPC until `shutdown` fires (or either server fails), then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let (http_addr, grpc_addr) = (self.http_addr(), self.grpc_addr());
        let state = self.state;
        let identity =
            service::IdentityService::new(state.pool.clone(), self.settings.api_key_pepper.clone());
        let identity = platform::access::guarded(
            IdentityServiceServer::new(grpc::IdentityGrpc::new(identity, self.staff)),
            self.verifier,
            grpc::ACCESS,
        );
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![<IdentityServiceServer<grpc::IdentityGrpc> as tonic::server::NamedService>::NAME],
            state.pool.clone(),
            state.redis.clone(),
            shutdown.clone(),
        );
        let grpc_router = platform::grpc::server_builder()
            .add_service(health)
            .add_service(identity);
        let grpc = platform::grpc::serve(grpc_router, self.grpc_listener, shutdown.clone());

        let service = app(state).into_make_service_with_connect_info::<SocketAddr>();
        let rest = axum::serve(self.http_listener, service)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned());
        tracing::info!(%http_addr, %grpc_addr, "{SERVICE_NAME} serving");

        // Either server ending stops the other; both then drain within the grace period.
        let stop_after_rest = shutdown.clone();
        let rest = async move {
            let outcome = rest.await.map_err(anyhow::Error::from);
            stop_after_rest.cancel();
            outcome
        };
        let stop_after_grpc = shutdown.clone();
        let grpc = async move {
            let outcome = grpc.await;
            stop_after_grpc.cancel();
            outcome
        };
        let servers = async { tokio::join!(rest, grpc) };
        let grace = async {
            shutdown.cancelled().await;
            tokio::time::sleep(platform::shutdown::GRACE_PERIOD).await;
        };
        let outcome = tokio::select! {
            (rest, grpc) = servers => rest.and(grpc),
            () = grace => {
                tracing::warn!("grace period ran out before the servers drained");
                Ok(())
            }
        };
        platform::shutdown::drain(SERVICE_NAME, async {
            let _ = probe.await;
        })
        .await;
        outcome
    }
}

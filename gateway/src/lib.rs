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

pub use config::{PeerAddrs, RateLimitSettings, Settings};
pub use http::{AppState, app};

use authenticator::Authenticator;
use http::rate_limit::RateLimiter;
use peers::Peers;
use platform::principal::TokenKeys;
use proto::identity::identity_service_server::IdentityServiceServer;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by the gateway.
pub const SCHEMA: &str = "gateway";
/// Service name in logs and traces.
pub const SERVICE_NAME: &str = "gateway";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// A built gateway: migrated database, both listeners bound, state ready.
pub struct Application {
    settings: Settings,
    state: AppState,
    http_listener: TcpListener,
    grpc_listener: TcpListener,
}

impl Application {
    /// Connects and migrates the database, prepares the peer channels and binds the REST and
    /// the internal gRPC listeners.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = &settings.common;
        if secrecy::ExposeSecret::expose_secret(&settings.api_key_pepper) == config::DEV_API_KEY_PEPPER {
            tracing::warn!("using the development API-key pepper; set LAB_API_KEY_PEPPER in production");
        }
        let pool = platform::db::connect(&common.database_url, common.database_max_connections).await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let state = AppState {
            peers: Peers::connect(&settings.peers)?,
            authenticator: Authenticator::new(
                pool.clone(),
                settings.api_key_pepper.clone(),
                settings.key_cache_ttl,
            ),
            token_keys: Arc::new(TokenKeys::new(
                &common.internal_token_secret,
                &common.staff_token_secret,
            )),
            rate_limiter: RateLimiter::new(settings.rate_limit),
            redis: platform::db::redis_client(&common.redis_url)?,
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
        let interceptor = platform::grpc::auth_interceptor(Arc::clone(&state.token_keys));
        let identity =
            IdentityServiceServer::with_interceptor(grpc::IdentityAdapter::new(identity), interceptor);
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![<IdentityServiceServer<grpc::IdentityAdapter> as tonic::server::NamedService>::NAME],
            state.pool.clone(),
            state.redis.clone(),
            shutdown.clone(),
        );
        let grpc_router = platform::grpc::server_builder()
            .add_service(health)
            .add_service(identity);
        let grpc = platform::grpc::serve(grpc_router, self.grpc_listener, shutdown.clone());

        let service = app(state).into_make_service_with_connect_info::<SocketAddr>();
        // TCP_NODELAY on accepted REST connections: no Nagle stall behind a delayed ACK.
        let http_listener = axum::serve::ListenerExt::tap_io(self.http_listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let rest =
            axum::serve(http_listener, service).with_graceful_shutdown(shutdown.clone().cancelled_owned());
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

//! The gateway: a stateless axum front door that authenticates API keys (verified by
//! identity-svc, its answers kept in a bounded [`key_cache`], revocations heard on Redis:
//! [`revocations`]), enforces scopes and rate limits, and translates REST (`/api/v1/agent/...`)
//! and MCP tool calls (`POST /api/mcp`, [`mcp`]) into gRPC calls on the domain services through
//! the same [`operations`]; plus the internal `lab.gateway.v1.OperationsService` (per-peer
//! health for `labctl health`). It has no database.

#![forbid(unsafe_code)]

pub mod app;
pub mod authenticator;
pub mod caller;
pub mod client_addr;
pub mod config;
pub mod dto;
pub mod http;
pub mod key_cache;
pub mod limits;
pub mod mcp;
pub mod operation_table;
pub mod operations;
pub mod operations_api;
pub mod peers;
pub mod revocations;
pub mod scopes;
pub mod server;

pub use app::app;
pub use config::{FrontDoorSettings, PeerAddrs, RateLimitSettings, Settings};
pub use http::AppState;

use authenticator::{Authenticator, AuthenticatorSettings, KeyStore};
use http::auth::FrontDoor;
use http::ready::Readiness;
use limits::Policy;
use limits::ceiling::LookupCeiling;
use limits::local::LocalLimiter;
use limits::shared::SharedLimiter;
use peers::Peers;
use platform::tokens::ProcessTokens;
use proto::gateway::operations_service_server::OperationsServiceServer;
use revocations::Subscriber;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Service name in logs and traces.
pub const SERVICE_NAME: &str = platform::mesh::GATEWAY;

/// Lookups at identity-svc in flight at once per replica.
const MAX_CONCURRENT_LOOKUPS: usize = 64;

/// Client addresses whose per-address budget a replica remembers at most.
const ADDRESS_CAPACITY: usize = 100_000;

/// A built gateway: both listeners bound, revocations subscribed, state ready.
pub struct Application {
    settings: Settings,
    state: AppState,
    subscriber: Subscriber,
    redis: redis::Client,
    http_listener: TcpListener,
    grpc_listener: TcpListener,
    /// Verifies the staff tokens of the internal API (and refuses revoked ones).
    verifier: platform::tokens::TokenVerifier,
    /// Keeps this replica's staff-token revocation list current from Redis (identity-svc writes it).
    revocation_watcher: platform::tokens::revocations::Watcher,
}

impl Application {
    /// Prepares the peer channels (identity-svc's among them) and the Redis connections (shared
    /// rate limits, revocations), subscribes to key revocations, reads the staff-token
    /// revocation list and binds the REST and the internal gRPC listeners.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = &settings.common;
        let tokens = ProcessTokens::load(common, SERVICE_NAME)?;
        let issuer = tokens.issuer()?;
        if common.dev_mode {
            platform::config::warn_development_mode(SERVICE_NAME);
        }
        if let Some(tls) = &common.grpc_tls {
            tls.announce(SERVICE_NAME);
        }
        let redis = platform::db::redis_client(&common.redis_url)?;
        let manager_config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(Duration::from_millis(500)))
            .set_number_of_retries(1);
        let manager = redis::aio::ConnectionManager::new_lazy_with_config(redis.clone(), manager_config)?;
        // identity-svc owns the staff-token revocations and writes them to Redis.
        let staff_revocations = platform::tokens::StaffRevocations::new();
        let verifier = tokens.verifier.with_staff_revocations(staff_revocations.clone());
        let mut revocation_watcher = platform::tokens::revocations::Watcher::new(
            redis.clone(),
            &common.stream_prefix,
            staff_revocations,
        );
        revocation_watcher.refresh().await;
        let peers = Peers::connect(&settings.peers, common.grpc_tls.as_ref())?;
        let front_door = &settings.front_door;
        let authenticator = Authenticator::new(
            KeyStore {
                client: peers.identity(),
                tokens: issuer.clone(),
            },
            AuthenticatorSettings {
                ttl: settings.key_cache_ttl,
                known_capacity: front_door.key_cache_capacity,
                unknown_capacity: front_door.negative_cache_capacity,
                lookups: Policy::new("key-lookups", front_door.key_lookups_per_address),
                max_concurrent_lookups: MAX_CONCURRENT_LOOKUPS,
            },
        );
        let subscriber =
            Subscriber::connect(redis.clone(), &common.stream_prefix, authenticator.clone()).await;
        let state = AppState {
            peers,
            authenticator,
            tokens: issuer,
            front_door: Arc::new(FrontDoor {
                trusted_proxies: front_door.trusted_proxies.clone(),
                per_address: LocalLimiter::new(
                    Policy::new("per-address", front_door.per_address),
                    ADDRESS_CAPACITY,
                ),
                per_key: SharedLimiter::new(
                    Policy::new("per-key", settings.rate_limit),
                    manager.clone(),
                    &common.stream_prefix,
                ),
                verify_lookups: LookupCeiling::new(
                    SharedLimiter::new(
                        Policy::new(limits::ceiling::POLICY, front_door.verify_lookups),
                        manager,
                        &common.stream_prefix,
                    ),
                    LocalLimiter::new(
                        Policy::new(
                            limits::ceiling::PER_ADDRESS_POLICY,
                            front_door.verify_lookups_per_address,
                        ),
                        ADDRESS_CAPACITY,
                    ),
                ),
            }),
            readiness: Arc::new(Readiness::new(redis.clone())),
            request_timeout: front_door.request_timeout,
            max_concurrent_requests: front_door.max_concurrent_requests,
            mcp: Arc::new(settings.mcp.clone()),
            site_url: Arc::from(""),
            lab: Arc::new(settings.lab.clone()),
        };
        let http_listener = TcpListener::bind(settings.http_addr).await?;
        // Links are built from the configured site; a sandbox without one links to itself.
        let mut state = state;
        state.site_url = if settings.site_url.is_empty() {
            format!("http://{}", http_listener.local_addr()?).into()
        } else {
            settings.site_url.trim_end_matches('/').into()
        };
        let grpc_listener = TcpListener::bind(common.grpc_addr).await?;
        Ok(Self {
            settings,
            state,
            subscriber,
            redis,
            http_listener,
            grpc_listener,
            verifier,
            revocation_watcher,
        })
    }

    /// The state the REST application is built from (the front-door benchmark builds its two
    /// variants of the router from it).
    #[doc(hidden)]
    pub fn state(&self) -> AppState {
        self.state.clone()
    }

    /// The key authenticator (its lookup counter and cache sizes are what tests observe).
    pub fn authenticator(&self) -> Authenticator {
        self.state.authenticator.clone()
    }

    /// The bound REST address.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The bound internal gRPC (operations) address.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc_listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves REST and gRPC until `shutdown` fires (or either server fails), then drains: stops
    /// accepting, reports not ready, and lets requests in flight finish within the drain grace.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let (http_addr, grpc_addr) = (self.http_addr(), self.grpc_addr());
        let state = self.state;
        let operations = platform::access::guarded(
            OperationsServiceServer::new(operations_api::OperationsAdapter::new(
                state.peers.clone(),
                self.redis.clone(),
                self.settings.peer_health_timeout,
            )),
            self.verifier,
            operations_api::ACCESS,
        );
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![<OperationsServiceServer<operations_api::OperationsAdapter> as tonic::server::NamedService>::NAME],
            None,
            self.redis.clone(),
            shutdown.clone(),
        );
        let subscriber = tokio::spawn(self.subscriber.run(shutdown.clone()));
        let revocation_watcher = tokio::spawn(self.revocation_watcher.run(shutdown.clone()));
        // The operations API over mutual TLS when configured, like every service.
        let grpc_router = platform::grpc::server_builder()
            .tls(self.settings.common.grpc_tls.clone())
            .reflection(self.settings.common.grpc_reflection)
            .add_service(health)
            .add_service(operations);
        let grpc = platform::grpc::serve(grpc_router, self.grpc_listener, shutdown.clone());

        let readiness = Arc::clone(&state.readiness);
        let draining = shutdown.clone();
        let stop_accepting = async move {
            draining.cancelled().await;
            readiness.start_draining();
        };
        // TCP_NODELAY on every connection, and a connection that wakes itself is polled again
        // at once (`server`'s module documentation says why).
        let rest = server::serve(self.http_listener, app(state), stop_accepting);
        tracing::info!(%http_addr, %grpc_addr, "{SERVICE_NAME} serving");

        // Either server ending stops the other; both then drain within the grace period.
        let stop_after_rest = shutdown.clone();
        let rest = async move {
            rest.await;
            stop_after_rest.cancel();
            anyhow::Ok(())
        };
        let stop_after_grpc = shutdown.clone();
        let grpc = async move {
            let outcome = grpc.await;
            stop_after_grpc.cancel();
            outcome
        };
        let servers = async { tokio::join!(rest, grpc) };
        let drain_grace = self.settings.front_door.drain_grace;
        let grace = async {
            shutdown.cancelled().await;
            tokio::time::sleep(drain_grace).await;
        };
        let outcome = tokio::select! {
            (rest, grpc) = servers => rest.and(grpc),
            () = grace => {
                tracing::warn!(?drain_grace, "grace period ran out before the servers drained");
                Ok(())
            }
        };
        platform::shutdown::drain(SERVICE_NAME, async {
            let _ = probe.await;
            let _ = subscriber.await;
            let _ = revocation_watcher.await;
        })
        .await;
        outcome
    }
}

/// The gateway process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`GATEWAY_METRICS_ADDR`, default `127.0.0.1:51050`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "GATEWAY",
        "127.0.0.1:51050",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

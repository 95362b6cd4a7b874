//! The gateway: a thin axum application that authenticates API keys, enforces scopes and rate
//! limits, and translates REST (`/api/v1/agent/...`) and MCP tool calls (`POST /api/mcp`,
//! [`mcp`]) into gRPC calls on the domain services through the same [`operations`];
//! plus the internal `lab.identity.v1.IdentityService` (customers and API keys, schema
//! `gateway`) that staff reach through labctl.

#![forbid(unsafe_code)]

pub mod app;
pub mod authenticator;
pub mod caller;
pub mod client_addr;
pub mod config;
pub mod domain;
pub mod dto;
pub mod grpc;
pub mod http;
pub mod key_cache;
pub mod limits;
pub mod mcp;
pub mod operation_table;
pub mod operations;
pub mod operations_api;
pub mod peers;
pub mod repo;
pub mod revocations;
pub mod scopes;
pub mod server;
pub mod service;
pub mod staff;

pub use app::app;
pub use config::{FrontDoorSettings, PeerAddrs, RateLimitSettings, Settings};
pub use http::AppState;

use authenticator::{Authenticator, AuthenticatorSettings};
use http::auth::FrontDoor;
use http::ready::Readiness;
use limits::Policy;
use limits::ceiling::LookupCeiling;
use limits::local::LocalLimiter;
use limits::shared::SharedLimiter;
use peers::Peers;
use platform::tokens::ProcessTokens;
use proto::gateway::operations_service_server::OperationsServiceServer;
use proto::identity::identity_service_server::IdentityServiceServer;
use revocations::{Revocations, Subscriber};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Schema owned by the gateway.
pub const SCHEMA: &str = "gateway";
/// Service name in logs and traces.
pub const SERVICE_NAME: &str = platform::mesh::GATEWAY;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Registers one of the first two admins of a deployment (`gateway bootstrap-operator NAME
/// [ROLES]`) and returns their credential, which is shown once: connects and migrates the
/// database with the gateway's settings, refuses once two enabled admins exist (further admins
/// and QA officers need a second admin's approval) and refuses lab roles.
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

/// Client addresses whose per-address budget a replica remembers at most.
const ADDRESS_CAPACITY: usize = 100_000;

/// A built gateway: migrated database, both listeners bound, revocations subscribed, state ready.
pub struct Application {
    settings: Settings,
    state: AppState,
    revocations: Revocations,
    subscriber: Subscriber,
    redis: redis::Client,
    pool: sqlx::PgPool,
    http_listener: TcpListener,
    grpc_listener: TcpListener,
    staff: staff::StaffService,
    /// Verifies the staff tokens of the internal APIs (and refuses revoked ones).
    verifier: platform::tokens::TokenVerifier,
    /// Keeps this replica's revocation list current from the database and writes it to Redis.
    revocation_announcer: staff::revocations::Announcer,
}

impl Application {
    /// Connects and migrates the database, prepares the peer channels and the Redis connections
    /// (shared rate limits, revocations), subscribes to revocations and binds the REST and the
    /// internal gRPC listeners.
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
        if let Some(tls) = &common.grpc_tls {
            tls.announce(SERVICE_NAME);
        }
        let pool = platform::db::connect(&common.database_url, common.database_max_connections).await?;
        platform::db::migrate(&pool, &MIGRATOR).await?;
        let redis = platform::db::redis_client(&common.redis_url)?;
        let manager_config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(Duration::from_millis(500)))
            .set_number_of_retries(1);
        let manager = redis::aio::ConnectionManager::new_lazy_with_config(redis.clone(), manager_config)?;
        // The gateway owns the revocations: its list comes from its own database.
        let staff_revocations = platform::tokens::StaffRevocations::new();
        let verifier = tokens.verifier.with_staff_revocations(staff_revocations.clone());
        let revocation_announcer =
            staff::revocations::Announcer::new(manager.clone(), &common.stream_prefix, staff_revocations);
        revocation_announcer.read(&pool).await;
        let staff = staff::StaffService::new(
            pool.clone(),
            settings.api_key_pepper.clone(),
            issuer.clone(),
            common.dev_mode,
            revocation_announcer.clone(),
        );
        if common.dev_mode {
            staff.ensure_development_operator().await?;
        }
        let front_door = &settings.front_door;
        let authenticator = Authenticator::new(
            pool.clone(),
            settings.api_key_pepper.clone(),
            AuthenticatorSettings {
                ttl: settings.key_cache_ttl,
                known_capacity: front_door.key_cache_capacity,
                unknown_capacity: front_door.negative_cache_capacity,
                lookups: Policy::new("key-lookups", front_door.key_lookups_per_address),
                // Key lookups never take more than half the pool.
                max_concurrent_lookups: usize::try_from(common.database_max_connections / 2)
                    .unwrap_or(1)
                    .max(1),
            },
        );
        let revocations = Revocations::new(authenticator.clone(), manager.clone(), &common.stream_prefix);
        let subscriber =
            Subscriber::connect(redis.clone(), &common.stream_prefix, authenticator.clone()).await;
        let state = AppState {
            peers: Peers::connect(&settings.peers, common.grpc_tls.as_ref())?,
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
            readiness: Arc::new(Readiness::new(pool.clone(), redis.clone())),
            request_timeout: front_door.request_timeout,
            max_concurrent_requests: front_door.max_concurrent_requests,
            mcp: Arc::new(settings.mcp.clone()),
            site_url: Arc::from(""),
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
            revocations,
            subscriber,
            redis,
            pool,
            http_listener,
            grpc_listener,
            staff,
            verifier,
            revocation_announcer,
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

    /// The bound internal gRPC (identity) address.
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
        let identity = service::IdentityService::new(
            self.pool.clone(),
            self.settings.api_key_pepper.clone(),
            self.revocations,
        );
        let identity = platform::access::guarded(
            IdentityServiceServer::new(grpc::IdentityGrpc::new(identity, self.staff)),
            self.verifier.clone(),
            grpc::ACCESS,
        )
        .for_streams(&self.settings.common.stream_prefix);
        let operations = platform::access::guarded(
            OperationsServiceServer::new(operations_api::OperationsAdapter::new(
                state.peers.clone(),
                self.pool.clone(),
                self.redis.clone(),
                self.settings.peer_health_timeout,
            )),
            self.verifier,
            operations_api::ACCESS,
        );
        let (reporter, health) = tonic_health::server::health_reporter();
        let probe = platform::health::spawn_health_probe(
            reporter,
            vec![<IdentityServiceServer<grpc::IdentityGrpc> as tonic::server::NamedService>::NAME],
            self.pool.clone(),
            self.redis.clone(),
            shutdown.clone(),
        );
        let pool = self.pool.clone();
        // Reported while the gateway serves (dropped with it).
        let _metrics = platform::metrics::on_scrape(move || {
            platform::metrics::record_pool(SERVICE_NAME, &pool);
            Box::pin(std::future::ready(()))
        });
        let subscriber = tokio::spawn(self.subscriber.run(shutdown.clone()));
        let revocation_announcer =
            tokio::spawn(self.revocation_announcer.run(self.pool.clone(), shutdown.clone()));
        // The identity and operations APIs over mutual TLS when configured, like every service.
        let grpc_router = platform::grpc::server_builder()
            .tls(self.settings.common.grpc_tls.clone())
            .add_service(health)
            .add_service(identity)
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
            let _ = revocation_announcer.await;
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

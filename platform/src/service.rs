//! The lifecycle every domain service shares: connect and migrate its schema, read the operator
//! revocation list, bind its gRPC listener, then serve with the background workers every
//! service runs (health probe, outbox relay, housekeeping, revocation watcher) plus its own
//! (stream consumers), and drain them all on shutdown.

use crate::config::CommonSettings;
use crate::event_signing::{EventSigner, EventVerifier};
use crate::outbox::{Outbox, OutboxRelay};
use crate::tokens::revocations::Watcher;
use crate::tokens::{ProcessTokens, StaffRevocations, TokenIssuer, TokenVerifier};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Who a service is: its name, the schema it owns and the domain stream it publishes to.
#[derive(Clone, Copy, Debug)]
pub struct ServiceIdentity {
    /// Service name in events, logs, traces and service tokens, e.g. `orders-svc`.
    pub name: &'static str,
    /// Schema the service owns.
    pub schema: &'static str,
    /// Domain of its stream (`platform::streams::ORDERS`, …).
    pub domain: &'static str,
}

impl ServiceIdentity {
    /// The outbox of this service.
    pub const fn outbox(&self) -> Outbox {
        Outbox::new(self.schema, self.name)
    }
}

/// A built service: migrated pool and bound listener.
pub struct ServiceBase {
    pub identity: ServiceIdentity,
    pub common: CommonSettings,
    pub pool: PgPool,
    tokens: ProcessTokens,
    /// Keeps the revocation list that the token verifier checks staff tokens against current.
    revocations: Watcher,
    listener: TcpListener,
    /// The plaintext health listener for Kubernetes' probes (`GRPC_HEALTH_ADDR`), if any.
    health_listener: Option<TcpListener>,
}

impl ServiceBase {
    /// Connects (creating the database when missing), migrates (the platform tables, then the
    /// service's own migrations: [`crate::db::migrate_service`]), reads the operator revocation
    /// list (staff tokens are refused until it has been read) and binds the gRPC listener.
    pub async fn build(
        identity: ServiceIdentity,
        common: &CommonSettings,
        migrator: &Migrator,
    ) -> anyhow::Result<Self> {
        let mut tokens = ProcessTokens::load(common, identity.name)?;
        let (verifier, revocations) =
            staff_revocations(&tokens.verifier, &common.redis_url, &common.stream_prefix).await?;
        tokens.verifier = verifier;
        if crate::streams::EVENT_DOMAINS.contains(&identity.domain) && tokens.issuer().is_err() {
            anyhow::bail!(
                "{name} signs the events it emits and needs a signing key: set TOKEN_SIGNING_KEY (a private Ed25519 JWK, `labctl tokens generate-key --issuer {name}`)",
                name = identity.name
            );
        }
        if common.dev_mode {
            crate::config::warn_development_mode(identity.name);
        }
        if let Some(tls) = &common.grpc_tls {
            tls.announce(identity.name);
        }
        let pool =
            crate::db::connect(common.require_database_url()?, common.database_max_connections).await?;
        crate::db::migrate_service(&pool, identity.schema, migrator).await?;
        let listener = TcpListener::bind(common.grpc_addr).await?;
        let health_listener = match common.grpc_health_addr {
            Some(address) => Some(TcpListener::bind(address).await?),
            None => None,
        };
        Ok(Self {
            identity,
            common: common.clone(),
            pool,
            tokens,
            revocations,
            listener,
            health_listener,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The bound plaintext health address (`GRPC_HEALTH_ADDR`), if any.
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health_listener
            .as_ref()
            .map(|listener| listener.local_addr().expect("a bound listener has an address"))
    }

    /// Verifies the principal tokens addressed to this service.
    pub fn token_verifier(&self) -> TokenVerifier {
        self.tokens.verifier.clone()
    }

    /// Mints this service's own tokens for calls to its peers; an error when it has no key.
    pub fn token_issuer(&self) -> anyhow::Result<TokenIssuer> {
        self.tokens.issuer()
    }

    /// Guards a gRPC service with its access table (`crate::access`).
    pub fn guarded<S>(&self, service: S, table: crate::access::AccessTable) -> crate::access::Guarded<S> {
        crate::access::guarded(service, self.token_verifier(), table).for_streams(&self.common.stream_prefix)
    }

    /// Verifies the signatures of the events this service consumes (its token trust set).
    pub fn event_verifier(&self) -> EventVerifier {
        EventVerifier::new(self.tokens.verifier.trusted_keys().clone())
    }

    /// The stream name of `domain` under this deployment's prefix.
    pub fn stream(&self, domain: &str) -> String {
        crate::streams::stream_name(&self.common.stream_prefix, domain)
    }

    /// Serves `add_services(router with health)` until `shutdown` fires, running the health
    /// probe for `grpc_services`, the outbox relay, housekeeping and `workers`; then drains.
    pub async fn serve(
        self,
        grpc_services: Vec<&'static str>,
        workers: Vec<JoinHandle<()>>,
        add_services: impl FnOnce(crate::grpc::MeshRouter) -> crate::grpc::MeshRouter,
        shutdown: CancellationToken,
    ) -> anyhow::Result<()> {
        let identity = self.identity;
        let redis = crate::db::redis_client(&self.common.redis_url)?;
        let (reporter, health) = tonic_health::server::health_reporter();
        let mut tasks = workers;
        // Reported while this service serves (dropped with it).
        let _metrics =
            crate::metrics::streams::watch_service(identity.name, identity.schema, self.pool.clone());
        tasks.push(crate::health::spawn_health_probe(
            reporter,
            grpc_services,
            Some(self.pool.clone()),
            redis,
            shutdown.clone(),
        ));
        let relay = OutboxRelay::new(
            self.pool.clone(),
            identity.outbox(),
            &self.common.redis_url,
            &self.common.stream_prefix,
            identity.domain,
            self.tokens
                .issuer()
                .ok()
                .map(|issuer| EventSigner::new(issuer.signing_key().clone())),
        );
        tasks.push(tokio::spawn(relay.run(shutdown.clone())));
        tasks.push(crate::housekeeping::spawn(
            self.pool.clone(),
            identity.schema,
            Some((
                crate::db::redis_client(&self.common.redis_url)?,
                self.stream(identity.domain),
            )),
            shutdown.clone(),
        ));

        let addr = self.local_addr();
        tasks.push(tokio::spawn(self.revocations.run(shutdown.clone())));
        if let Some(listener) = self.health_listener {
            // Kubernetes' readiness probe: the same health service, in plaintext, alone.
            let (health, shutdown) = (health.clone(), shutdown.clone());
            tasks.push(tokio::spawn(async move {
                if let Err(error) = crate::grpc::serve_health(health, listener, shutdown).await {
                    tracing::error!(%error, "the health listener stopped");
                }
            }));
        }
        let router = add_services(
            crate::grpc::server_builder()
                .tls(self.common.grpc_tls.clone())
                .reflection(self.common.grpc_reflection)
                .add_service(health),
        );
        tracing::info!(
            %addr,
            tls = self.common.grpc_tls.is_some(),
            "{} serving",
            identity.name
        );
        let served = crate::grpc::serve(router, self.listener, shutdown.clone()).await;
        shutdown.cancel();
        crate::shutdown::drain(identity.name, futures::future::join_all(tasks)).await;
        served
    }
}

/// `verifier` checking staff tokens against the operator revocation list of the deployment
/// `stream_prefix`, read once now (a Redis that does not answer is logged, and staff tokens
/// are refused until the returned watcher reads it), and the watcher that keeps it current.
async fn staff_revocations(
    verifier: &TokenVerifier,
    redis_url: &str,
    stream_prefix: &str,
) -> anyhow::Result<(TokenVerifier, Watcher)> {
    let list = StaffRevocations::new();
    let mut watcher = Watcher::new(crate::db::redis_client(redis_url)?, stream_prefix, list.clone());
    watcher.refresh().await;
    Ok((verifier.with_staff_revocations(list), watcher))
}

/// The life of one service process after its telemetry is installed: Prometheus metrics on the
/// internal port (`<metrics_prefix>_METRICS_ADDR`, default `metrics_default`; see
/// `crate::metrics::endpoint`), then `serve` (which reads its settings, builds and serves) until
/// SIGTERM or SIGINT cancels the token it is given. Every binary's `main`, and the test
/// harness that runs each service as its own process, come through here.
pub async fn run_process<F>(
    name: &str,
    metrics_prefix: &str,
    metrics_default: &str,
    serve: impl FnOnce(CancellationToken) -> F,
) -> anyhow::Result<()>
where
    F: Future<Output = anyhow::Result<()>>,
{
    let shutdown = crate::shutdown::signal_token();
    crate::metrics::MetricsEndpoint::start_from_env(metrics_prefix, metrics_default, &shutdown).await?;
    let outcome = serve(shutdown).await;
    if let Err(error) = &outcome {
        tracing::error!(%error, "{name} stopped with an error");
    } else {
        tracing::info!("{name} stopped");
    }
    outcome
}

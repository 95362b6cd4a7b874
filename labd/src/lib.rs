//! labd: the gateway, identity-svc and every domain service in one process — the local default and the test
//! sandbox. Each service keeps its own listener (fixed loopback ports, or free ports in tests) and
//! the gateway and orders-svc reach their peers over real gRPC, as in a deployment; since their
//! addresses are loopback listeners of this process, the connections run over in-memory pipes
//! instead of loopback TCP (`platform::grpc::in_process`; labctl and other processes use TCP).

#![forbid(unsafe_code)]

use platform::config::{CommonSettings, env_var, prefixed_or_common, socket_addr};
use std::net::SocketAddr;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Settings of every process of the mesh, adjustable before [`start`] (tests compress timings).
#[derive(Clone, Debug)]
pub struct MeshSettings {
    pub gateway: gateway::Settings,
    pub identity: identity_svc::Settings,
    pub catalog: catalog_svc::Settings,
    pub orders: orders_svc::Settings,
    pub payments: payments_svc::Settings,
    pub shipping: shipping_svc::Settings,
    pub results: results_svc::Settings,
    pub webhooks: webhooks_svc::Settings,
    /// The metrics endpoint of the whole process (`LABD_METRICS_ADDR`, default
    /// 127.0.0.1:9464; `off`: none). A sandbox serves it on a free port.
    pub metrics_addr: Option<SocketAddr>,
}

/// Database pool size per process, chosen so that a whole mesh fits PostgreSQL's default of
/// 100 connections twice over (two test sandboxes run at once on a 2-core machine).
const POOL_SIZES: [(&str, u32); 7] = [
    ("identity", 6),
    ("catalog", 6),
    ("orders", 14),
    ("payments", 8),
    ("shipping", 2),
    ("results", 2),
    ("webhooks", 2),
];

fn pool_size(name: &str) -> u32 {
    POOL_SIZES
        .iter()
        .find(|(process, _)| *process == name)
        .map(|(_, size)| *size)
        .unwrap_or(4)
}

/// The shared settings for one process, keeping that process's own token signing key (each
/// process signs with its own key, read from `<PREFIX>_TOKEN_SIGNING_KEY`); a process without a
/// database of its own (the gateway) gets none from the shared settings either.
fn common_for(name: &str, base: &CommonSettings, own: &CommonSettings, port: u16) -> CommonSettings {
    let mut common = base.clone();
    common.grpc_addr = SocketAddr::from(([127, 0, 0, 1], port));
    common.token_signing_key = own.token_signing_key.clone();
    if own.database_url.is_some() {
        common.database_max_connections = pool_size(name);
    } else {
        common.database_url = None;
        common.database_max_connections = 0;
    }
    common
}

impl MeshSettings {
    /// Reads labd's settings (`DATABASE_URL`, `REDIS_URL`, `LABD_HTTP_ADDR`,
    /// `LABD_GRPC_BASE_PORT`) and every service's own settings from the environment.
    pub fn from_env() -> anyhow::Result<Self> {
        let base = CommonSettings::from_env("LABD", "127.0.0.1:50050")?;
        let base_port: u16 = prefixed_or_common("LABD", "GRPC_BASE_PORT", "50050")
            .parse()
            .map_err(|_| anyhow::anyhow!("LABD_GRPC_BASE_PORT must be a port number"))?;
        let http = env_var("LABD_HTTP_ADDR").unwrap_or_else(|| "127.0.0.1:8080".to_owned());
        let metrics = env_var("LABD_METRICS_ADDR").unwrap_or_else(|| "127.0.0.1:9464".to_owned());
        let metrics_addr = if metrics.eq_ignore_ascii_case("off") {
            None
        } else {
            Some(socket_addr("LABD_METRICS_ADDR", &metrics)?)
        };
        let mut settings = Self {
            gateway: gateway::Settings::from_env()?,
            identity: identity_svc::Settings::from_env()?,
            catalog: catalog_svc::Settings::from_env()?,
            orders: orders_svc::Settings::from_env()?,
            payments: payments_svc::Settings::from_env()?,
            shipping: shipping_svc::Settings::from_env()?,
            results: results_svc::Settings::from_env()?,
            webhooks: webhooks_svc::Settings::from_env()?,
            metrics_addr,
        };
        settings.gateway.http_addr = socket_addr("LABD_HTTP_ADDR", &http)?;
        if env_var("PAYMENTS_SITE_URL").is_none() && env_var("SITE_URL").is_none() {
            // The pay page is served by this process's gateway.
            settings.payments.site_url = String::new();
        }
        if env_var("GATEWAY_SITE_URL").is_none() && env_var("SITE_URL").is_none() {
            // Links point at this process's own gateway.
            settings.gateway.site_url = String::new();
        }
        if env_var("RESULTS_SITE_URL").is_none() && env_var("SITE_URL").is_none() {
            // Raw-file download links point at this process's own gateway.
            settings.results.blobs.public_base_url = String::new();
        }
        settings.apply_common(&base, Some(base_port));
        Ok(settings)
    }

    /// Settings of a sandbox: the given database and Redis, a stream prefix of its own, free
    /// ports, development mode (published development keys and secrets), and a rate limit high
    /// enough for load tests.
    pub fn sandbox(database_url: &str, redis_url: &str, stream_prefix: &str) -> Self {
        let base = CommonSettings::local(database_url, redis_url, stream_prefix);
        let peers = gateway::PeerAddrs {
            identity: String::new(),
            catalog: String::new(),
            orders: String::new(),
            payments: String::new(),
            shipping: String::new(),
            webhooks: String::new(),
            results: String::new(),
        };
        let mut settings = Self {
            gateway: gateway::Settings::local(redis_url, stream_prefix, peers),
            identity: identity_svc::Settings::local(database_url, redis_url, stream_prefix),
            catalog: catalog_svc::Settings::local(database_url, redis_url, stream_prefix),
            orders: orders_svc::Settings::local(base.clone(), "", ""),
            payments: payments_svc::Settings::local(base.clone()),
            shipping: shipping_svc::Settings::local(base.clone()),
            results: results_svc::Settings::local(
                base.clone(),
                std::env::temp_dir().join(format!("lab-blobs-{stream_prefix}")),
            ),
            webhooks: webhooks_svc::Settings::local(base.clone()),
            metrics_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        };
        // The pay page is served by the sandbox's own gateway (its address is known at start).
        settings.payments.site_url = String::new();
        settings.results.blobs.public_base_url = String::new();
        // Keys without an envelope may order in tests (as in development mode); the spend tests
        // set envelopes, and the refusal is tested on its own.
        settings.payments.spend_without_envelope = payments_svc::domain::spend::WithoutEnvelope::Allow;
        settings.gateway.rate_limit.per_second = 10_000;
        settings.gateway.rate_limit.burst = 10_000;
        settings.apply_common(&base, None);
        settings
    }

    /// Gives every process the shared connection settings and its own port (`None`: free ports).
    fn apply_common(&mut self, base: &CommonSettings, base_port: Option<u16>) {
        let port = |offset: u16| base_port.map(|port| port + offset).unwrap_or(0);
        self.gateway.common = common_for("gateway", base, &self.gateway.common, port(0));
        self.catalog.common = common_for("catalog", base, &self.catalog.common, port(1));
        self.orders.common = common_for("orders", base, &self.orders.common, port(2));
        self.payments.common = common_for("payments", base, &self.payments.common, port(3));
        self.shipping.common = common_for("shipping", base, &self.shipping.common, port(4));
        self.results.common = common_for("results", base, &self.results.common, port(5));
        self.webhooks.common = common_for("webhooks", base, &self.webhooks.common, port(6));
        self.identity.common = common_for("identity", base, &self.identity.common, port(7));
    }

    /// orders-svc signs the label URL of an order's shipping block exactly as shipping-svc signs
    /// label URLs (key, public site, lifetime); [`start`] applies it to the final settings.
    pub fn share_label_links(&mut self) {
        self.orders.label_links = orders_svc::config::LabelLinkSettings {
            signing_key: self.shipping.signing_key.clone(),
            public_base_url: self.shipping.public_base_url.clone(),
            ttl: self.shipping.label_url_ttl,
        };
    }
}

/// A running mesh.
pub struct Mesh {
    /// REST address of the gateway.
    pub http_addr: SocketAddr,
    /// gRPC URIs, for labctl and tests: the gateway's internal operations API, identity-svc, …
    pub gateway_uri: String,
    pub identity_uri: String,
    pub catalog_uri: String,
    pub orders_uri: String,
    pub payments_uri: String,
    pub shipping_uri: String,
    pub results_uri: String,
    pub webhooks_uri: String,
    /// Where the process's Prometheus metrics are served (`GET /metrics`), if anywhere.
    pub metrics_addr: Option<SocketAddr>,
    shutdown: CancellationToken,
    tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
}

fn uri(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// Builds (migrating every schema) and starts every process; returns once all listen.
pub async fn start(mut settings: MeshSettings) -> anyhow::Result<Mesh> {
    settings.share_label_links();
    let shutdown = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let metrics_addr = match settings.metrics_addr {
        Some(addr) => {
            let endpoint = platform::metrics::MetricsEndpoint::bind(addr).await?;
            let bound = endpoint.local_addr();
            let handle = endpoint.spawn(shutdown.clone());
            tasks.spawn(async move { ("metrics", handle.await.map_err(anyhow::Error::from)) });
            Some(bound)
        }
        None => None,
    };

    let identity = identity_svc::Application::build(settings.identity).await?;
    let identity_uri = uri(identity.local_addr());
    let catalog = catalog_svc::Application::build(settings.catalog).await?;
    // shipping-svc reads quotes at catalog-svc and customers at identity-svc.
    settings.shipping.catalog_addr = uri(catalog.local_addr());
    settings.shipping.identity_addr = identity_uri.clone();
    let site_url = settings.payments.site_url.clone();
    // Download links point at this process's own gateway unless a site URL is configured.
    let results_site_unset = settings.results.blobs.public_base_url.is_empty();
    let mut payments = payments_svc::Application::build(settings.payments).await?;
    // shipping-svc opens door pickups' hosted payments at payments-svc.
    settings.shipping.payments_addr = uri(payments.local_addr());
    let shipping = shipping_svc::Application::build(settings.shipping).await?;
    let mut results = results_svc::Application::build(settings.results).await?;
    let webhooks = webhooks_svc::Application::build(settings.webhooks).await?;
    let (catalog_uri, payments_uri) = (uri(catalog.local_addr()), uri(payments.local_addr()));
    let (shipping_uri, results_uri, webhooks_uri) = (
        uri(shipping.local_addr()),
        uri(results.local_addr()),
        uri(webhooks.local_addr()),
    );

    settings.orders.catalog_addr = catalog_uri.clone();
    settings.orders.payments_addr = payments_uri.clone();
    // orders-svc asks shipping-svc for a ship-first order's label while placing it.
    settings.orders.shipping_addr = shipping_uri.clone();
    let orders = orders_svc::Application::build(settings.orders).await?;
    let orders_uri = uri(orders.local_addr());

    settings.gateway.peers = gateway::PeerAddrs {
        identity: identity_uri.clone(),
        catalog: catalog_uri.clone(),
        orders: orders_uri.clone(),
        payments: payments_uri.clone(),
        shipping: shipping_uri.clone(),
        webhooks: webhooks_uri.clone(),
        results: results_uri.clone(),
    };
    let gateway = gateway::Application::build(settings.gateway).await?;
    let http_addr = gateway.http_addr();
    let gateway_uri = uri(gateway.grpc_addr());
    if site_url.is_empty() {
        payments.set_site_url(&uri(http_addr));
    }
    if results_site_unset {
        results.set_site_url(&uri(http_addr));
    }

    let token = shutdown.clone();
    tasks.spawn(async move { ("identity-svc", identity.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("catalog-svc", catalog.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("payments-svc", payments.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("shipping-svc", shipping.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("results-svc", results.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("webhooks-svc", webhooks.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("orders-svc", orders.run_until_stopped(token).await) });
    let token = shutdown.clone();
    tasks.spawn(async move { ("gateway", gateway.run_until_stopped(token).await) });

    Ok(Mesh {
        http_addr,
        gateway_uri,
        identity_uri,
        catalog_uri,
        orders_uri,
        payments_uri,
        shipping_uri,
        results_uri,
        webhooks_uri,
        metrics_addr,
        shutdown,
        tasks,
    })
}

impl Mesh {
    /// Stops every process and waits for them to drain.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        while let Some(joined) = self.tasks.join_next().await {
            match joined {
                Ok((name, Err(error))) => tracing::error!(process = name, %error, "stopped with an error"),
                Ok((name, Ok(()))) => tracing::debug!(process = name, "stopped"),
                Err(error) => tracing::error!(%error, "a process panicked"),
            }
        }
    }

    /// The labctl command line (`labctl --json` with this mesh's addresses and the operator
    /// `credential`) for `args`: what the tests and the benchmark run as staff.
    pub fn labctl_argv(&self, credential: &str, args: &[&str]) -> Vec<String> {
        let mut argv: Vec<String> = [
            "labctl",
            "--json",
            "--gateway-addr",
            &self.gateway_uri,
            "--identity-addr",
            &self.identity_uri,
            "--catalog-addr",
            &self.catalog_uri,
            "--payments-addr",
            &self.payments_uri,
            "--shipping-addr",
            &self.shipping_uri,
            "--orders-addr",
            &self.orders_uri,
            "--results-addr",
            &self.results_uri,
            "--webhooks-addr",
            &self.webhooks_uri,
            "--credential",
            credential,
        ]
        .map(str::to_owned)
        .to_vec();
        argv.extend(args.iter().map(|arg| (*arg).to_owned()));
        argv
    }

    /// A token that stops the mesh when cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}

//! Settings of orders-svc: the common settings (prefix `ORDERS`), the addresses of the peers it
//! calls (and how long an order waits for its label), the timing of its idempotency store and stream consumer (tests compress them), and
//! how it signs the label URL of an order's shipping block.

use platform::config::{CommonSettings, file_or_value, prefixed_or_common};
use platform::production::{MIN_SECRET_CHARS, Requirements};
use secrecy::SecretString;
use std::time::Duration;

/// Environment prefix of this service.
pub const PREFIX: &str = "ORDERS";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50052";
/// Default address of catalog-svc.
pub const DEFAULT_CATALOG_ADDR: &str = "http://127.0.0.1:50051";
/// Default address of payments-svc.
pub const DEFAULT_PAYMENTS_ADDR: &str = "http://127.0.0.1:50053";
/// Default address of shipping-svc.
pub const DEFAULT_SHIPPING_ADDR: &str = "http://127.0.0.1:50054";
/// Default of how long `POST /orders` waits for a ship-first order's label (`ORDERS_LABEL_WAIT_MS`).
pub const DEFAULT_LABEL_WAIT_MS: u64 = 3_000;

/// How the payments-event consumer reads.
#[derive(Clone, Debug)]
pub struct ConsumerTiming {
    /// Pending entries idle this long are claimed from a consumer presumed dead.
    pub reclaim_idle: Duration,
    /// How long one blocking read waits.
    pub block: Duration,
    /// Acknowledge after handling; only tests turn this off (a consumer dying before `XACK`).
    pub acknowledge: bool,
}

/// Lease and wait of the idempotency store.
#[derive(Clone, Debug)]
pub struct IdempotencyTiming {
    /// How long a claim protects a running request before a retry may take it over.
    pub lease: Duration,
    /// How long a concurrent duplicate waits for the first request before answering 409.
    pub wait: Duration,
}

/// Settings of orders-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    /// gRPC address of catalog-svc (`CATALOG_SVC_ADDR`).
    pub catalog_addr: String,
    /// gRPC address of payments-svc (`PAYMENTS_SVC_ADDR`).
    pub payments_addr: String,
    /// gRPC address of shipping-svc (`SHIPPING_SVC_ADDR`).
    pub shipping_addr: String,
    /// How long placing a card or bank order waits for shipping-svc to buy its label before
    /// answering with the pending shipping block (`ORDERS_LABEL_WAIT_MS`, default 3000; 0 never
    /// waits).
    pub label_wait: Duration,
    pub consumer: ConsumerTiming,
    pub idempotency: IdempotencyTiming,
    pub label_links: LabelLinkSettings,
}

/// How orders-svc signs the label URL of an order's `shipping` block: with shipping-svc's key
/// (`ORDERS_LABEL_SIGNING_KEY`, else `SHIPPING_SIGNING_KEY`; `@path` reads a file), for the
/// same public site (`ORDERS_SITE_URL`, else `SITE_URL`), lasting as long.
#[derive(Clone, Debug)]
pub struct LabelLinkSettings {
    /// `None`: the development key, only in development mode.
    pub signing_key: Option<SecretString>,
    pub public_base_url: String,
    pub ttl: Duration,
}

impl LabelLinkSettings {
    fn local() -> Self {
        Self {
            signing_key: None,
            public_base_url: "http://127.0.0.1:8080".to_owned(),
            ttl: Duration::from_secs(3600),
        }
    }

    fn from_env(need: &mut Requirements) -> anyhow::Result<Self> {
        let mut settings = Self::local();
        let (variable, key) = match file_or_value(PREFIX, "LABEL_SIGNING_KEY")? {
            Some(key) => (format!("{PREFIX}_LABEL_SIGNING_KEY"), Some(key)),
            None => (
                "SHIPPING_SIGNING_KEY".to_owned(),
                file_or_value("SHIPPING", "SIGNING_KEY")?,
            ),
        };
        settings.signing_key = key.map(Into::into);
        need.refuse_if(settings.signing_key.is_none(), || {
            format!("{PREFIX}_LABEL_SIGNING_KEY (or SHIPPING_SIGNING_KEY) is not set: shipping-svc's key of signed label URLs")
        });
        need.secret(&variable, settings.signing_key.as_ref(), Some(MIN_SECRET_CHARS));
        settings.public_base_url = need.site_url(PREFIX);
        Ok(settings)
    }
}

impl Settings {
    /// Reads settings from `ORDERS_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        let common = CommonSettings::from_env(PREFIX, DEFAULT_GRPC_ADDR)?;
        let mut need = Requirements::new("orders-svc", common.dev_mode);
        let label_links = LabelLinkSettings::from_env(&mut need)?;
        need.finish()?;
        Ok(Self {
            common,
            catalog_addr: prefixed_or_common(PREFIX, "CATALOG_SVC_ADDR", DEFAULT_CATALOG_ADDR),
            payments_addr: prefixed_or_common(PREFIX, "PAYMENTS_SVC_ADDR", DEFAULT_PAYMENTS_ADDR),
            shipping_addr: prefixed_or_common(PREFIX, "SHIPPING_SVC_ADDR", DEFAULT_SHIPPING_ADDR),
            label_wait: millis("LABEL_WAIT_MS", DEFAULT_LABEL_WAIT_MS)?,
            consumer: ConsumerTiming {
                reclaim_idle: millis("CONSUMER_RECLAIM_IDLE_MS", 30_000)?,
                block: millis("CONSUMER_BLOCK_MS", 2_000)?,
                acknowledge: true,
            },
            idempotency: IdempotencyTiming {
                lease: millis("IDEMPOTENCY_LEASE_MS", 30_000)?,
                wait: millis("IDEMPOTENCY_WAIT_MS", 10_000)?,
            },
            label_links,
        })
    }

    /// Settings on loopback with a free port and default timing, for tests and labd.
    pub fn local(common: CommonSettings, catalog_addr: &str, payments_addr: &str) -> Self {
        Self {
            common,
            catalog_addr: catalog_addr.to_owned(),
            payments_addr: payments_addr.to_owned(),
            shipping_addr: DEFAULT_SHIPPING_ADDR.to_owned(),
            label_wait: Duration::from_millis(DEFAULT_LABEL_WAIT_MS),
            consumer: ConsumerTiming {
                reclaim_idle: Duration::from_secs(30),
                block: Duration::from_secs(2),
                acknowledge: true,
            },
            idempotency: IdempotencyTiming {
                lease: Duration::from_secs(30),
                wait: Duration::from_secs(10),
            },
            label_links: LabelLinkSettings::local(),
        }
    }
}

/// Reads `ORDERS_<name>` as milliseconds.
fn millis(name: &str, default: u64) -> anyhow::Result<Duration> {
    let value = prefixed_or_common(PREFIX, name, &default.to_string());
    let millis = value
        .parse::<u64>()
        .map_err(|_| anyhow::anyhow!("{PREFIX}_{name}={value:?} is not a number of milliseconds"))?;
    Ok(Duration::from_millis(millis))
}

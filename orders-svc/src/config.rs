//! Settings of orders-svc: the common settings (prefix `ORDERS`), the addresses of the peers it
//! calls, and the timing of its idempotency store and stream consumer (tests compress them).

use platform::config::{CommonSettings, prefixed_or_common};
use std::time::Duration;

/// Environment prefix of this service.
pub const PREFIX: &str = "ORDERS";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50052";
/// Default address of catalog-svc.
pub const DEFAULT_CATALOG_ADDR: &str = "http://127.0.0.1:50051";
/// Default address of payments-svc.
pub const DEFAULT_PAYMENTS_ADDR: &str = "http://127.0.0.1:50053";

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
    pub consumer: ConsumerTiming,
    pub idempotency: IdempotencyTiming,
}

impl Settings {
    /// Reads settings from `ORDERS_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            common: CommonSettings::from_env(PREFIX, DEFAULT_GRPC_ADDR)?,
            catalog_addr: prefixed_or_common(PREFIX, "CATALOG_SVC_ADDR", DEFAULT_CATALOG_ADDR),
            payments_addr: prefixed_or_common(PREFIX, "PAYMENTS_SVC_ADDR", DEFAULT_PAYMENTS_ADDR),
            consumer: ConsumerTiming {
                reclaim_idle: millis("CONSUMER_RECLAIM_IDLE_MS", 30_000)?,
                block: millis("CONSUMER_BLOCK_MS", 2_000)?,
                acknowledge: true,
            },
            idempotency: IdempotencyTiming {
                lease: millis("IDEMPOTENCY_LEASE_MS", 30_000)?,
                wait: millis("IDEMPOTENCY_WAIT_MS", 10_000)?,
            },
        })
    }

    /// Settings on loopback with a free port and default timing, for tests and labd.
    pub fn local(common: CommonSettings, catalog_addr: &str, payments_addr: &str) -> Self {
        Self {
            common,
            catalog_addr: catalog_addr.to_owned(),
            payments_addr: payments_addr.to_owned(),
            consumer: ConsumerTiming {
                reclaim_idle: Duration::from_secs(30),
                block: Duration::from_secs(2),
                acknowledge: true,
            },
            idempotency: IdempotencyTiming {
                lease: Duration::from_secs(30),
                wait: Duration::from_secs(10),
            },
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

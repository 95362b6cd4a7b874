//! Settings of catalog-svc: the common settings under the `CATALOG` prefix plus the quote
//! lifetime, the orders-stream consumer timing and an optional seed document.

use platform::config::{CommonSettings, env_var};
use std::path::PathBuf;
use std::time::Duration;

/// Environment prefix of this service.
pub const PREFIX: &str = "CATALOG";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50051";
/// Default quote lifetime (the spec's "normally 15 minutes").
pub const DEFAULT_QUOTE_TTL: Duration = Duration::from_secs(900);

/// Settings of catalog-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    /// How long a quote stays usable (`CATALOG_QUOTE_TTL_SECONDS`).
    pub quote_ttl: Duration,
    /// Pending orders-stream entries idle this long are reclaimed from a dead consumer
    /// (`CATALOG_CONSUMER_RECLAIM_IDLE_MS`); tests compress it.
    pub consumer_reclaim_idle: Duration,
    /// How long one stream read blocks (`CATALOG_CONSUMER_BLOCK_MS`).
    pub consumer_block: Duration,
    /// A catalog document imported at start when no revision exists yet (`CATALOG_SEED_FILE`).
    pub seed_file: Option<PathBuf>,
}

fn duration_setting(name: &str, default: Duration, unit_ms: u64) -> anyhow::Result<Duration> {
    match env_var(name) {
        None => Ok(default),
        Some(value) => {
            let count: u64 = value
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("setting {name}={value:?} must be a non-negative integer"))?;
            Ok(Duration::from_millis(count.saturating_mul(unit_ms)))
        }
    }
}

impl Settings {
    /// Reads settings from `CATALOG_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            common: CommonSettings::from_env(PREFIX, DEFAULT_GRPC_ADDR)?,
            quote_ttl: duration_setting("CATALOG_QUOTE_TTL_SECONDS", DEFAULT_QUOTE_TTL, 1000)?,
            consumer_reclaim_idle: duration_setting(
                "CATALOG_CONSUMER_RECLAIM_IDLE_MS",
                Duration::from_secs(30),
                1,
            )?,
            consumer_block: duration_setting("CATALOG_CONSUMER_BLOCK_MS", Duration::from_secs(2), 1)?,
            seed_file: env_var("CATALOG_SEED_FILE").map(PathBuf::from),
        })
    }

    /// Settings on loopback with a free port (tests and labd), with the default timings.
    pub fn local(database_url: &str, redis_url: &str, stream_prefix: &str) -> Self {
        Self {
            common: CommonSettings::local(database_url, redis_url, stream_prefix),
            quote_ttl: DEFAULT_QUOTE_TTL,
            consumer_reclaim_idle: Duration::from_secs(30),
            consumer_block: Duration::from_secs(2),
            seed_file: None,
        }
    }
}

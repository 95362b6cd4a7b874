//! Settings of the gateway: its two listeners, the API-key pepper, the peer services, the
//! per-key rate limit and the key cache, on top of the common settings of every process.
//!
//! Environment variables (defaults in brackets): `GATEWAY_HTTP_ADDR` [127.0.0.1:8080],
//! `GATEWAY_GRPC_ADDR` [127.0.0.1:50050], `LAB_API_KEY_PEPPER` [a development value],
//! `CATALOG_SVC_ADDR` [http://127.0.0.1:50051], `ORDERS_SVC_ADDR` [http://127.0.0.1:50052],
//! `PAYMENTS_SVC_ADDR` [http://127.0.0.1:50053], `WEBHOOKS_SVC_ADDR` [http://127.0.0.1:50056],
//! `GATEWAY_RATE_LIMIT_PER_SECOND` [20], `GATEWAY_RATE_LIMIT_BURST` [40],
//! `GATEWAY_KEY_CACHE_TTL_MS` [5000, at most 5000], plus the common `DATABASE_URL`,
//! `REDIS_URL`, `STREAM_PREFIX`, `LAB_TOKEN_TRUSTED_KEYS`, `GATEWAY_TOKEN_SIGNING_KEY`, `LAB_DEV_MODE`,
//! `DATABASE_MAX_CONNECTIONS` (each also readable as `GATEWAY_<NAME>`).

use platform::config::{CommonSettings, prefixed_or_common, socket_addr};
use secrecy::SecretString;
use std::net::SocketAddr;
use std::time::Duration;

/// Environment prefix of the gateway's own settings.
pub const PREFIX: &str = "GATEWAY";
/// Development default of the pepper of API-key verifiers; production sets `LAB_API_KEY_PEPPER`.
pub const DEV_API_KEY_PEPPER: &str = "dev-api-key-pepper-change-me";
/// Longest time a verified key record is trusted without a database read, so that a
/// revocation takes effect within seconds.
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(5);

/// gRPC addresses (URIs) of the domain services the gateway calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAddrs {
    pub catalog: String,
    pub orders: String,
    pub payments: String,
    pub webhooks: String,
}

impl PeerAddrs {
    /// Reads `CATALOG_SVC_ADDR`, `ORDERS_SVC_ADDR`, `PAYMENTS_SVC_ADDR` and `WEBHOOKS_SVC_ADDR`.
    pub fn from_env() -> Self {
        Self {
            catalog: prefixed_or_common(PREFIX, "CATALOG_SVC_ADDR", "http://127.0.0.1:50051"),
            orders: prefixed_or_common(PREFIX, "ORDERS_SVC_ADDR", "http://127.0.0.1:50052"),
            payments: prefixed_or_common(PREFIX, "PAYMENTS_SVC_ADDR", "http://127.0.0.1:50053"),
            webhooks: prefixed_or_common(PREFIX, "WEBHOOKS_SVC_ADDR", "http://127.0.0.1:50056"),
        }
    }
}

/// Per-key token bucket: `per_second` tokens refill each second, up to `burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitSettings {
    pub per_second: u32,
    pub burst: u32,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        Self {
            per_second: 20,
            burst: 40,
        }
    }
}

/// Settings of the gateway process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Database, Redis, token secrets; `common.grpc_addr` is the internal identity gRPC listener.
    pub common: CommonSettings,
    /// REST listener; port 0 picks a free port (tests).
    pub http_addr: SocketAddr,
    /// Pepper of the API-key verifiers (HMAC-SHA256 key).
    pub api_key_pepper: SecretString,
    pub peers: PeerAddrs,
    pub rate_limit: RateLimitSettings,
    /// How long a verified key record is cached (at most [`MAX_KEY_CACHE_TTL`]).
    pub key_cache_ttl: Duration,
    /// How long `/api/ready` waits for each peer's health answer.
    pub peer_health_timeout: Duration,
}

impl Settings {
    /// Reads the settings from the environment (see the module documentation).
    pub fn from_env() -> anyhow::Result<Self> {
        let common = CommonSettings::from_env(PREFIX, "127.0.0.1:50050")?;
        let http_addr = prefixed_or_common(PREFIX, "HTTP_ADDR", "127.0.0.1:8080");
        let per_second = number("RATE_LIMIT_PER_SECOND", 20)?;
        let burst = number("RATE_LIMIT_BURST", 40)?;
        let cache_ms = number("KEY_CACHE_TTL_MS", 5_000)?;
        Ok(Self {
            common,
            http_addr: socket_addr(&format!("{PREFIX}_HTTP_ADDR"), &http_addr)?,
            api_key_pepper: prefixed_or_common(PREFIX, "LAB_API_KEY_PEPPER", DEV_API_KEY_PEPPER).into(),
            peers: PeerAddrs::from_env(),
            rate_limit: RateLimitSettings {
                per_second: per_second.max(1),
                burst: burst.max(1),
            },
            key_cache_ttl: Duration::from_millis(u64::from(cache_ms)).min(MAX_KEY_CACHE_TTL),
            peer_health_timeout: Duration::from_secs(1),
        })
    }

    /// Settings for a gateway on loopback with free ports, for tests and labd: development
    /// secrets and pepper, default rate limit, the given peers.
    pub fn local(database_url: &str, redis_url: &str, stream_prefix: &str, peers: PeerAddrs) -> Self {
        Self {
            common: CommonSettings::local(database_url, redis_url, stream_prefix),
            http_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            api_key_pepper: DEV_API_KEY_PEPPER.to_owned().into(),
            peers,
            rate_limit: RateLimitSettings::default(),
            key_cache_ttl: MAX_KEY_CACHE_TTL,
            peer_health_timeout: Duration::from_secs(1),
        }
    }
}

fn number(name: &str, default: u32) -> anyhow::Result<u32> {
    let raw = prefixed_or_common(PREFIX, name, &default.to_string());
    raw.trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("setting {PREFIX}_{name}={raw:?} is not a non-negative integer"))
}

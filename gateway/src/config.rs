//! Settings of the gateway: its two listeners, the peer services (identity-svc verifies API
//! keys), the front door (limits, timeout, concurrency, drain) and the key cache, on top of the
//! common settings of every process (the gateway has no database: `DATABASE_URL` and
//! `DATABASE_MAX_CONNECTIONS` are not read).
//!
//! Environment variables (defaults in brackets): `GATEWAY_HTTP_ADDR` [127.0.0.1:8080],
//! `GATEWAY_GRPC_ADDR` [127.0.0.1:50050], `IDENTITY_SVC_ADDR` [http://127.0.0.1:50057],
//! `CATALOG_SVC_ADDR` [http://127.0.0.1:50051], `ORDERS_SVC_ADDR` [http://127.0.0.1:50052],
//! `PAYMENTS_SVC_ADDR` [http://127.0.0.1:50053], `WEBHOOKS_SVC_ADDR` [http://127.0.0.1:50056],
//! `GATEWAY_KEY_CACHE_TTL_MS` [5000, at most 5000], the front-door settings of
//! [`FrontDoorSettings::from_env`], `GATEWAY_MCP_ALLOWED_ORIGINS` and `GATEWAY_MCP_ALLOWED_HOSTS`
//! ([`McpSettings`]), plus the common `REDIS_URL`, `STREAM_PREFIX`, `LAB_TOKEN_TRUSTED_KEYS`,
//! `GATEWAY_TOKEN_SIGNING_KEY`, `LAB_DEV_MODE` (each also readable as `GATEWAY_<NAME>`).

use crate::client_addr::{NO_PROXIES, TrustedProxies};
use platform::config::{CommonSettings, env_var, prefixed_or_common, socket_addr};
use platform::production::Requirements;
use std::net::SocketAddr;
use std::time::Duration;

/// Environment prefix of the gateway's own settings.
pub const PREFIX: &str = "GATEWAY";
/// Longest time a verified key record is trusted without asking identity-svc again: the backstop
/// of revocation when the Redis revocation channel is down (it normally bites within a second).
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(5);

/// gRPC addresses (URIs) of the domain services the gateway calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAddrs {
    /// identity-svc, which verifies API keys (`IDENTITY_SVC_ADDR`).
    pub identity: String,
    pub catalog: String,
    pub orders: String,
    pub payments: String,
    pub shipping: String,
    pub webhooks: String,
    pub results: String,
}

impl PeerAddrs {
    /// Reads `CATALOG_SVC_ADDR`, `ORDERS_SVC_ADDR`, `PAYMENTS_SVC_ADDR`, `SHIPPING_SVC_ADDR`,
    /// `WEBHOOKS_SVC_ADDR` and `RESULTS_SVC_ADDR`.
    pub fn from_env() -> Self {
        Self {
            identity: prefixed_or_common(PREFIX, "IDENTITY_SVC_ADDR", "http://127.0.0.1:50057"),
            catalog: prefixed_or_common(PREFIX, "CATALOG_SVC_ADDR", "http://127.0.0.1:50051"),
            orders: prefixed_or_common(PREFIX, "ORDERS_SVC_ADDR", "http://127.0.0.1:50052"),
            payments: prefixed_or_common(PREFIX, "PAYMENTS_SVC_ADDR", "http://127.0.0.1:50053"),
            shipping: prefixed_or_common(PREFIX, "SHIPPING_SVC_ADDR", "http://127.0.0.1:50054"),
            webhooks: prefixed_or_common(PREFIX, "WEBHOOKS_SVC_ADDR", "http://127.0.0.1:50056"),
            results: prefixed_or_common(PREFIX, "RESULTS_SVC_ADDR", "http://127.0.0.1:50055"),
        }
    }
}

/// A GCRA limit: `per_second` requests a second on average, up to `burst` at once. Clients see
/// it as the quota policy `q=burst` per `w=burst/per_second` seconds (rounded up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitSettings {
    pub per_second: u32,
    pub burst: u32,
}

impl Default for RateLimitSettings {
    /// The per-key default: 20 requests a second, bursts of 40.
    fn default() -> Self {
        Self {
            per_second: 20,
            burst: 40,
        }
    }
}

/// What protects the gateway before and around authentication.
#[derive(Clone, Debug)]
pub struct FrontDoorSettings {
    /// Every request of one client address (per replica), before anything else.
    pub per_address: RateLimitSettings,
    /// Key-store lookups (key-cache misses) caused by one client address (per replica).
    pub key_lookups_per_address: RateLimitSettings,
    /// Accessions looked up by public verification, all clients and replicas together.
    pub verify_lookups: RateLimitSettings,
    /// Accessions looked up by public verification from one client address (per replica).
    pub verify_lookups_per_address: RateLimitSettings,
    /// Proxies whose `X-Forwarded-For` names the client; empty: the peer address is the client.
    pub trusted_proxies: TrustedProxies,
    /// Unknown public ids remembered (least recently used first out).
    pub negative_cache_capacity: usize,
    /// Known key records remembered (least recently used first out).
    pub key_cache_capacity: usize,
    /// Longest time a request may take before the gateway answers 504 `timeout`.
    pub request_timeout: Duration,
    /// Requests in flight at once; beyond it the gateway answers 503 `overloaded`.
    pub max_concurrent_requests: usize,
    /// How long in-flight requests may finish after the shutdown signal.
    pub drain_grace: Duration,
}

impl Default for FrontDoorSettings {
    fn default() -> Self {
        Self {
            per_address: RateLimitSettings {
                per_second: 300,
                burst: 600,
            },
            key_lookups_per_address: RateLimitSettings {
                per_second: 2,
                burst: 20,
            },
            verify_lookups: RateLimitSettings {
                per_second: 20,
                burst: 200,
            },
            verify_lookups_per_address: RateLimitSettings {
                per_second: 2,
                burst: 100,
            },
            trusted_proxies: TrustedProxies::default(),
            negative_cache_capacity: 10_000,
            key_cache_capacity: 100_000,
            request_timeout: Duration::from_secs(10),
            max_concurrent_requests: 1_024,
            drain_grace: platform::shutdown::GRACE_PERIOD,
        }
    }
}

impl FrontDoorSettings {
    /// Reads `GATEWAY_ADDRESS_RATE_LIMIT_PER_SECOND` [300], `GATEWAY_ADDRESS_RATE_LIMIT_BURST`
    /// [600], `GATEWAY_KEY_LOOKUPS_PER_SECOND` [2], `GATEWAY_KEY_LOOKUPS_BURST` [20],
    /// `GATEWAY_VERIFY_LOOKUPS_PER_SECOND` [20], `GATEWAY_VERIFY_LOOKUPS_BURST` [200],
    /// `GATEWAY_VERIFY_LOOKUPS_PER_ADDRESS_PER_SECOND` [2],
    /// `GATEWAY_VERIFY_LOOKUPS_PER_ADDRESS_BURST` [100],
    /// `GATEWAY_TRUSTED_PROXIES` [none; comma-separated addresses or CIDR ranges],
    /// `GATEWAY_NEGATIVE_KEY_CACHE_CAPACITY` [10000], `GATEWAY_KEY_CACHE_CAPACITY` [100000],
    /// `GATEWAY_REQUEST_TIMEOUT_MS` [10000], `GATEWAY_MAX_CONCURRENT_REQUESTS` [1024] and
    /// `GATEWAY_DRAIN_GRACE_MS` [10000].
    pub fn from_env() -> anyhow::Result<Self> {
        let defaults = Self::default();
        let limit = |name: &str, default: RateLimitSettings| -> anyhow::Result<RateLimitSettings> {
            Ok(RateLimitSettings {
                per_second: number(&format!("{name}_PER_SECOND"), default.per_second)?.max(1),
                burst: number(&format!("{name}_BURST"), default.burst)?.max(1),
            })
        };
        let millis = |name: &str, default: Duration| -> anyhow::Result<Duration> {
            let default = u32::try_from(default.as_millis()).unwrap_or(u32::MAX);
            Ok(Duration::from_millis(u64::from(number(name, default)?.max(1))))
        };
        let count = |name: &str, default: usize| -> anyhow::Result<usize> {
            let default = u32::try_from(default).unwrap_or(u32::MAX);
            Ok(usize::try_from(number(name, default)?.max(1)).unwrap_or(usize::MAX))
        };
        let proxies = prefixed_or_common(PREFIX, "TRUSTED_PROXIES", "");
        Ok(Self {
            per_address: limit("ADDRESS_RATE_LIMIT", defaults.per_address)?,
            key_lookups_per_address: limit("KEY_LOOKUPS", defaults.key_lookups_per_address)?,
            verify_lookups: limit("VERIFY_LOOKUPS", defaults.verify_lookups)?,
            verify_lookups_per_address: limit(
                "VERIFY_LOOKUPS_PER_ADDRESS",
                defaults.verify_lookups_per_address,
            )?,
            trusted_proxies: TrustedProxies::parse(&proxies)
                .map_err(|error| anyhow::anyhow!("setting {PREFIX}_TRUSTED_PROXIES: {error}"))?,
            negative_cache_capacity: count("NEGATIVE_KEY_CACHE_CAPACITY", defaults.negative_cache_capacity)?,
            key_cache_capacity: count("KEY_CACHE_CAPACITY", defaults.key_cache_capacity)?,
            request_timeout: millis("REQUEST_TIMEOUT_MS", defaults.request_timeout)?,
            max_concurrent_requests: count("MAX_CONCURRENT_REQUESTS", defaults.max_concurrent_requests)?,
            drain_grace: millis("DRAIN_GRACE_MS", defaults.drain_grace)?,
        })
    }

    /// Limits for tests and labd, where every client is 127.0.0.1: per-address limits and the
    /// verification ceiling high enough not to matter; everything else as in production.
    pub fn local() -> Self {
        Self {
            per_address: RateLimitSettings {
                per_second: 100_000,
                burst: 100_000,
            },
            key_lookups_per_address: RateLimitSettings {
                per_second: 1_000,
                burst: 1_000,
            },
            verify_lookups: RateLimitSettings {
                per_second: 100_000,
                burst: 100_000,
            },
            verify_lookups_per_address: RateLimitSettings {
                per_second: 100_000,
                burst: 100_000,
            },
            ..Self::default()
        }
    }
}

/// Settings of the gateway process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Redis, token secrets; `common.grpc_addr` is the internal operations gRPC listener.
    pub common: CommonSettings,
    /// REST listener; port 0 picks a free port (tests).
    pub http_addr: SocketAddr,
    pub peers: PeerAddrs,
    /// Per-key limit, shared by every replica through Redis.
    pub rate_limit: RateLimitSettings,
    pub front_door: FrontDoorSettings,
    /// How long a verified key record is cached (at most [`MAX_KEY_CACHE_TTL`]).
    pub key_cache_ttl: Duration,
    /// How long the internal peer-health check waits for each peer's answer.
    pub peer_health_timeout: Duration,
    /// Allowed origins and hosts of the MCP endpoint.
    pub mcp: McpSettings,
    /// The public site root absolute links are built from (`SITE_URL`); empty: this gateway's
    /// own HTTP address once bound (tests and labd).
    pub site_url: String,
    /// The laboratory named on the pay page (`LAB_*`, platform::lab).
    pub lab: platform::lab::LabIdentity,
}

impl Settings {
    /// Reads the settings from the environment (see the module documentation); the per-key
    /// limit from `GATEWAY_RATE_LIMIT_PER_SECOND` [20] and `GATEWAY_RATE_LIMIT_BURST` [40].
    ///
    /// Outside development mode the site URL, the MCP allowed hosts and the trusted proxies
    /// (`none` when clients connect directly) must be set explicitly ([`platform::production`]).
    pub fn from_env() -> anyhow::Result<Self> {
        let common = CommonSettings::from_env_without_database(PREFIX, "127.0.0.1:50050")?;
        let mut need = Requirements::new("gateway", common.dev_mode);
        let http_addr = prefixed_or_common(PREFIX, "HTTP_ADDR", "127.0.0.1:8080");
        let per_second = number("RATE_LIMIT_PER_SECOND", 20)?;
        let burst = number("RATE_LIMIT_BURST", 40)?;
        let cache_ms = number("KEY_CACHE_TTL_MS", 5_000)?;
        let site_url = need.site_url(PREFIX);
        need.refuse_if(
            env_var(&format!("{PREFIX}_TRUSTED_PROXIES")).is_none() && env_var("TRUSTED_PROXIES").is_none(),
            || {
                format!(
                    "{PREFIX}_TRUSTED_PROXIES is not set: the proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client, or `{NO_PROXIES}`"
                )
            },
        );
        let mcp = McpSettings::from_env(&site_url);
        need.refuse_if(mcp.allowed_hosts.is_empty(), || {
            format!("{PREFIX}_MCP_ALLOWED_HOSTS is not set: the host names the MCP endpoint answers to (DNS rebinding protection)")
        });
        need.refuse_if(mcp.allowed_hosts.iter().any(|host| host == "*"), || {
            format!("{PREFIX}_MCP_ALLOWED_HOSTS must name hosts, not `*`")
        });
        need.refuse_if(mcp.allowed_origins.iter().any(|origin| origin == "*"), || {
            format!("{PREFIX}_MCP_ALLOWED_ORIGINS must name origins, not `*`")
        });
        let front_door = FrontDoorSettings::from_env()?;
        let lab = platform::lab::LabIdentity::from_env(&mut need);
        need.finish()?;
        Ok(Self {
            common,
            http_addr: socket_addr(&format!("{PREFIX}_HTTP_ADDR"), &http_addr)?,
            peers: PeerAddrs::from_env(),
            rate_limit: RateLimitSettings {
                per_second: per_second.max(1),
                burst: burst.max(1),
            },
            front_door,
            key_cache_ttl: Duration::from_millis(u64::from(cache_ms)).min(MAX_KEY_CACHE_TTL),
            peer_health_timeout: Duration::from_secs(1),
            mcp,
            site_url,
            lab,
        })
    }

    /// Settings for a gateway on loopback with free ports, for tests and labd: development
    /// secrets, default per-key limit, [`FrontDoorSettings::local`], the given peers.
    pub fn local(redis_url: &str, stream_prefix: &str, peers: PeerAddrs) -> Self {
        Self {
            common: CommonSettings::local_without_database(redis_url, stream_prefix),
            http_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            peers,
            rate_limit: RateLimitSettings::default(),
            front_door: FrontDoorSettings::local(),
            key_cache_ttl: MAX_KEY_CACHE_TTL,
            peer_health_timeout: Duration::from_secs(1),
            mcp: McpSettings::default(),
            site_url: String::new(),
            lab: platform::lab::LabIdentity::demo(),
        }
    }
}

fn number(name: &str, default: u32) -> anyhow::Result<u32> {
    let raw = prefixed_or_common(PREFIX, name, &default.to_string());
    raw.trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("setting {PREFIX}_{name}={raw:?} is not a non-negative integer"))
}

/// Where the endpoint may be called from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpSettings {
    /// Origins allowed in `Origin` (a request without `Origin` is not from a browser and passes).
    pub allowed_origins: Vec<String>,
    /// Host names allowed in `Host`; empty: any.
    pub allowed_hosts: Vec<String>,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            allowed_origins: ["http://localhost", "http://127.0.0.1", "http://[::1]"]
                .map(str::to_owned)
                .to_vec(),
            allowed_hosts: Vec::new(),
        }
    }
}

impl McpSettings {
    /// Reads `GATEWAY_MCP_ALLOWED_ORIGINS` and `GATEWAY_MCP_ALLOWED_HOSTS` (see the module
    /// documentation). Without allowed origins, the site's own origin (`site_url`) is allowed
    /// besides the loopback ones.
    pub fn from_env(site_url: &str) -> Self {
        let list = |name: &str, default: &str| -> Vec<String> {
            prefixed_or_common(PREFIX, name, default)
                .split(',')
                .map(|entry| entry.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|entry| !entry.is_empty())
                .collect()
        };
        let mut default_origins = Self::default().allowed_origins;
        if !site_url.is_empty() {
            default_origins.push(site_url.to_owned());
        }
        Self {
            allowed_origins: list("MCP_ALLOWED_ORIGINS", &default_origins.join(",")),
            allowed_hosts: list("MCP_ALLOWED_HOSTS", ""),
        }
    }

    /// True when `origin` (the `Origin` header) is allowed.
    pub fn allows_origin(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        self.allowed_origins.iter().any(|allowed| {
            allowed == "*"
                || *allowed == origin
                || origin
                    .strip_prefix(allowed.as_str())
                    .and_then(|rest| rest.strip_prefix(':'))
                    .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        })
    }

    /// True when `host` (the `Host` header, with or without port) is allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let name = host_name(&host.to_ascii_lowercase());
        self.allowed_hosts.contains(&name)
    }
}

/// The host name of a `Host` value: without the port, brackets kept for IPv6.
fn host_name(host: &str) -> String {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host).to_owned();
    }
    host.split(':').next().unwrap_or(host).to_owned()
}

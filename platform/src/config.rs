//! Settings shared by every process, read from defaults and then environment variables.
//!
//! Each service has its own prefix (`CATALOG_`, `ORDERS_`, …) for what is its own (listen
//! address), while the connection strings and internal secrets use common names so that one
//! deployment secret serves every process. Values are passed explicitly; nothing mutates the
//! process environment.

use secrecy::SecretString;
use std::net::SocketAddr;

/// Development default of the secret that signs gateway-issued principal tokens.
pub const DEV_INTERNAL_TOKEN_SECRET: &str = "dev-internal-token-secret-change-me";
/// Development default of the secret that signs staff tokens (labctl).
pub const DEV_STAFF_TOKEN_SECRET: &str = "dev-staff-token-secret-change-me";

/// Returns the environment variable `name` when set and not empty.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// Returns `PREFIX_NAME` or, when absent, the common `NAME`, or the default.
pub fn prefixed_or_common(prefix: &str, name: &str, default: &str) -> String {
    env_var(&format!("{prefix}_{name}"))
        .or_else(|| env_var(name))
        .unwrap_or_else(|| default.to_owned())
}

/// Parses a socket address setting, naming the variable in the error.
pub fn socket_addr(name: &str, value: &str) -> anyhow::Result<SocketAddr> {
    value
        .parse()
        .map_err(|error| anyhow::anyhow!("setting {name}={value:?} is not a socket address: {error}"))
}

/// Returns `url` with the password of its user info replaced by `***` (for logs and `Debug`):
/// `redis://payments-svc:secret@redis:6379` → `redis://payments-svc:***@redis:6379`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let user = rest[..at].split_once(':').map_or(&rest[..at], |(user, _)| user);
    format!("{scheme}://{user}:***{}", &rest[at..])
}

/// Settings every domain service needs: where it listens and what it connects to. `Debug` shows
/// no secret: the Redis URL's password is redacted and secrets are left out.
#[derive(Clone)]
pub struct CommonSettings {
    /// gRPC listen address; port 0 picks a free port (tests).
    pub grpc_addr: SocketAddr,
    pub database_url: SecretString,
    pub redis_url: String,
    /// Prefix of every Redis stream name, so tests and tenants of one Redis never collide.
    pub stream_prefix: String,
    pub internal_token_secret: SecretString,
    pub staff_token_secret: SecretString,
    /// Largest database pool of this process.
    pub database_max_connections: u32,
}

impl std::fmt::Debug for CommonSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommonSettings")
            .field("grpc_addr", &self.grpc_addr)
            .field("redis_url", &redact_url(&self.redis_url))
            .field("stream_prefix", &self.stream_prefix)
            .field("database_max_connections", &self.database_max_connections)
            .finish_non_exhaustive()
    }
}

impl CommonSettings {
    /// Reads the common settings of the service with environment prefix `prefix`.
    pub fn from_env(prefix: &str, default_grpc_addr: &str) -> anyhow::Result<Self> {
        let grpc_addr = prefixed_or_common(prefix, "GRPC_ADDR", default_grpc_addr);
        let max_connections = prefixed_or_common(prefix, "DATABASE_MAX_CONNECTIONS", "20");
        Ok(Self {
            grpc_addr: socket_addr(&format!("{prefix}_GRPC_ADDR"), &grpc_addr)?,
            database_url: prefixed_or_common(
                prefix,
                "DATABASE_URL",
                "postgres://postgres@127.0.0.1:5432/lab",
            )
            .into(),
            redis_url: prefixed_or_common(prefix, "REDIS_URL", "redis://127.0.0.1:6379"),
            stream_prefix: prefixed_or_common(prefix, "STREAM_PREFIX", "lab"),
            internal_token_secret: prefixed_or_common(
                prefix,
                "LAB_INTERNAL_TOKEN_SECRET",
                DEV_INTERNAL_TOKEN_SECRET,
            )
            .into(),
            staff_token_secret: prefixed_or_common(prefix, "LAB_STAFF_TOKEN_SECRET", DEV_STAFF_TOKEN_SECRET)
                .into(),
            database_max_connections: max_connections.parse().map_err(|_| {
                anyhow::anyhow!("{prefix}_DATABASE_MAX_CONNECTIONS must be a positive integer")
            })?,
        })
    }

    /// Settings for a process on loopback with a free port, for tests and labd.
    pub fn local(database_url: &str, redis_url: &str, stream_prefix: &str) -> Self {
        Self {
            grpc_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: database_url.to_owned().into(),
            redis_url: redis_url.to_owned(),
            stream_prefix: stream_prefix.to_owned(),
            internal_token_secret: DEV_INTERNAL_TOKEN_SECRET.to_owned().into(),
            staff_token_secret: DEV_STAFF_TOKEN_SECRET.to_owned().into(),
            database_max_connections: 10,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_url_password_never_reaches_debug_output() {
        assert_eq!(
            redact_url("redis://payments-svc:s3cr%40t@redis:6379/0"),
            "redis://payments-svc:***@redis:6379/0"
        );
        assert_eq!(redact_url("redis://:only-pass@redis"), "redis://:***@redis");
        assert_eq!(redact_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        let settings = CommonSettings::local("postgres://db", "redis://gateway:hunter2@redis:6379", "lab");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redis://gateway:***@redis:6379"), "{shown}");
    }
}

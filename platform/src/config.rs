//! Settings shared by every process, read from defaults and then environment variables.
//!
//! Each service has its own prefix (`CATALOG_`, `ORDERS_`, …) for what is its own (listen
//! address, token signing key), while the connection strings and the trusted public keys use
//! common names so that one deployment setting serves every process. Values are passed
//! explicitly; nothing mutates the process environment.
//!
//! Development mode (`LAB_DEV_MODE=1`, set by the local run and the tests) is the only way a
//! process accepts a missing or published development key, pepper or sealing key; without it
//! such a process refuses to start ([`refuse_development_secret`]).

use secrecy::{ExposeSecret, SecretString};
use std::net::SocketAddr;

pub use crate::env::{DEV_MODE_VAR, env_var};

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

/// Settings every process needs: where it listens and what it connects to (the gateway has no
/// database: [`Self::from_env_without_database`]). `Debug` shows no secret: the Redis URL's
/// password is redacted and secrets are left out.
#[derive(Clone)]
pub struct CommonSettings {
    /// gRPC listen address; port 0 picks a free port (tests).
    pub grpc_addr: SocketAddr,
    /// The process's PostgreSQL (`<PREFIX>_DATABASE_URL` or `DATABASE_URL`); `None` for a
    /// process without a database (the gateway), which never reads the setting.
    pub database_url: Option<SecretString>,
    pub redis_url: String,
    /// Prefix of every Redis stream name, so tests and tenants of one Redis never collide.
    pub stream_prefix: String,
    /// Development mode: published development keys and secrets are accepted.
    pub dev_mode: bool,
    /// This process's private token signing key (a private Ed25519 JWK); `None` in development
    /// mode means the published development key of the process.
    pub token_signing_key: Option<SecretString>,
    /// The trusted public keys of every issuer (a JWK set); `None` in development mode means
    /// the published development keys.
    pub token_trusted_keys: Option<String>,
    /// Largest database pool of this process (0 without a database).
    pub database_max_connections: u32,
    /// Mutual TLS of this process's gRPC, served and called (`GRPC_TLS_CERT_FILE`,
    /// `GRPC_TLS_KEY_FILE`, `GRPC_TLS_CA_FILE`; `crate::grpc::tls`); `None`: plaintext, which
    /// only development mode accepts.
    pub grpc_tls: Option<crate::grpc::tls::MeshTls>,
    /// Where a domain service also serves its `grpc.health.v1` in plaintext, for Kubernetes'
    /// gRPC probes, which cannot present a client certificate (`<PREFIX>_GRPC_HEALTH_ADDR` or
    /// `GRPC_HEALTH_ADDR`; `crate::grpc::serve_health`); `None`: nowhere.
    pub grpc_health_addr: Option<SocketAddr>,
    /// Whether the process's gRPC listener answers server reflection (`<PREFIX>_GRPC_REFLECTION`
    /// or `GRPC_REFLECTION`: `1`/`true`, `0`/`false`; on by default in development mode, off
    /// otherwise). Reflection reveals the schema, never data (docs/internal-api.md).
    pub grpc_reflection: bool,
}

impl std::fmt::Debug for CommonSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommonSettings")
            .field("grpc_addr", &self.grpc_addr)
            .field("redis_url", &redact_url(&self.redis_url))
            .field("stream_prefix", &self.stream_prefix)
            .field("database_max_connections", &self.database_max_connections)
            .field("grpc_tls", &self.grpc_tls)
            .field("grpc_health_addr", &self.grpc_health_addr)
            .field("grpc_reflection", &self.grpc_reflection)
            .finish_non_exhaustive()
    }
}

impl CommonSettings {
    /// Reads the common settings of the service with environment prefix `prefix`.
    pub fn from_env(prefix: &str, default_grpc_addr: &str) -> anyhow::Result<Self> {
        Self::read_env(prefix, default_grpc_addr, true)
    }

    /// Reads the common settings of a process without a database (the gateway):
    /// `DATABASE_URL` and `DATABASE_MAX_CONNECTIONS` are neither read nor checked.
    pub fn from_env_without_database(prefix: &str, default_grpc_addr: &str) -> anyhow::Result<Self> {
        Self::read_env(prefix, default_grpc_addr, false)
    }

    fn read_env(prefix: &str, default_grpc_addr: &str, with_database: bool) -> anyhow::Result<Self> {
        let grpc_addr = prefixed_or_common(prefix, "GRPC_ADDR", default_grpc_addr);
        let database_url = with_database.then(|| {
            SecretString::from(prefixed_or_common(
                prefix,
                "DATABASE_URL",
                "postgres://postgres@127.0.0.1:5432/lab",
            ))
        });
        let database_max_connections = if with_database {
            prefixed_or_common(prefix, "DATABASE_MAX_CONNECTIONS", "20")
                .parse()
                .map_err(|_| {
                    anyhow::anyhow!("{prefix}_DATABASE_MAX_CONNECTIONS must be a positive integer")
                })?
        } else {
            0
        };
        let health_addr = env_var(&format!("{prefix}_GRPC_HEALTH_ADDR"))
            .or_else(|| env_var("GRPC_HEALTH_ADDR"))
            .map(|value| socket_addr(&format!("{prefix}_GRPC_HEALTH_ADDR"), &value))
            .transpose()?;
        let dev_mode = dev_mode_from_env()?;
        // Reflection reveals the schema, never data: on for development, a choice otherwise.
        let grpc_reflection = flag(
            &format!("{prefix}_GRPC_REFLECTION"),
            env_var(&format!("{prefix}_GRPC_REFLECTION"))
                .or_else(|| env_var("GRPC_REFLECTION"))
                .as_deref(),
            dev_mode,
        )?;
        let settings = Self {
            grpc_addr: socket_addr(&format!("{prefix}_GRPC_ADDR"), &grpc_addr)?,
            database_url,
            redis_url: prefixed_or_common(prefix, "REDIS_URL", "redis://127.0.0.1:6379"),
            stream_prefix: prefixed_or_common(prefix, "STREAM_PREFIX", "lab"),
            dev_mode,
            token_signing_key: file_or_value(prefix, "TOKEN_SIGNING_KEY")?.map(SecretString::from),
            token_trusted_keys: file_or_value(prefix, "LAB_TOKEN_TRUSTED_KEYS")?,
            database_max_connections,
            grpc_tls: crate::grpc::tls::MeshTls::from_env(prefix)?,
            grpc_health_addr: health_addr,
            grpc_reflection,
        };
        // Connection passwords and the signing key must not be values of this repository.
        let mut need =
            crate::production::Requirements::new(&format!("the {prefix} process"), settings.dev_mode);
        need.secret("DATABASE_URL", settings.database_url.as_ref(), None);
        need.secret("REDIS_URL", Some(&settings.redis_url.clone().into()), None);
        need.secret("TOKEN_SIGNING_KEY", settings.token_signing_key.as_ref(), None);
        // Bearer tokens, delegations and customers' data cross the mesh: never in plaintext.
        need.refuse_if(settings.grpc_tls.is_none(), || {
            use crate::grpc::tls::{CA_FILE_VAR, CERT_FILE_VAR, KEY_FILE_VAR};
            format!(
                "{CERT_FILE_VAR}, {KEY_FILE_VAR} and {CA_FILE_VAR} (or {prefix}_{CERT_FILE_VAR}, …) are not set: outside development mode the mesh's gRPC runs over mutual TLS (docs/security.md, \"Internal TLS\")"
            )
        });
        need.finish()?;
        Ok(settings)
    }

    /// Settings for a process on loopback with a free port in development mode, for tests and
    /// the sandbox.
    pub fn local(database_url: &str, redis_url: &str, stream_prefix: &str) -> Self {
        Self {
            database_url: Some(database_url.to_owned().into()),
            database_max_connections: 10,
            ..Self::local_without_database(redis_url, stream_prefix)
        }
    }

    /// [`Self::local`] for a process without a database (the gateway).
    pub fn local_without_database(redis_url: &str, stream_prefix: &str) -> Self {
        Self {
            grpc_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: None,
            redis_url: redis_url.to_owned(),
            stream_prefix: stream_prefix.to_owned(),
            dev_mode: true,
            token_signing_key: None,
            token_trusted_keys: None,
            database_max_connections: 0,
            grpc_tls: None,
            grpc_health_addr: None,
            grpc_reflection: true,
        }
    }

    /// The database URL of a process that has one; an error naming the setting otherwise.
    pub fn require_database_url(&self) -> anyhow::Result<&SecretString> {
        self.database_url
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no database URL: this process needs DATABASE_URL"))
    }
}

/// Reads `LAB_DEV_MODE`: `1`/`true` turns development mode on, `0`/`false`/unset leaves it off.
pub fn dev_mode_from_env() -> anyhow::Result<bool> {
    flag(DEV_MODE_VAR, env_var(DEV_MODE_VAR).as_deref(), false)
}

/// The on/off setting `name` whose value is `value`: `1`/`true` on, `0`/`false` off, unset
/// `default`; anything else an error naming the setting.
pub fn flag(name: &str, value: Option<&str>, default: bool) -> anyhow::Result<bool> {
    match value.map(str::trim) {
        None => Ok(default),
        Some("1") | Some("true") => Ok(true),
        Some("0") | Some("false") => Ok(false),
        Some(other) => anyhow::bail!("{name}={other:?} must be 1, true, 0 or false"),
    }
}

/// Reads `PREFIX_NAME` or `NAME`; a value starting with `@` names a file to read it from (a
/// mounted Kubernetes Secret or ConfigMap).
pub fn file_or_value(prefix: &str, name: &str) -> anyhow::Result<Option<String>> {
    let Some(value) = env_var(&format!("{prefix}_{name}")).or_else(|| env_var(name)) else {
        return Ok(None);
    };
    match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map(|text| Some(text.trim().to_owned()))
            .map_err(|error| anyhow::anyhow!("setting {name}: cannot read {path}: {error}")),
        None => Ok(Some(value)),
    }
}

/// Refuses a secret that is missing or equal to a published development value, unless
/// development mode is on; in development mode returns the secret or the development value.
pub fn refuse_development_secret(
    dev_mode: bool,
    name: &str,
    configured: Option<&SecretString>,
    development_value: &str,
) -> anyhow::Result<SecretString> {
    match configured {
        Some(secret) if secret.expose_secret() != development_value => Ok(secret.clone()),
        _ if dev_mode => Ok(configured
            .cloned()
            .unwrap_or_else(|| development_value.to_owned().into())),
        Some(_) => anyhow::bail!(
            "{name} is the published development value; set a real secret, or {DEV_MODE_VAR}=1 for local development only"
        ),
        None => anyhow::bail!("{name} is not set; set it, or {DEV_MODE_VAR}=1 for local development only"),
    }
}

/// Logs, once per process part, that development mode is on.
pub fn warn_development_mode(process: &str) {
    tracing::warn!(
        process,
        "DEVELOPMENT MODE: published development keys and secrets are accepted; never run a deployment like this"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_published_secret_is_refused_outside_development_mode() {
        let dev = "dev-pepper";
        assert!(refuse_development_secret(false, "PEPPER", None, dev).is_err());
        let published: SecretString = dev.to_owned().into();
        assert!(refuse_development_secret(false, "PEPPER", Some(&published), dev).is_err());
        let real: SecretString = "a-real-one".to_owned().into();
        let accepted = refuse_development_secret(false, "PEPPER", Some(&real), dev).unwrap();
        assert_eq!(accepted.expose_secret(), "a-real-one");
        let fallback = refuse_development_secret(true, "PEPPER", None, dev).unwrap();
        assert_eq!(fallback.expose_secret(), dev);
    }

    #[test]
    fn an_on_off_setting_reads_its_four_spellings_falls_back_when_unset_and_names_itself_when_wrong() {
        for (value, default, expected) in [
            (None, true, true),
            (None, false, false),
            (Some("1"), false, true),
            (Some(" true "), false, true),
            (Some("0"), true, false),
            (Some("false"), true, false),
        ] {
            assert_eq!(
                flag("GRPC_REFLECTION", value, default).unwrap(),
                expected,
                "{value:?}"
            );
        }
        let wrong = flag("ORDERS_GRPC_REFLECTION", Some("yes"), true).unwrap_err();
        assert!(
            wrong.to_string().contains("ORDERS_GRPC_REFLECTION=\"yes\""),
            "{wrong}"
        );
    }

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

//! Settings of identity-svc: the common settings under the `IDENTITY` prefix plus the API-key
//! pepper.
//!
//! Environment variables (defaults in brackets): `IDENTITY_GRPC_ADDR` [127.0.0.1:50057],
//! `LAB_API_KEY_PEPPER` [a development value; required outside development mode], plus the
//! common `DATABASE_URL`, `REDIS_URL`, `STREAM_PREFIX`, `LAB_TOKEN_TRUSTED_KEYS`,
//! `IDENTITY_TOKEN_SIGNING_KEY`, `LAB_DEV_MODE`, `DATABASE_MAX_CONNECTIONS` (each also readable
//! as `IDENTITY_<NAME>`).

use platform::config::{CommonSettings, env_var, prefixed_or_common};
use platform::production::{MIN_SECRET_CHARS, Requirements};
use secrecy::SecretString;

/// Environment prefix of this service.
pub const PREFIX: &str = "IDENTITY";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50057";
/// The published development pepper (refused outside development mode).
pub const DEV_API_KEY_PEPPER: &str = "dev-api-key-pepper-change-me";

/// Settings of identity-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    /// The HMAC key of API-key and operator-credential verifiers (`LAB_API_KEY_PEPPER`).
    pub api_key_pepper: SecretString,
}

impl Settings {
    /// Reads settings from `IDENTITY_*` and the common environment variables; outside
    /// development mode a missing or short pepper refuses to start.
    pub fn from_env() -> anyhow::Result<Self> {
        let common = CommonSettings::from_env(PREFIX, DEFAULT_GRPC_ADDR)?;
        let mut need = Requirements::new(crate::SERVICE_NAME, common.dev_mode);
        let api_key_pepper: SecretString =
            prefixed_or_common(PREFIX, "LAB_API_KEY_PEPPER", DEV_API_KEY_PEPPER).into();
        if env_var(&format!("{PREFIX}_LAB_API_KEY_PEPPER")).is_none()
            && env_var("LAB_API_KEY_PEPPER").is_none()
        {
            need.refuse(format!(
                "LAB_API_KEY_PEPPER is not set: the HMAC key of API-key and operator verifiers (at least {MIN_SECRET_CHARS} characters)"
            ));
        } else {
            need.secret(
                "LAB_API_KEY_PEPPER",
                Some(&api_key_pepper),
                Some(MIN_SECRET_CHARS),
            );
        }
        need.finish()?;
        Ok(Self {
            common,
            api_key_pepper,
        })
    }

    /// Settings on loopback with a free port (tests and labd), in development mode.
    pub fn local(database_url: &str, redis_url: &str, stream_prefix: &str) -> Self {
        Self {
            common: CommonSettings::local(database_url, redis_url, stream_prefix),
            api_key_pepper: DEV_API_KEY_PEPPER.to_owned().into(),
        }
    }
}

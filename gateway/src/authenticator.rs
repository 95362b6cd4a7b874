//! Authenticates API keys: parses the presented key, finds its record (cached in memory for at
//! most the configured TTL, so a revocation takes effect within seconds), checks the secret
//! against the peppered verifier in constant time, and turns the key into the principal that
//! services receive. Records `last_used_at` at most once a minute per key, off the request path.

use crate::domain::api_key::PresentedKey;
use crate::domain::customer::ApiKey;
use crate::repo;
use platform::error::ApiError;
use platform::principal::{Principal, PrincipalKind};
use secrecy::SecretString;
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How often `last_used_at` is written per key at most.
const LAST_USED_INTERVAL: Duration = Duration::from_secs(60);
/// Cache size beyond which expired entries are swept on insert.
const SWEEP_ABOVE: usize = 10_000;

/// Why a presented credential was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header.
    Missing,
    /// Wrong scheme, malformed key, unknown key, wrong secret or revoked key.
    Invalid,
}

/// Outcome of authentication: a principal, a refusal, or an unavailable database.
pub type AuthResult = Result<Principal, AuthError>;

/// An authentication failure.
#[derive(Debug)]
pub enum AuthError {
    Refused(Refusal),
    Unavailable(ApiError),
}

struct Cached {
    fetched_at: Instant,
    /// `None`: no key has this public id.
    credentials: Option<Arc<repo::KeyCredentials>>,
}

/// The key authenticator shared by every request.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    pepper: SecretString,
    ttl: Duration,
    cache: Mutex<HashMap<String, Cached>>,
    last_used: Mutex<HashMap<Uuid, Instant>>,
}

impl Authenticator {
    /// Builds an authenticator reading keys from `pool`, caching records for `ttl`.
    pub fn new(pool: PgPool, pepper: SecretString, ttl: Duration) -> Self {
        let inner = Inner {
            pool,
            pepper,
            ttl,
            cache: Mutex::default(),
            last_used: Mutex::default(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Authenticates the value of an `Authorization` header.
    pub async fn authenticate(&self, authorization: Option<&str>) -> AuthResult {
        let header = authorization.ok_or(AuthError::Refused(Refusal::Missing))?;
        let token = bearer_token(header).ok_or(AuthError::Refused(Refusal::Invalid))?;
        let presented = PresentedKey::parse(token).ok_or(AuthError::Refused(Refusal::Invalid))?;
        let credentials = self
            .credentials(&presented.public_id)
            .await?
            .ok_or(AuthError::Refused(Refusal::Invalid))?;
        if !presented.matches(&self.inner.pepper, &credentials.verifier)
            || credentials.key.revoked_at.is_some()
        {
            return Err(AuthError::Refused(Refusal::Invalid));
        }
        self.note_use(credentials.key.id);
        Ok(principal_of(&credentials.key))
    }

    async fn credentials(&self, public_id: &str) -> Result<Option<Arc<repo::KeyCredentials>>, AuthError> {
        let now = Instant::now();
        if let Some(cached) = self.lock_cache().get(public_id)
            && now.duration_since(cached.fetched_at) < self.inner.ttl
        {
            return Ok(cached.credentials.clone());
        }
        let loaded = repo::key_credentials(&self.inner.pool, public_id)
            .await
            .map_err(|error| AuthError::Unavailable(ApiError::unavailable("the key store", error)))?
            .map(Arc::new);
        let mut cache = self.lock_cache();
        if cache.len() > SWEEP_ABOVE {
            let ttl = self.inner.ttl;
            cache.retain(|_, entry| now.duration_since(entry.fetched_at) < ttl);
        }
        cache.insert(
            public_id.to_owned(),
            Cached {
                fetched_at: now,
                credentials: loaded.clone(),
            },
        );
        Ok(loaded)
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.inner
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `last_used_at` in the background when the last write is a minute old.
    fn note_use(&self, key_id: Uuid) {
        let now = Instant::now();
        {
            let mut last_used = self
                .inner
                .last_used
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last_used
                .get(&key_id)
                .is_some_and(|at| now.duration_since(*at) < LAST_USED_INTERVAL)
            {
                return;
            }
            if last_used.len() > SWEEP_ABOVE {
                last_used.retain(|_, at| now.duration_since(*at) < LAST_USED_INTERVAL);
            }
            last_used.insert(key_id, now);
        }
        let pool = self.inner.pool.clone();
        tokio::spawn(async move {
            if let Err(error) = repo::touch_last_used(&pool, key_id).await {
                tracing::warn!(%key_id, %error, "could not record key use");
            }
        });
    }
}

/// Returns the credential of `Bearer <credential>` (scheme case-insensitive).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, credential) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
        .filter(|credential| !credential.is_empty())
}

/// The principal that services receive for a key.
pub fn principal_of(key: &ApiKey) -> Principal {
    Principal {
        kind: PrincipalKind::Customer,
        subject: key.id.to_string(),
        customer_id: Some(key.customer_id),
        scopes: key.scopes.clone(),
        roles: Vec::new(),
        spend_limit_cents: key.spend_limit_cents,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_credentials_are_read_case_insensitively() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }
}

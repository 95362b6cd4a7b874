//! Authenticates API keys: parses the presented key, finds its record in the bounded
//! [`KeyCache`] or, on a miss, in the key store, checks the secret against the peppered
//! verifier in constant time, and returns the key's record with the principal that services
//! receive. Records `last_used_at` at most once a minute per key, off the request path.
//!
//! The key store is protected from floods of made-up keys: a lookup of a public id the cache does
//! not know is charged to the client's address (`key-lookups` limit, refused with 429 before the
//! store is asked; refreshing a known key's expired entry is not charged),
//! lookups in flight are capped at half the database pool, and unknown public ids are
//! remembered in the bounded negative cache.

use crate::client_addr::limit_key;
use crate::domain::api_key::PresentedKey;
use crate::domain::customer::ApiKey;
use crate::key_cache::{CacheSizes, Cached, KeyCache, KeyRecord};
use crate::limits::local::LocalLimiter;
use crate::limits::{Decision, Policy};
use crate::repo;
use platform::error::ApiError;
use platform::principal::{Principal, PrincipalKind};
use secrecy::SecretString;
use sqlx::PgPool;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use uuid::Uuid;

/// How often `last_used_at` is written per key at most.
const LAST_USED_INTERVAL: Duration = Duration::from_secs(60);
/// Size beyond which old `last_used` marks are swept.
const SWEEP_ABOVE: usize = 10_000;
/// Longest wait for a lookup slot before answering 503.
const LOOKUP_SLOT_WAIT: Duration = Duration::from_secs(1);
/// Client addresses whose lookup budget is remembered at most.
const ADDRESS_CAPACITY: usize = 100_000;

/// Why a presented credential was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header.
    Missing,
    /// Wrong scheme, malformed key, unknown key, wrong secret or revoked key.
    Invalid,
}

/// Outcome of authentication: the key's record, a refusal, a limited client, or an
/// unavailable key store.
pub type AuthResult = Result<Arc<KeyRecord>, AuthError>;

/// An authentication failure.
#[derive(Debug)]
pub enum AuthError {
    Refused(Refusal),
    /// The client used up its key-lookup budget; the key store was not asked.
    Limited(Decision),
    Unavailable(ApiError),
}

/// How the authenticator is sized.
#[derive(Clone, Debug)]
pub struct AuthenticatorSettings {
    pub ttl: Duration,
    pub known_capacity: usize,
    pub unknown_capacity: usize,
    /// Key-store lookups per client address.
    pub lookups: Policy,
    /// Lookups in flight at once.
    pub max_concurrent_lookups: usize,
}

/// The key authenticator shared by every request.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    pepper: SecretString,
    cache: KeyCache,
    lookup_budget: LocalLimiter<IpAddr>,
    lookup_slots: Semaphore,
    lookups: AtomicU64,
    last_used: Mutex<HashMap<Uuid, Instant>>,
}

impl Authenticator {
    /// Builds an authenticator reading keys from `pool`.
    pub fn new(pool: PgPool, pepper: SecretString, settings: AuthenticatorSettings) -> Self {
        let inner = Inner {
            pool,
            pepper,
            cache: KeyCache::new(settings.ttl, settings.known_capacity, settings.unknown_capacity),
            lookup_budget: LocalLimiter::new(settings.lookups, ADDRESS_CAPACITY),
            lookup_slots: Semaphore::new(settings.max_concurrent_lookups.max(1)),
            lookups: AtomicU64::new(0),
            last_used: Mutex::default(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Authenticates the value of an `Authorization` header sent by `client`.
    pub async fn authenticate(&self, authorization: Option<&str>, client: IpAddr) -> AuthResult {
        let header = authorization.ok_or(AuthError::Refused(Refusal::Missing))?;
        let token = bearer_token(header).ok_or(AuthError::Refused(Refusal::Invalid))?;
        let presented = PresentedKey::parse(token).ok_or(AuthError::Refused(Refusal::Invalid))?;
        let record = match self.inner.cache.get(&presented.public_id) {
            Cached::Known(record) => record,
            Cached::Unknown => return Err(AuthError::Refused(Refusal::Invalid)),
            Cached::Stale => self
                .lookup(&presented.public_id, None)
                .await?
                .ok_or(AuthError::Refused(Refusal::Invalid))?,
            Cached::Miss => self
                .lookup(&presented.public_id, Some(client))
                .await?
                .ok_or(AuthError::Refused(Refusal::Invalid))?,
        };
        if !presented.matches(&self.inner.pepper, &record.verifier) || record.key.revoked_at.is_some() {
            return Err(AuthError::Refused(Refusal::Invalid));
        }
        self.note_use(record.key.id);
        Ok(record)
    }

    /// The policy of the key-lookup budget (for the 429 headers).
    pub fn lookup_policy(&self) -> &Policy {
        self.inner.lookup_budget.policy()
    }

    /// Key-store lookups made so far.
    pub fn lookups(&self) -> u64 {
        self.inner.lookups.load(Ordering::Relaxed)
    }

    /// How many known keys and unknown public ids are cached.
    pub fn cache_sizes(&self) -> CacheSizes {
        self.inner.cache.sizes()
    }

    /// Forgets a key at once (it was revoked).
    pub fn evict(&self, public_id: &str) {
        self.inner.cache.evict(public_id);
    }

    /// Forgets every cached key (revocation messages may have been missed).
    pub fn forget_all(&self) {
        self.inner.cache.clear();
    }

    /// Reads a key from the store; a lookup for an unknown public id is charged to `charged_to`.
    async fn lookup(
        &self,
        public_id: &str,
        charged_to: Option<IpAddr>,
    ) -> Result<Option<Arc<KeyRecord>>, AuthError> {
        if let Some(client) = charged_to {
            let budget = self.inner.lookup_budget.check(limit_key(client));
            if !budget.is_allowed() {
                return Err(AuthError::Limited(budget));
            }
        }
        let slot = tokio::time::timeout(LOOKUP_SLOT_WAIT, self.inner.lookup_slots.acquire())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| {
                AuthError::Unavailable(ApiError::unavailable(
                    "the key store",
                    "every lookup slot is busy",
                ))
            })?;
        let epoch = self.inner.cache.epoch();
        self.inner.lookups.fetch_add(1, Ordering::Relaxed);
        let loaded = repo::key_credentials(&self.inner.pool, public_id)
            .await
            .map_err(|error| AuthError::Unavailable(ApiError::unavailable("the key store", error)))?;
        drop(slot);
        let record = loaded.map(|credentials| {
            let principal = principal_of(&credentials.key);
            Arc::new(KeyRecord {
                key: credentials.key,
                verifier: credentials.verifier,
                principal: Arc::new(principal),
            })
        });
        self.inner.cache.store(public_id, record.clone(), epoch);
        Ok(record)
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
        operator_id: None,
        credential_id: None,
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

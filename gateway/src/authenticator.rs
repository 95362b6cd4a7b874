//! Authenticates API keys: reads the presented key's public id, finds identity-svc's answer
//! for it in the bounded [`KeyCache`] or, on a miss, asks identity-svc (`VerifyApiKey`, which
//! checks the secret against the peppered verifier), compares a later presentation with the
//! digest of the key identity-svc verified in constant time, and returns the key's record with
//! the principal that services receive. identity-svc records `last_used_at`.
//!
//! identity-svc is protected from floods of made-up keys: a lookup of a public id the cache does
//! not know is charged to the client's address (`key-lookups` limit, refused with 429 before
//! identity-svc is asked; refreshing a known key's expired entry is not charged), lookups in
//! flight are capped, and unknown (or revoked) public ids are remembered in the bounded negative
//! cache.

use crate::client_addr::limit_key;
use crate::key_cache::{CacheSizes, Cached, KeyCache, KeyRecord, VerifiedKey};
use crate::limits::local::LocalLimiter;
use crate::limits::{Decision, Policy};
use platform::error::ApiError;
use platform::grpc::MeshChannel;
use platform::principal::{Principal, PrincipalKind};
use platform::tokens::TokenIssuer;
use proto::identity::identity_service_client::IdentityServiceClient;
use proto::identity::verify_api_key_response::Outcome;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

/// Longest wait for a lookup slot before answering 503.
const LOOKUP_SLOT_WAIT: Duration = Duration::from_secs(1);
/// Longest wait for identity-svc's answer before answering 503.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);
/// Client addresses whose lookup budget is remembered at most.
const ADDRESS_CAPACITY: usize = 100_000;
/// Prefix of every live key.
const KEY_PREFIX: &str = "svc_live_";
/// Length of a key's public id (lowercase alphanumerics).
const PUBLIC_ID_LEN: usize = 16;
/// Length of a key's secret (alphanumerics).
const SECRET_LEN: usize = 32;

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
    /// identity-svc lookups per client address.
    pub lookups: Policy,
    /// Lookups in flight at once.
    pub max_concurrent_lookups: usize,
}

/// Where keys are verified: identity-svc, called with the gateway's own service token.
#[derive(Clone)]
pub struct KeyStore {
    pub client: IdentityServiceClient<MeshChannel>,
    pub tokens: TokenIssuer,
}

/// The key authenticator shared by every request.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

struct Inner {
    store: KeyStore,
    cache: KeyCache,
    lookup_budget: LocalLimiter<IpAddr>,
    lookup_slots: Semaphore,
    lookups: AtomicU64,
}

impl Authenticator {
    /// Builds an authenticator verifying keys at `store`.
    pub fn new(store: KeyStore, settings: AuthenticatorSettings) -> Self {
        let inner = Inner {
            store,
            cache: KeyCache::new(settings.ttl, settings.known_capacity, settings.unknown_capacity),
            lookup_budget: LocalLimiter::new(settings.lookups, ADDRESS_CAPACITY),
            lookup_slots: Semaphore::new(settings.max_concurrent_lookups.max(1)),
            lookups: AtomicU64::new(0),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Authenticates the value of an `Authorization` header sent by `client`.
    pub async fn authenticate(&self, authorization: Option<&str>, client: IpAddr) -> AuthResult {
        let header = authorization.ok_or(AuthError::Refused(Refusal::Missing))?;
        let token = bearer_token(header).ok_or(AuthError::Refused(Refusal::Invalid))?;
        let public_id = public_id_of(token).ok_or(AuthError::Refused(Refusal::Invalid))?;
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let matches = |record: &KeyRecord| bool::from(record.digest.ct_eq(&digest));
        match self.inner.cache.get(public_id) {
            Cached::Known(record) if matches(&record) => Ok(record),
            // A key's secret never changes: another secret for a known public id is wrong.
            Cached::Known(_) | Cached::Unknown => Err(AuthError::Refused(Refusal::Invalid)),
            Cached::Stale(record) if matches(&record) => self
                .lookup(token, public_id, digest, None)
                .await?
                .ok_or(AuthError::Refused(Refusal::Invalid)),
            Cached::Stale(_) => Err(AuthError::Refused(Refusal::Invalid)),
            Cached::Miss => self
                .lookup(token, public_id, digest, Some(client))
                .await?
                .ok_or(AuthError::Refused(Refusal::Invalid)),
        }
    }

    /// The policy of the key-lookup budget (for the 429 headers).
    pub fn lookup_policy(&self) -> &Policy {
        self.inner.lookup_budget.policy()
    }

    /// identity-svc lookups made so far.
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

    /// Asks identity-svc about the presented key `token`; a lookup for a public id the cache
    /// does not know is charged to `charged_to`.
    async fn lookup(
        &self,
        token: &str,
        public_id: &str,
        digest: [u8; 32],
        charged_to: Option<IpAddr>,
    ) -> Result<Option<Arc<KeyRecord>>, AuthError> {
        if let Some(client) = charged_to {
            let budget = self.inner.lookup_budget.check(limit_key(client));
            if !budget.is_allowed() {
                return Err(AuthError::Limited(budget));
            }
        }
        let unavailable =
            |detail: String| AuthError::Unavailable(ApiError::unavailable("the key store", detail));
        let slot = tokio::time::timeout(LOOKUP_SLOT_WAIT, self.inner.lookup_slots.acquire())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| unavailable("every lookup slot is busy".to_owned()))?;
        let epoch = self.inner.cache.epoch();
        self.inner.lookups.fetch_add(1, Ordering::Relaxed);
        let store = &self.inner.store;
        let service_token = store.tokens.service_token(platform::mesh::IDENTITY_SVC, None);
        let request = proto::identity::VerifyApiKeyRequest {
            key: token.to_owned(),
        };
        let answer = tokio::time::timeout(
            LOOKUP_TIMEOUT,
            store
                .client
                .clone()
                .verify_api_key(platform::grpc::outgoing(request, &service_token)),
        )
        .await
        .map_err(|_| unavailable(format!("identity-svc did not answer within {LOOKUP_TIMEOUT:?}")))?
        .map_err(|status| unavailable(status.message().to_owned()))?
        .into_inner();
        drop(slot);
        let record = match Outcome::try_from(answer.outcome) {
            Ok(Outcome::Valid) => {
                let key =
                    answer.key.as_ref().and_then(verified_key).ok_or_else(|| {
                        unavailable("identity-svc described a valid key unreadably".to_owned())
                    })?;
                let principal = principal_of(&key);
                Some(Arc::new(KeyRecord {
                    key,
                    digest,
                    principal: Arc::new(principal),
                }))
            }
            Ok(Outcome::Unknown | Outcome::Revoked) => None,
            // Nothing to remember: the key is not known and the public id is not unknown.
            Ok(Outcome::WrongSecret) => return Ok(None),
            Ok(Outcome::Unspecified) | Err(_) => {
                return Err(unavailable(format!(
                    "identity-svc answered outcome {}",
                    answer.outcome
                )));
            }
        };
        self.inner.cache.store(public_id, record.clone(), epoch);
        Ok(record)
    }
}

/// The key record of a `VerifyApiKey` answer; `None` when its ids are not UUIDs.
fn verified_key(key: &proto::identity::ApiKey) -> Option<VerifiedKey> {
    Some(VerifiedKey {
        id: key.id.parse().ok()?,
        customer_id: key.customer_id.parse().ok()?,
        public_id: key.public_id.clone(),
        scopes: key.scopes.clone(),
        spend_limit_cents: key.spend_limit_cents,
        sandbox: key.sandbox,
    })
}

/// The public id of a key of the form `svc_live_<16 lowercase alphanumerics>_<32
/// alphanumerics>`; `None` when malformed (refused without asking identity-svc).
fn public_id_of(presented: &str) -> Option<&str> {
    let (public_id, secret) = presented.strip_prefix(KEY_PREFIX)?.split_once('_')?;
    let public_ok = public_id.len() == PUBLIC_ID_LEN
        && public_id
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
    let secret_ok = secret.len() == SECRET_LEN && secret.bytes().all(|byte| byte.is_ascii_alphanumeric());
    (public_ok && secret_ok).then_some(public_id)
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
pub fn principal_of(key: &VerifiedKey) -> Principal {
    Principal {
        kind: PrincipalKind::Customer,
        subject: key.id.to_string(),
        customer_id: Some(key.customer_id),
        scopes: key.scopes.clone(),
        roles: Vec::new(),
        spend_limit_cents: key.spend_limit_cents,
        operator_id: None,
        credential_id: None,
        sandbox: key.sandbox,
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

    #[test]
    fn only_well_formed_keys_name_a_public_id() {
        let secret = "A".repeat(SECRET_LEN);
        assert_eq!(
            public_id_of(&format!("svc_live_abcdefgh12345678_{secret}")),
            Some("abcdefgh12345678")
        );
        assert_eq!(public_id_of(&format!("svc_live_ABCDEFGH12345678_{secret}")), None);
        assert_eq!(public_id_of(&format!("lab_op_abcdefgh12345678_{secret}")), None);
        assert_eq!(public_id_of("svc_live_abcdefgh12345678_short"), None);
    }
}

//! Principal tokens: short-lived EdDSA (Ed25519) JWTs that carry the authenticated caller on
//! every gRPC call of the mesh.
//!
//! Who may sign what (checked by every verifier, [`verify`](TokenVerifier::verify)):
//!
//! * the gateway (issuer `gateway`) alone signs **customer** principals (an API key it
//!   authenticated through identity-svc);
//! * identity-svc (issuer `identity-svc`) alone signs **staff** principals (an operator it
//!   authenticated, carrying only the roles the operator holds and asked for);
//! * a service signs only **service** principals naming itself (`sub` = its own name), which
//!   the called service then admits only on the operations its access table grants that caller.
//!
//! Every token names its audience, the one service it is for; a service refuses tokens for
//! another audience. Services hold public keys only (a [`TrustedKeys`] set, several key ids per
//! issuer during a rotation), so a compromised service cannot mint principals for others.
//! Minted tokens are cached per (audience, principal) for half their lifetime and verified
//! tokens are cached until they expire, so the signatures cost nothing on the hot path.
//!
//! A staff principal always names its operator's id; a verifier given the operator revocation
//! list ([`revocations`]) refuses the staff tokens of disabled operators and rotated
//! credentials, cached or not.

mod keys;
pub mod revocations;
mod setup;

pub use keys::{MESH_ISSUERS, SigningKey, TrustedKeys};
pub use revocations::StaffRevocations;
pub use setup::ProcessTokens;

use crate::error::{ApiError, ErrorCode};
use crate::principal::{Principal, PrincipalKind};
use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The issuer that authenticates API keys (through identity-svc): the only signer of customer
/// principals.
pub const GATEWAY_ISSUER: &str = crate::mesh::GATEWAY;
/// The issuer that authenticates operators: the only signer of staff principals.
pub const IDENTITY_ISSUER: &str = crate::mesh::IDENTITY_SVC;
/// Lifetime of customer and service tokens; a minted token is reused for half of it.
pub const TOKEN_TTL: Duration = Duration::from_secs(120);
/// Lifetime of a staff token issued to an operator.
pub const STAFF_TOKEN_TTL: Duration = Duration::from_secs(600);
/// Audience of every delegation (`crate::delegation`): any service of the mesh (it is forwarded
/// hop to hop).
pub const DELEGATION_AUDIENCE: &str = "lab-mesh-delegation";
/// Lifetime of a delegation: a request's work, retries included, fits well inside it.
pub const DELEGATION_TTL: Duration = Duration::from_secs(60);
/// Clock skew tolerated between processes.
pub const LEEWAY_SECONDS: u64 = 5;
/// Entries beyond which the caches drop what expired (and, if still full, everything).
const CACHE_CAPACITY: usize = 20_000;

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    iss: String,
    aud: String,
    iat: u64,
    exp: u64,
    #[serde(flatten)]
    principal: Principal,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Mints tokens signed with one process's key.
#[derive(Clone, Debug)]
pub struct TokenIssuer {
    inner: Arc<IssuerInner>,
}

/// A minted token with what it was minted for and the unix time after which it is minted afresh.
#[derive(Debug)]
struct Minted {
    audience: String,
    principal: Principal,
    token: Arc<str>,
    refresh_at: u64,
}

/// Minted tokens by the hash of (audience, principal), so a lookup allocates nothing.
type MintedTokens = HashMap<u64, Vec<Minted>>;

fn mint_key(audience: &str, principal: &Principal) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    audience.hash(&mut hasher);
    principal.hash(&mut hasher);
    hasher.finish()
}

#[derive(Debug)]
struct IssuerInner {
    issuer: String,
    key: SigningKey,
    cache: Mutex<MintedTokens>,
}

impl TokenIssuer {
    /// An issuer named `issuer` (the process's service name) signing with `key`.
    pub fn new(issuer: &str, key: SigningKey) -> Self {
        Self {
            inner: Arc::new(IssuerInner {
                issuer: issuer.to_owned(),
                key,
                cache: Mutex::default(),
            }),
        }
    }

    /// The issuer name.
    pub fn name(&self) -> &str {
        &self.inner.issuer
    }

    /// The signing key (it also signs this process's events, `crate::event_signing`).
    pub fn signing_key(&self) -> &SigningKey {
        &self.inner.key
    }

    /// A token carrying `principal` for `audience`, reused while more than half its life remains.
    pub fn token(&self, principal: &Principal, audience: &str) -> Arc<str> {
        let now = unix_now();
        let key = mint_key(audience, principal);
        let same = |minted: &Minted| minted.audience == audience && minted.principal == *principal;
        if let Some(minted) = lock(&self.inner.cache)
            .get(&key)
            .and_then(|bucket| bucket.iter().find(|minted| same(minted)))
            && now < minted.refresh_at
        {
            return Arc::clone(&minted.token);
        }
        let token: Arc<str> = self.mint(principal, audience, TOKEN_TTL).into();
        let mut cache = lock(&self.inner.cache);
        if cache.len() >= CACHE_CAPACITY {
            cache.retain(|_, bucket| {
                bucket.retain(|minted| now < minted.refresh_at);
                !bucket.is_empty()
            });
            if cache.len() >= CACHE_CAPACITY {
                cache.clear();
            }
        }
        let bucket = cache.entry(key).or_default();
        bucket.retain(|minted| !same(minted));
        bucket.push(Minted {
            audience: audience.to_owned(),
            principal: principal.clone(),
            token: Arc::clone(&token),
            refresh_at: now + TOKEN_TTL.as_secs() / 2,
        });
        token
    }

    /// A token of this service acting for `customer_id`, for `audience`.
    pub fn service_token(&self, audience: &str, customer_id: Option<uuid::Uuid>) -> Arc<str> {
        self.token(&Principal::service(&self.inner.issuer, customer_id), audience)
    }

    /// Signs a fresh token that lives `ttl` (not cached).
    pub fn mint(&self, principal: &Principal, audience: &str, ttl: Duration) -> String {
        let now = unix_now();
        let claims = Claims {
            iss: self.inner.issuer.clone(),
            aud: audience.to_owned(),
            iat: now,
            exp: now + ttl.as_secs(),
            principal: principal.clone(),
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.inner.key.kid.clone());
        // A parsed Ed25519 key signing claims of strings and numbers cannot fail.
        jsonwebtoken::encode(&header, &claims, &self.inner.key.encoding).unwrap_or_default()
    }
}

/// The claims of a delegation (`crate::delegation`): the gateway lets the mesh act for one
/// customer request.
#[derive(Debug, Serialize, Deserialize)]
struct DelegationClaims {
    iss: String,
    aud: String,
    iat: u64,
    exp: u64,
    /// The API key the request authenticated with.
    sub: String,
    /// The customer.
    cid: uuid::Uuid,
    /// The key's scopes.
    #[serde(default)]
    scp: Vec<String>,
    /// The request id (`X-Request-Id`).
    #[serde(default)]
    rid: String,
}

/// A verified delegation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delegation {
    pub customer_id: uuid::Uuid,
    pub key_id: String,
    pub scopes: Vec<String>,
    pub request_id: String,
}

impl TokenIssuer {
    /// A delegation for the customer request of `principal` (a customer principal) with id
    /// `request_id`: signed by this issuer (only the gateway's are believed), for every service
    /// of the mesh, lasting [`DELEGATION_TTL`]. Not cached: one per request.
    pub fn delegation(&self, principal: &Principal, request_id: &str) -> Option<String> {
        let customer = principal
            .customer_id
            .filter(|_| principal.kind == PrincipalKind::Customer)?;
        let now = unix_now();
        let claims = DelegationClaims {
            iss: self.inner.issuer.clone(),
            aud: DELEGATION_AUDIENCE.to_owned(),
            iat: now,
            exp: now + DELEGATION_TTL.as_secs(),
            sub: principal.subject.clone(),
            cid: customer,
            scp: principal.scopes.clone(),
            rid: request_id.to_owned(),
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.inner.key.kid.clone());
        jsonwebtoken::encode(&header, &claims, &self.inner.key.encoding).ok()
    }
}

/// Verifies the tokens addressed to one service.
#[derive(Clone, Debug)]
pub struct TokenVerifier {
    inner: Arc<VerifierInner>,
}

#[derive(Debug)]
struct VerifierInner {
    audience: String,
    keys: TrustedKeys,
    /// Revoked operators and credentials, checked on every staff token (none: not checked).
    revocations: Option<StaffRevocations>,
    /// token → (principal, issued at, expiry); only tokens that verified are kept.
    cache: Mutex<HashMap<Arc<str>, VerifiedToken>>,
}

/// A verified token's principal with its `iat` and `exp` (unix seconds).
#[derive(Clone, Debug)]
struct VerifiedToken {
    principal: Principal,
    issued_at: u64,
    expires: u64,
}

fn refused() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthenticated,
        "the internal principal token is missing or invalid",
    )
}

impl TokenVerifier {
    /// A verifier of tokens for `audience` signed by `keys`.
    pub fn new(audience: &str, keys: TrustedKeys) -> Self {
        Self {
            inner: Arc::new(VerifierInner {
                audience: audience.to_owned(),
                keys,
                revocations: None,
                cache: Mutex::default(),
            }),
        }
    }

    /// The same verifier that also refuses the staff tokens `revocations` names (and every
    /// staff token while that list is out of date).
    pub fn with_staff_revocations(&self, revocations: StaffRevocations) -> Self {
        Self {
            inner: Arc::new(VerifierInner {
                audience: self.inner.audience.clone(),
                keys: self.inner.keys.clone(),
                revocations: Some(revocations),
                cache: Mutex::default(),
            }),
        }
    }

    /// The audience this verifier accepts.
    pub fn audience(&self) -> &str {
        &self.inner.audience
    }

    /// The trust set (it also verifies events, `crate::event_signing`).
    pub fn trusted_keys(&self) -> &TrustedKeys {
        &self.inner.keys
    }

    /// Verifies `token` and returns its principal; `unauthenticated` when the signature, key,
    /// issuer, audience or lifetime is wrong, the issuer may not sign that kind of principal, a
    /// staff principal names no operator id, or its operator or credential was revoked.
    pub fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let now = unix_now();
        let cached = lock(&self.inner.cache)
            .get(token)
            .filter(|verified| now <= verified.expires + LEEWAY_SECONDS)
            .cloned();
        let verified = match cached {
            Some(verified) => verified,
            None => {
                let verified = self.verify_signature(token)?;
                let mut cache = lock(&self.inner.cache);
                if cache.len() >= CACHE_CAPACITY {
                    cache.retain(|_, verified| now <= verified.expires + LEEWAY_SECONDS);
                    if cache.len() >= CACHE_CAPACITY {
                        cache.clear();
                    }
                }
                cache.insert(token.into(), verified.clone());
                verified
            }
        };
        if let Some(revocations) = &self.inner.revocations
            && verified.principal.kind == PrincipalKind::Staff
        {
            revocations.check(&verified.principal, verified.issued_at)?;
        }
        Ok(verified.principal)
    }

    /// Verifies a delegation (`crate::delegation`): signed by a trusted key of the gateway, for
    /// the mesh, unexpired. `forbidden` otherwise.
    pub fn verify_delegation(&self, token: &str) -> Result<Delegation, ApiError> {
        let refused = || ApiError::new(ErrorCode::Forbidden, "the delegation is missing or invalid");
        let header = jsonwebtoken::decode_header(token).map_err(|_| refused())?;
        if header.alg != Algorithm::EdDSA {
            return Err(refused());
        }
        let kid = header.kid.ok_or_else(refused)?;
        let trusted = self.inner.keys.by_kid.get(&kid).ok_or_else(refused)?;
        if trusted.issuer != GATEWAY_ISSUER {
            tracing::warn!(issuer = %trusted.issuer, "a delegation signed by a key that is not the gateway's");
            return Err(refused());
        }
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.set_issuer(&[GATEWAY_ISSUER]);
        validation.set_audience(&[DELEGATION_AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECONDS;
        let claims = jsonwebtoken::decode::<DelegationClaims>(token, &trusted.decoding, &validation)
            .map_err(|_| refused())?
            .claims;
        Ok(Delegation {
            customer_id: claims.cid,
            key_id: claims.sub,
            scopes: claims.scp,
            request_id: claims.rid,
        })
    }

    fn verify_signature(&self, token: &str) -> Result<VerifiedToken, ApiError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| refused())?;
        if header.alg != Algorithm::EdDSA {
            return Err(refused());
        }
        let kid = header.kid.ok_or_else(refused)?;
        let trusted = self.inner.keys.by_kid.get(&kid).ok_or_else(refused)?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.set_issuer(&[&trusted.issuer]);
        validation.set_audience(&[&self.inner.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = LEEWAY_SECONDS;
        let data =
            jsonwebtoken::decode::<Claims>(token, &trusted.decoding, &validation).map_err(|_| refused())?;
        let Claims {
            iss,
            iat,
            exp,
            principal,
            ..
        } = data.claims;
        let may_sign = match principal.kind {
            PrincipalKind::Customer => iss == GATEWAY_ISSUER,
            PrincipalKind::Staff => iss == IDENTITY_ISSUER,
            PrincipalKind::Service => iss == principal.subject,
        };
        if !may_sign {
            tracing::warn!(issuer = %iss, kind = ?principal.kind, subject = %principal.subject, "a token's issuer may not sign its principal");
            return Err(refused());
        }
        // Four eyes and revocation need the operator's id: a staff token without one (issued
        // before operator ids) is refused, and labctl asks for a new one with each command.
        if principal.kind == PrincipalKind::Staff && principal.operator_id.is_none() {
            tracing::warn!(subject = %principal.subject, "a staff token without an operator id");
            return Err(refused());
        }
        Ok(VerifiedToken {
            principal,
            issued_at: iat,
            expires: exp,
        })
    }
}

#[cfg(feature = "testing")]
pub mod testing;
#[cfg(test)]
mod tests;

//! Identity use cases: create and list customers, create, list and revoke API keys (staff only;
//! a revocation is announced to every gateway replica, see [`crate::revocations`]; the operator
//! who acts is recorded with each change), and verify a presented API key (the gateway, on a
//! miss of its key cache; the key's `last_used_at` is written at most once a minute per key).

use crate::domain::api_key;
use crate::domain::api_key::PresentedKey;
use crate::domain::customer::{ApiKey, Customer, KeyRef, NewApiKey, NewCustomer};
use crate::repo;
use crate::revocations::KeyRevocations;
use platform::error::{ApiError, ErrorCode, unique_violation};
use secrecy::SecretString;
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How often `last_used_at` is written per key at most.
const LAST_USED_INTERVAL: Duration = Duration::from_secs(60);
/// Size beyond which old `last_used` marks are swept.
const SWEEP_ABOVE: usize = 10_000;

/// What a presented API key turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verification {
    /// The secret matches a key that is not revoked.
    Valid(ApiKey),
    /// Malformed, or no key has this public id.
    Unknown,
    /// A key has this public id, but the secret does not match.
    WrongSecret,
    /// The secret matches a revoked key.
    Revoked,
}

/// Identity use cases over identity-svc's database.
#[derive(Clone)]
pub struct IdentityService {
    pool: PgPool,
    pepper: SecretString,
    revocations: KeyRevocations,
    /// When each key's use was last written.
    last_used: Arc<Mutex<HashMap<Uuid, Instant>>>,
}

/// A created key with its plaintext, which is returned once and never stored.
pub struct CreatedKey {
    pub key: ApiKey,
    pub plaintext: SecretString,
}

impl IdentityService {
    /// Builds the service over `pool`, deriving verifiers with `pepper` and announcing
    /// revocations through `revocations`.
    pub fn new(pool: PgPool, pepper: SecretString, revocations: KeyRevocations) -> Self {
        Self {
            pool,
            pepper,
            revocations,
            last_used: Arc::default(),
        }
    }

    /// Verifies a presented key (`svc_live_<public-id>_<secret>`) against its stored verifier in
    /// constant time; a valid key's use is recorded.
    pub async fn verify_api_key(&self, presented: &str) -> Result<Verification, ApiError> {
        let Some(presented) = PresentedKey::parse(presented.trim()) else {
            return Ok(Verification::Unknown);
        };
        let Some(stored) = repo::key_credentials(&self.pool, &presented.public_id).await? else {
            return Ok(Verification::Unknown);
        };
        if !presented.matches(&self.pepper, &stored.verifier) {
            return Ok(Verification::WrongSecret);
        }
        if stored.key.revoked_at.is_some() {
            return Ok(Verification::Revoked);
        }
        self.note_use(stored.key.id);
        Ok(Verification::Valid(stored.key))
    }

    /// Writes `last_used_at` in the background when the last write is a minute old.
    fn note_use(&self, key_id: Uuid) {
        let now = Instant::now();
        {
            let mut last_used = self
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
        let pool = self.pool.clone();
        tokio::spawn(async move {
            if let Err(error) = repo::touch_last_used(&pool, key_id).await {
                tracing::warn!(%key_id, %error, "could not record key use");
            }
        });
    }

    /// Creates a customer, or returns the existing one with the same email (`false`).
    pub async fn create_customer(
        &self,
        operator: &str,
        customer: NewCustomer,
    ) -> Result<(Customer, bool), ApiError> {
        if let Some(created) = repo::insert_customer(&self.pool, Uuid::now_v7(), &customer, operator).await? {
            tracing::info!(customer_id = %created.id, operator, "customer created");
            return Ok((created, true));
        }
        let existing = repo::customer_by_email(&self.pool, &customer.email)
            .await?
            .ok_or_else(|| ApiError::internal("customer email conflicted but no customer has it"))?;
        Ok((existing, false))
    }

    /// Lists every customer.
    pub async fn list_customers(&self) -> Result<Vec<Customer>, ApiError> {
        Ok(repo::list_customers(&self.pool).await?)
    }

    /// One customer; `not_found` when absent.
    pub async fn get_customer(&self, id: Uuid) -> Result<Customer, ApiError> {
        repo::customer_by_id(&self.pool, id)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "customer not found"))
    }

    /// Creates a key for an existing customer; `not_found` when the customer does not exist.
    pub async fn create_api_key(&self, operator: &str, key: NewApiKey) -> Result<CreatedKey, ApiError> {
        self.require_customer(key.customer_id).await?;
        // A public-id collision needs two equal 16-character random draws; retry once anyway.
        for _ in 0..2 {
            let generated = api_key::generate(&self.pepper).map_err(ApiError::internal)?;
            match repo::insert_api_key(
                &self.pool,
                Uuid::now_v7(),
                &key,
                &generated.public_id,
                &generated.verifier,
                operator,
            )
            .await
            {
                Ok(stored) => {
                    tracing::info!(key_id = %stored.id, customer_id = %stored.customer_id, operator, "api key created");
                    return Ok(CreatedKey {
                        key: stored,
                        plaintext: generated.plaintext,
                    });
                }
                Err(error) if unique_violation(&error).as_deref() == Some(repo::PUBLIC_ID_CONSTRAINT) => {
                    continue;
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(ApiError::internal("two public id collisions in a row"))
    }

    /// Lists a customer's keys; `not_found` when the customer does not exist.
    pub async fn list_api_keys(&self, customer_id: Uuid) -> Result<Vec<ApiKey>, ApiError> {
        self.require_customer(customer_id).await?;
        Ok(repo::list_api_keys(&self.pool, customer_id).await?)
    }

    /// Revokes a key by id or public id (idempotent); `not_found` when no such key exists.
    pub async fn revoke_api_key(&self, operator: &str, key: KeyRef) -> Result<ApiKey, ApiError> {
        let revoked = repo::revoke_api_key(&self.pool, &key, operator)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "no such api key"))?;
        tracing::info!(key_id = %revoked.id, operator, "api key revoked");
        self.revocations.revoked(&revoked.public_id).await;
        Ok(revoked)
    }

    /// Turns a customer's sandbox flag on or off as `operator` (`customer`: UUID or email);
    /// when it changed, every gateway replica forgets the customer's keys (the revocation
    /// channel evicts), so each key's next request carries the new flag. `not_found` when no
    /// such customer exists.
    pub async fn set_customer_sandbox(
        &self,
        operator: &str,
        customer: &str,
        sandbox: bool,
    ) -> Result<(Customer, bool), ApiError> {
        let not_found = || ApiError::field(ErrorCode::NotFound, "customer", "no such customer");
        let customer = customer.trim();
        let id = match Uuid::parse_str(customer) {
            Ok(id) => id,
            Err(_) => {
                repo::customer_by_email(&self.pool, &customer.to_lowercase())
                    .await?
                    .ok_or_else(not_found)?
                    .id
            }
        };
        let (customer, changed) = repo::set_sandbox(&self.pool, id, sandbox, operator)
            .await?
            .ok_or_else(not_found)?;
        if changed {
            tracing::info!(customer_id = %customer.id, sandbox, operator, "customer sandbox flag changed");
            for public_id in repo::key_public_ids(&self.pool, customer.id).await? {
                self.revocations.revoked(&public_id).await;
            }
        }
        Ok((customer, changed))
    }

    async fn require_customer(&self, customer_id: Uuid) -> Result<(), ApiError> {
        if repo::customer_exists(&self.pool, customer_id).await? {
            Ok(())
        } else {
            Err(ApiError::field(
                ErrorCode::NotFound,
                "customerId",
                "no such customer",
            ))
        }
    }
}

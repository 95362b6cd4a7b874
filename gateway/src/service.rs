//! Identity use cases (staff only): create and list customers, create, list and revoke API keys
//! (a revocation is announced to every gateway replica, see [`crate::revocations`]); the operator
//! who acts is recorded with each change.

use crate::domain::api_key;
use crate::domain::customer::{ApiKey, Customer, KeyRef, NewApiKey, NewCustomer};
use crate::repo;
use crate::revocations::Revocations;
use platform::error::{ApiError, ErrorCode, unique_violation};
use secrecy::SecretString;
use sqlx::PgPool;
use uuid::Uuid;

/// Identity use cases over the gateway's database.
#[derive(Clone)]
pub struct IdentityService {
    pool: PgPool,
    pepper: SecretString,
    revocations: Revocations,
}

/// A created key with its plaintext, which is returned once and never stored.
pub struct CreatedKey {
    pub key: ApiKey,
    pub plaintext: SecretString,
}

impl IdentityService {
    /// Builds the service over `pool`, deriving verifiers with `pepper` and announcing
    /// revocations through `revocations`.
    pub fn new(pool: PgPool, pepper: SecretString, revocations: Revocations) -> Self {
        Self {
            pool,
            pepper,
            revocations,
        }
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

//! Transactional idempotency for mutating operations that carry an `Idempotency-Key`: the one
//! helper every idempotent use case runs under ([`IdempotencyStore::run`]).
//!
//! 1. The gRPC adapter reads the key with [`IdempotencyKey::from_grpc`], which binds it to the
//!    canonical request bytes: the calling principal's subject and the exact encoded message.
//! 2. The use case names its customer and operation ([`IdempotencyKey::call`]); the fingerprint
//!    is computed there, and only there, from the operation and the canonical bytes.
//! 3. `run` claims the key (a committed `in_progress` row with a lease) and runs the use case,
//!    which stores its answer with [`Attempt::complete`] inside its own business transaction, so
//!    the stored answer exists exactly when the effect committed. A use case in two transactions
//!    saves a recovery point ([`Attempt::save_recovery`]) in the first; a retry that takes an
//!    expired claim over resumes from it ([`Attempt::recovery`]) instead of doing the work again.
//! 4. A failure is settled by [`replays`]: a client error about the request is stored and
//!    replays identically; a transient failure (5xx, unavailable) or a refusal that depends on
//!    something other than the request releases the claim, so a retry runs again. A use case
//!    marks any other failure that must not be stored with [`Attempt::transient`].
//!
//! Then, for the same customer, operation and key:
//!
//! * the same caller and request again replays the stored answer (success or client error),
//!   marked as a replay ([`Answer::replayed`], `idempotent-replayed: true` on the wire);
//! * another request, or the same request from another caller (another API key of the same
//!   customer), is `idempotency_key_reused` (409): only the caller that ran it can replay an
//!   answer, which matters when the answer carries a secret;
//! * the same key while the first still runs waits up to `wait` for it to finish and then
//!   replays; past that it is `idempotency_request_in_progress` (409, `Retry-After`);
//! * a claim whose lease expired (its worker died, or gave up after a dependency failed) is taken
//!   over with the recovery point the first worker saved.
//!
//! Each service's schema has the table `idempotency_keys` (see the services' first migration).
//! Housekeeping (`crate::housekeeping`) deletes completed records 24 hours after the first
//! request, and claims abandoned without an outcome 24 hours after their lease ended.

mod codec;
mod store;

pub use codec::{Codec, Json};
pub use store::{Claim, IdempotencyScope, IdempotencyStore, StoredOutcome, TABLE_DDL_EXAMPLE, Ticket};

use crate::error::{ApiError, ErrorCode};
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use std::sync::atomic::{AtomicBool, Ordering};
use uuid::Uuid;

/// An `Idempotency-Key` as received, with the canonical bytes of the request it came with.
#[derive(Clone, Debug)]
pub struct IdempotencyKey {
    key: String,
    canonical: Vec<u8>,
}

impl IdempotencyKey {
    /// Binds `key` to `canonical`, the exact bytes that identify the request and its caller.
    pub fn new(key: String, canonical: Vec<u8>) -> Self {
        Self { key, canonical }
    }

    /// Reads the required key of a gRPC request (`idempotency_key_missing` without one) and
    /// binds it to the verified caller and the encoded message.
    pub fn from_grpc<M: Message>(request: &tonic::Request<M>) -> Result<Self, tonic::Status> {
        let key = crate::grpc::idempotency_key(request)?;
        let caller = crate::grpc::principal(request)?;
        let mut canonical = caller.subject.into_bytes();
        canonical.push(0);
        request
            .get_ref()
            .encode(&mut canonical)
            .map_err(ApiError::internal)?;
        Ok(Self::new(key, canonical))
    }

    /// As [`from_grpc`](Self::from_grpc) for an operation whose key is optional: `None` without one.
    pub fn optional_from_grpc<M: Message>(
        request: &tonic::Request<M>,
    ) -> Result<Option<Self>, tonic::Status> {
        if request.metadata().get(crate::grpc::IDEMPOTENCY_KEY).is_none() {
            return Ok(None);
        }
        Self::from_grpc(request).map(Some)
    }

    /// The key as `operation` of `customer_id`, with the fingerprint of the request.
    pub fn call(self, customer_id: Uuid, operation: &'static str) -> IdempotentCall {
        let mut hasher = Sha256::new();
        hasher.update(operation.as_bytes());
        hasher.update([0]);
        hasher.update(&self.canonical);
        IdempotentCall {
            scope: IdempotencyScope {
                customer_id,
                operation,
                key: self.key,
            },
            fingerprint: hasher.finalize().to_vec(),
        }
    }
}

/// One idempotent call: the key's scope and the fingerprint of the request.
#[derive(Clone, Debug)]
pub struct IdempotentCall {
    pub scope: IdempotencyScope,
    pub fingerprint: Vec<u8>,
}

/// The answer of an idempotent use case and whether it replays a stored one.
#[derive(Debug)]
pub struct Answer<T> {
    pub result: Result<T, ApiError>,
    /// True when the answer (success or client error) is a stored replay.
    pub replayed: bool,
}

impl<T> Answer<T> {
    /// An answer given now, not replayed.
    pub fn fresh(result: Result<T, ApiError>) -> Self {
        Self {
            result,
            replayed: false,
        }
    }

    /// The gRPC response of the answer, built by `respond`; replays (successes and errors
    /// alike) carry `idempotent-replayed: true` for the gateway to pass on.
    pub fn into_response<R>(self, respond: impl FnOnce(T) -> R) -> Result<tonic::Response<R>, tonic::Status> {
        crate::grpc::replayable_response(self.result.map(respond), self.replayed)
    }
}

/// Whether a failure is stored as the key's outcome and replayed: client errors about the
/// request are; server-side failures are not (a retry may succeed), nor are refusals about the
/// caller or the moment (authentication, authorization, rate limits, the idempotency conflicts
/// themselves) or ones that pass once the customer changes something else (the endpoint limit).
pub fn replays(error: &ApiError) -> bool {
    (400..500).contains(&error.code.http_status())
        && !matches!(
            error.code,
            ErrorCode::IdempotencyRequestInProgress
                | ErrorCode::IdempotencyKeyReused
                | ErrorCode::RateLimited
                | ErrorCode::Unauthenticated
                | ErrorCode::Forbidden
                | ErrorCode::InsufficientScope
                | ErrorCode::WebhookEndpointLimitReached
        )
}

/// The claimed key a use case runs under (see [`IdempotencyStore::run`]).
pub struct Attempt<'a, C> {
    store: &'a IdempotencyStore,
    codec: &'a C,
    ticket: Ticket,
    recovery: Option<serde_json::Value>,
    completed: AtomicBool,
    transient: AtomicBool,
}

impl<C> Attempt<'_, C> {
    /// The recovery point an earlier, interrupted attempt saved; `None` on a first attempt.
    pub fn recovery<R: DeserializeOwned>(&self) -> Option<R> {
        let point = self.recovery.clone()?;
        serde_json::from_value(point)
            .inspect_err(|error| tracing::warn!(%error, "ignoring an unreadable recovery point"))
            .ok()
    }

    /// Saves a recovery point (for example the id of a row already created) in the caller's
    /// transaction, so that a take-over resumes instead of redoing the work.
    pub async fn save_recovery<R: Serialize>(
        &self,
        tx: &mut PgConnection,
        point: &R,
    ) -> Result<(), ApiError> {
        let point = serde_json::to_value(point).map_err(ApiError::internal)?;
        self.store.save_recovery(tx, &self.ticket, &point).await
    }

    /// Stores `answer` as the key's outcome in the caller's business transaction; fails with a
    /// conflict when the lease was lost to another worker (the transaction must then roll back).
    pub async fn complete<T>(&self, tx: &mut PgConnection, answer: &T) -> Result<(), ApiError>
    where
        C: Codec<T>,
    {
        let outcome = StoredOutcome::Success(self.codec.encode(answer)?);
        self.store.complete(tx, &self.ticket, &outcome).await?;
        self.completed.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Marks `error` as not to be stored even though [`replays`] would store it (it depends on
    /// something that may change, such as a DNS answer): the claim is released and a retry runs
    /// again. Returns the error to answer.
    pub fn transient(&self, error: ApiError) -> ApiError {
        self.transient.store(true, Ordering::Relaxed);
        error
    }
}

impl IdempotencyStore {
    /// Runs `work` once for `call`, or replays the stored answer.
    ///
    /// A replay decodes the stored answer with `codec` and returns it marked as replayed without
    /// running `work`. Otherwise `work` runs with the [`Attempt`] and must store its answer with
    /// [`Attempt::complete`] in the transaction that commits its effect. Its failure is stored
    /// (and replayed) when [`replays`] says so and `work` did not mark it transient; otherwise
    /// the claim is released, keeping any recovery point for the retry.
    pub async fn run<T, C, W>(&self, pool: &PgPool, call: IdempotentCall, codec: &C, work: W) -> Answer<T>
    where
        C: Codec<T>,
        W: AsyncFnOnce(&Attempt<'_, C>) -> Result<T, ApiError>,
    {
        let (ticket, recovery) = match self.claim(pool, &call.scope, &call.fingerprint).await {
            Ok(Claim::Run { ticket, recovery }) => (ticket, recovery),
            Ok(Claim::Replay(StoredOutcome::Success(stored))) => {
                return Answer {
                    result: codec.decode(&stored),
                    replayed: true,
                };
            }
            Ok(Claim::Replay(StoredOutcome::Failure(error))) => {
                return Answer {
                    result: Err(error),
                    replayed: true,
                };
            }
            Err(error) => return Answer::fresh(Err(error)),
        };
        let attempt = Attempt {
            store: self,
            codec,
            ticket,
            recovery,
            completed: AtomicBool::new(false),
            transient: AtomicBool::new(false),
        };
        let result = work(&attempt).await;
        match &result {
            Ok(answer) if !attempt.completed.load(Ordering::Relaxed) => {
                tracing::error!(
                    operation = call.scope.operation,
                    "an idempotent use case did not store its answer; storing it now"
                );
                let stored = match codec.encode(answer) {
                    Ok(bytes) => {
                        self.store_outcome(pool, &attempt.ticket, StoredOutcome::Success(bytes))
                            .await
                    }
                    Err(error) => Err(error),
                };
                if let Err(error) = stored {
                    tracing::warn!(%error, "could not store the answer; releasing the claim");
                    self.release(pool, &attempt.ticket).await;
                }
            }
            Ok(_) => {}
            Err(error) if attempt.transient.load(Ordering::Relaxed) || !replays(error) => {
                self.release(pool, &attempt.ticket).await;
            }
            Err(error) => {
                let stored = self
                    .store_outcome(pool, &attempt.ticket, StoredOutcome::Failure(error.clone()))
                    .await;
                if let Err(store_error) = stored {
                    tracing::warn!(error = %store_error, "could not store a failed outcome; releasing the claim");
                    self.release(pool, &attempt.ticket).await;
                }
            }
        }
        Answer::fresh(result)
    }

    /// Stores an outcome in a transaction of its own.
    async fn store_outcome(
        &self,
        pool: &PgPool,
        ticket: &Ticket,
        outcome: StoredOutcome,
    ) -> Result<(), ApiError> {
        let mut tx = pool.begin().await?;
        self.complete(&mut tx, ticket, &outcome).await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_about_the_request_replay_and_the_rest_releases() {
        let replayed = |code| replays(&ApiError::new(code, "refused"));
        for code in [
            ErrorCode::InvalidRequest,
            ErrorCode::ConfirmationRequired,
            ErrorCode::QuoteExpired,
            ErrorCode::QuoteAlreadyConsumed,
            ErrorCode::NotFound,
            ErrorCode::SpendLimitExceeded,
        ] {
            assert!(replayed(code), "{code:?} is stored");
        }
        for code in [
            ErrorCode::Internal,
            ErrorCode::ServiceUnavailable,
            ErrorCode::CatalogUnavailable,
            ErrorCode::IdempotencyRequestInProgress,
            ErrorCode::IdempotencyKeyReused,
            ErrorCode::RateLimited,
            ErrorCode::Unauthenticated,
            ErrorCode::InsufficientScope,
            ErrorCode::WebhookEndpointLimitReached,
        ] {
            assert!(!replayed(code), "{code:?} releases the claim");
        }
    }

    #[test]
    fn the_fingerprint_covers_the_operation_and_the_canonical_bytes() {
        let customer = Uuid::now_v7();
        let fingerprint = |operation, canonical: &[u8]| {
            IdempotencyKey::new("key-0001".into(), canonical.to_vec())
                .call(customer, operation)
                .fingerprint
        };
        let base = fingerprint("orders.create", b"alice\0request");
        assert_eq!(base, fingerprint("orders.create", b"alice\0request"));
        assert_ne!(base, fingerprint("catalog.create_quote", b"alice\0request"));
        assert_ne!(base, fingerprint("orders.create", b"bob\0request"));
    }
}

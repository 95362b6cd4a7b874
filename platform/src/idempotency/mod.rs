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

mod attempt;
mod codec;
mod store;

pub use attempt::Attempt;
pub use codec::{Codec, Json};
pub use store::{Claim, IdempotencyScope, IdempotencyStore, StoredOutcome, TABLE_DDL_EXAMPLE, Ticket};

use crate::error::{ApiError, ErrorCode};
use prost::Message;
use sha2::{Digest, Sha256};
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
/// themselves) or ones that pass once the customer changes something else (the endpoint limit, a consent
/// not yet recorded).
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
                | ErrorCode::ConsentRequired
        )
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
            ErrorCode::ConsentRequired,
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

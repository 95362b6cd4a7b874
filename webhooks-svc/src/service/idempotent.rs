//! Idempotency of the four mutations on top of `platform::idempotency`.
//!
//! The fingerprint covers the operation, the calling principal's subject (the API key id) and
//! the encoded request, so only the same key can replay an answer (and recover a secret); the
//! same `Idempotency-Key` from another key of the customer is 409 `idempotency_key_reused`.
//! Stored answers are sealed with the keyring (context: operation and customer) and opened on
//! replay. Client errors about the request are stored and replay identically; transient
//! failures, and refusals that depend on the customer's other resources (the endpoint limit),
//! release the claim, so a retry after a change runs again.

use super::WebhooksService;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Claim, IdempotencyScope, StoredOutcome, Ticket, fingerprint};
use platform::principal::Principal;
use prost::Message;
use sqlx::PgConnection;
use uuid::Uuid;

/// An answer and whether it replays a stored one.
#[derive(Debug)]
pub struct Outcome<T> {
    pub result: Result<T, ApiError>,
    /// True when the answer (success or client error) is a stored replay.
    pub replayed: bool,
}

impl<T> Outcome<T> {
    /// A fresh (not replayed) answer.
    pub fn fresh(result: Result<T, ApiError>) -> Self {
        Self {
            result,
            replayed: false,
        }
    }
}

/// A claimed key to run under, or the stored answer.
pub(super) enum Started<T> {
    Run {
        ticket: Ticket,
        recovery: Option<serde_json::Value>,
    },
    Replayed(Outcome<T>),
}

/// The key's binding: who, which operation, which key.
pub(super) struct Binding<'a> {
    pub customer_id: Uuid,
    pub principal: &'a Principal,
    pub operation: &'static str,
    pub key: String,
}

fn sealing_context(operation: &str, customer_id: Uuid) -> Vec<u8> {
    format!("idempotency:{operation}:{customer_id}").into_bytes()
}

impl WebhooksService {
    /// Claims the key for `request`, or returns the stored answer (opened and decoded).
    pub(super) async fn start<T: Message + Default>(
        &self,
        binding: Binding<'_>,
        request: &impl Message,
    ) -> Result<Started<T>, ApiError> {
        let mut canonical = binding.principal.subject.as_bytes().to_vec();
        canonical.push(0);
        canonical.extend(request.encode_to_vec());
        let scope = IdempotencyScope {
            customer_id: binding.customer_id,
            operation: binding.operation,
            key: binding.key,
        };
        let bound = fingerprint(binding.operation, &canonical);
        match self.idempotency.claim(&self.pool, &scope, &bound).await? {
            Claim::Run { ticket, recovery } => Ok(Started::Run { ticket, recovery }),
            Claim::Replay(StoredOutcome::Failure(error)) => Ok(Started::Replayed(Outcome {
                result: Err(error),
                replayed: true,
            })),
            Claim::Replay(StoredOutcome::Success(sealed)) => {
                let context = sealing_context(binding.operation, binding.customer_id);
                let result = std::str::from_utf8(&sealed)
                    .map_err(ApiError::internal)
                    .and_then(|sealed| self.keyring.open(sealed, &context).map_err(ApiError::internal))
                    .and_then(|bytes| T::decode(bytes.as_slice()).map_err(ApiError::internal));
                Ok(Started::Replayed(Outcome {
                    result,
                    replayed: true,
                }))
            }
        }
    }

    /// Stores the sealed answer in the caller's business transaction.
    pub(super) async fn complete(
        &self,
        tx: &mut PgConnection,
        ticket: &Ticket,
        operation: &'static str,
        customer_id: Uuid,
        response: &impl Message,
    ) -> Result<(), ApiError> {
        let sealed = self.keyring.seal(
            &response.encode_to_vec(),
            &sealing_context(operation, customer_id),
        );
        self.idempotency
            .complete(tx, ticket, &StoredOutcome::Success(sealed.into_bytes()))
            .await
    }

    /// Stores a client error as the key's answer, or releases the claim after a transient
    /// failure; returns the error to answer.
    pub(super) async fn settle_failure(&self, ticket: &Ticket, error: ApiError) -> ApiError {
        if !replays_identically(&error) {
            self.idempotency.release(&self.pool, ticket).await;
            return error;
        }
        let stored = async {
            let mut tx = self.pool.begin().await?;
            self.idempotency
                .complete(&mut tx, ticket, &StoredOutcome::Failure(error.clone()))
                .await?;
            tx.commit().await?;
            Ok::<(), ApiError>(())
        };
        if let Err(store_error) = stored.await {
            tracing::warn!(error = %store_error, "could not store a failed outcome; releasing the claim");
            self.idempotency.release(&self.pool, ticket).await;
        }
        error
    }

    /// Gives the claim up without storing anything (a retry runs again).
    pub(super) async fn release(&self, ticket: &Ticket) {
        self.idempotency.release(&self.pool, ticket).await;
    }
}

/// Client errors about the request itself replay identically; server-side, idempotency,
/// authorization and endpoint-limit errors do not (the limit passes once an endpoint is deleted).
fn replays_identically(error: &ApiError) -> bool {
    let status = error.code.http_status();
    (400..500).contains(&status)
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

/// An endpoint operation whose caller, endpoint id and idempotency key passed.
pub(super) struct EndpointRun {
    pub customer_id: Uuid,
    pub endpoint_id: Uuid,
    pub ticket: Ticket,
    pub recovery: Option<serde_json::Value>,
}

impl WebhooksService {
    /// Checks the caller and the endpoint id and claims the key for `request`. `Err` is the
    /// answer to give at once: a refusal, or the stored answer of a replay.
    pub(super) async fn start_endpoint_operation<T: Message + Default>(
        &self,
        principal: &Principal,
        key: String,
        operation: &'static str,
        endpoint_id_text: &str,
        request: &impl Message,
    ) -> Result<EndpointRun, Outcome<T>> {
        let refused = |error| Outcome::fresh(Err(error));
        let customer_id = principal.customer().map_err(refused)?;
        let endpoint_id = super::endpoint_id(endpoint_id_text).map_err(refused)?;
        let binding = Binding {
            customer_id,
            principal,
            operation,
            key,
        };
        match self.start(binding, request).await {
            Ok(Started::Run { ticket, recovery }) => Ok(EndpointRun {
                customer_id,
                endpoint_id,
                ticket,
                recovery,
            }),
            Ok(Started::Replayed(outcome)) => Err(outcome),
            Err(error) => Err(refused(error)),
        }
    }
}

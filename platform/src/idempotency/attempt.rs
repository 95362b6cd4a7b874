//! Running a use case under a claimed key: [`IdempotencyStore::run`] and the [`Attempt`] it
//! hands the use case (recovery point, stored answer, transient failures).

use super::{Answer, Claim, Codec, IdempotencyStore, IdempotentCall, StoredOutcome, Ticket, replays};
use crate::error::ApiError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{PgConnection, PgPool};
use std::sync::atomic::{AtomicBool, Ordering};

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

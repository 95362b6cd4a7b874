//! The `idempotency_keys` table of one service schema: claiming a key (with the wait for a
//! concurrent duplicate and the take-over of an expired lease), saving a recovery point, storing
//! the outcome in the caller's transaction, and releasing a claim. These are the steps that
//! [`IdempotencyStore::run`](super::IdempotencyStore::run) composes; use cases call `run`.

use crate::error::{ApiError, ErrorCode};
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Row};
use std::time::Duration;
use uuid::Uuid;

/// What a request is bound to.
#[derive(Clone, Debug)]
pub struct IdempotencyScope {
    pub customer_id: Uuid,
    /// Operation name, for example `orders.create`.
    pub operation: &'static str,
    pub key: String,
}

/// The outcome stored for replays.
#[derive(Clone, Debug, PartialEq)]
pub enum StoredOutcome {
    /// The encoded success response.
    Success(Vec<u8>),
    /// A client error that replays identically.
    Failure(ApiError),
}

/// A held claim on a key; complete it in the business transaction, or release it.
#[derive(Clone, Debug)]
pub struct Ticket {
    scope: IdempotencyScope,
    owner: Uuid,
}

/// Result of claiming a key.
#[derive(Debug)]
pub enum Claim {
    /// The caller runs the operation; `recovery` is what an earlier, interrupted attempt saved.
    Run {
        ticket: Ticket,
        recovery: Option<serde_json::Value>,
    },
    /// The operation already finished; replay this.
    Replay(StoredOutcome),
}

/// The idempotency table of one service schema.
#[derive(Clone, Copy, Debug)]
pub struct IdempotencyStore {
    schema: &'static str,
    /// How long a claim protects a running request before another may take it over.
    lease: Duration,
    /// How long a concurrent duplicate waits for the first to finish before answering 409.
    wait: Duration,
}

impl IdempotencyStore {
    pub const fn new(schema: &'static str) -> Self {
        Self {
            schema,
            lease: Duration::from_secs(30),
            wait: Duration::from_secs(10),
        }
    }

    /// Overrides the lease and wait (tests compress them).
    pub const fn with_timing(mut self, lease: Duration, wait: Duration) -> Self {
        self.lease = lease;
        self.wait = wait;
        self
    }

    /// Claims `scope` for a request with `fingerprint`.
    #[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT idempotency_keys", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT", db.collection.name = "idempotency_keys"))]
    pub async fn claim(
        &self,
        pool: &PgPool,
        scope: &IdempotencyScope,
        fingerprint: &[u8],
    ) -> Result<Claim, ApiError> {
        let deadline = tokio::time::Instant::now() + self.wait;
        let mut pause = Duration::from_millis(10);
        loop {
            let owner = Uuid::new_v4();
            let insert = format!(
                "INSERT INTO {}.idempotency_keys \
                   (customer_id, operation, idempotency_key, fingerprint, state, owner, locked_until) \
                 VALUES ($1, $2, $3, $4, 'in_progress', $5, now() + make_interval(secs => $6)) \
                 ON CONFLICT DO NOTHING",
                self.schema
            );
            let inserted = sqlx::query(AssertSqlSafe(insert))
                .bind(scope.customer_id)
                .bind(scope.operation)
                .bind(&scope.key)
                .bind(fingerprint)
                .bind(owner)
                .bind(self.lease.as_secs_f64())
                .execute(pool)
                .await?;
            if inserted.rows_affected() == 1 {
                return Ok(Claim::Run {
                    ticket: Ticket {
                        scope: scope.clone(),
                        owner,
                    },
                    recovery: None,
                });
            }
            if let Some(claim) = self.inspect(pool, scope, fingerprint, owner).await? {
                return Ok(claim);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::new(
                    ErrorCode::IdempotencyRequestInProgress,
                    "a request with this Idempotency-Key is still in progress",
                )
                .with_details(serde_json::json!({ "retryAfterSeconds": 1 })));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Looks at an existing row: replay, conflict, take-over, or `None` to keep waiting.
    async fn inspect(
        &self,
        pool: &PgPool,
        scope: &IdempotencyScope,
        fingerprint: &[u8],
        new_owner: Uuid,
    ) -> Result<Option<Claim>, ApiError> {
        let select = format!(
            "SELECT fingerprint, state, locked_until < now() AS expired, recovery, outcome_error, outcome \
             FROM {}.idempotency_keys WHERE customer_id = $1 AND operation = $2 AND idempotency_key = $3",
            self.schema
        );
        let Some(row) = sqlx::query(AssertSqlSafe(select))
            .bind(scope.customer_id)
            .bind(scope.operation)
            .bind(&scope.key)
            .fetch_optional(pool)
            .await?
        else {
            // Released between our insert and select: try again at once.
            return Ok(None);
        };
        let stored_fingerprint: Vec<u8> = row.try_get("fingerprint").map_err(ApiError::internal)?;
        if stored_fingerprint != fingerprint {
            return Err(ApiError::new(
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was already used with a different request",
            ));
        }
        let state: String = row.try_get("state").map_err(ApiError::internal)?;
        if state == "completed" {
            let error: Option<serde_json::Value> =
                row.try_get("outcome_error").map_err(ApiError::internal)?;
            let outcome = match error {
                Some(error) => StoredOutcome::Failure(stored_error(error)),
                None => StoredOutcome::Success(row.try_get("outcome").map_err(ApiError::internal)?),
            };
            return Ok(Some(Claim::Replay(outcome)));
        }
        let expired: bool = row.try_get("expired").map_err(ApiError::internal)?;
        if !expired {
            return Ok(None);
        }
        let take_over = format!(
            "UPDATE {}.idempotency_keys SET owner = $4, locked_until = now() + make_interval(secs => $5), updated_at = now() \
             WHERE customer_id = $1 AND operation = $2 AND idempotency_key = $3 \
               AND state = 'in_progress' AND locked_until < now() RETURNING recovery",
            self.schema
        );
        let taken = sqlx::query(AssertSqlSafe(take_over))
            .bind(scope.customer_id)
            .bind(scope.operation)
            .bind(&scope.key)
            .bind(new_owner)
            .bind(self.lease.as_secs_f64())
            .fetch_optional(pool)
            .await?;
        match taken {
            Some(row) => {
                let recovery: Option<serde_json::Value> =
                    row.try_get("recovery").map_err(ApiError::internal)?;
                tracing::info!(
                    operation = scope.operation,
                    "took over an expired idempotency claim"
                );
                Ok(Some(Claim::Run {
                    ticket: Ticket {
                        scope: scope.clone(),
                        owner: new_owner,
                    },
                    recovery,
                }))
            }
            None => Ok(None),
        }
    }

    /// Saves a recovery point (for example the id of a row already created) in the caller's
    /// transaction, so a take-over resumes instead of redoing work.
    pub async fn save_recovery(
        &self,
        tx: &mut PgConnection,
        ticket: &Ticket,
        recovery: &serde_json::Value,
    ) -> Result<(), ApiError> {
        let update = self.owned_update("recovery = $5");
        let result = bind_ticket(sqlx::query(AssertSqlSafe(update)), ticket)
            .bind(recovery)
            .execute(tx)
            .await?;
        still_held(result.rows_affected())
    }

    /// Stores the outcome in the caller's business transaction; fails with a conflict when the
    /// lease was lost to another worker (the transaction must then roll back).
    #[tracing::instrument(name = "db", skip_all, fields(otel.name = "UPDATE idempotency_keys", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "UPDATE", db.collection.name = "idempotency_keys"))]
    pub async fn complete(
        &self,
        tx: &mut PgConnection,
        ticket: &Ticket,
        outcome: &StoredOutcome,
    ) -> Result<(), ApiError> {
        let (bytes, error) = match outcome {
            StoredOutcome::Success(bytes) => (Some(bytes.clone()), None),
            StoredOutcome::Failure(error) => (
                None,
                Some(serde_json::to_value(error).map_err(ApiError::internal)?),
            ),
        };
        let update = self.owned_update("state = 'completed', outcome = $5, outcome_error = $6");
        let result = bind_ticket(sqlx::query(AssertSqlSafe(update)), ticket)
            .bind(bytes)
            .bind(error)
            .execute(tx)
            .await?;
        still_held(result.rows_affected())
    }

    /// Gives the claim up after a transient failure so that a retry may run at once (keeping the
    /// recovery point), or forgets it entirely when nothing was done yet.
    pub async fn release(&self, pool: &PgPool, ticket: &Ticket) {
        let release = format!(
            "WITH gone AS (DELETE FROM {schema}.idempotency_keys WHERE customer_id = $1 AND operation = $2 \
               AND idempotency_key = $3 AND owner = $4 AND state = 'in_progress' AND recovery IS NULL RETURNING 1) \
             UPDATE {schema}.idempotency_keys SET locked_until = now() - interval '1 second', updated_at = now() \
             WHERE customer_id = $1 AND operation = $2 AND idempotency_key = $3 AND owner = $4 AND state = 'in_progress'",
            schema = self.schema
        );
        let result = bind_ticket(sqlx::query(AssertSqlSafe(release)), ticket)
            .execute(pool)
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "could not release an idempotency claim; it expires with its lease");
        }
    }

    /// An update of the row `ticket` still owns (`$1`..`$4` are the ticket, see [`bind_ticket`]).
    fn owned_update(&self, set: &str) -> String {
        format!(
            "UPDATE {}.idempotency_keys SET {set}, updated_at = now() \
             WHERE customer_id = $1 AND operation = $2 AND idempotency_key = $3 AND owner = $4",
            self.schema
        )
    }
}

/// Binds a ticket's key and owner as `$1`..`$4`.
fn bind_ticket<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ticket: &'q Ticket,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(ticket.scope.customer_id)
        .bind(ticket.scope.operation)
        .bind(&ticket.scope.key)
        .bind(ticket.owner)
}

/// `Ok` when the owner's update changed its row; a conflict when the lease was lost.
fn still_held(rows_affected: u64) -> Result<(), ApiError> {
    if rows_affected == 1 {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::IdempotencyRequestInProgress,
        "the idempotency claim was taken over",
    )
    .with_details(serde_json::json!({ "retryAfterSeconds": 1 })))
}

fn stored_error(value: serde_json::Value) -> ApiError {
    let code = value
        .get("code")
        .and_then(|code| code.as_str())
        .and_then(ErrorCode::from_name)
        .unwrap_or(ErrorCode::Internal);
    let message = value
        .get("message")
        .and_then(|message| message.as_str())
        .unwrap_or_default()
        .to_owned();
    let details = value.get("details").cloned();
    ApiError {
        code,
        message,
        details,
    }
}

/// The DDL of the `idempotency_keys` table, for a service's first migration (documentation).
pub const TABLE_DDL_EXAMPLE: &str = "CREATE TABLE <schema>.idempotency_keys (
    customer_id UUID NOT NULL, operation TEXT NOT NULL, idempotency_key TEXT NOT NULL,
    fingerprint BYTEA NOT NULL, state TEXT NOT NULL, owner UUID NOT NULL, locked_until TIMESTAMPTZ NOT NULL,
    recovery JSONB, outcome BYTEA, outcome_error JSONB,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(), updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, operation, idempotency_key))";

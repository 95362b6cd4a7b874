//! Spend envelopes: commit (atomic per key, in one transaction of two statements: the commitment
//! is written, the key's envelope row takes the amount into its running day and month totals and
//! stays locked until the caps are checked and the transaction ends; a refusal rolls both back),
//! release (the totals drop by the amount, exactly once), staff setting the caps, and a key
//! reading its own remainders.

use super::PaymentsService;
use crate::domain::spend::{self, Caps, EnvelopeView, SpendKind, Windows, WithoutEnvelope};
use crate::repo;
use platform::error::ApiError;
use platform::money::Cents;
use sqlx::PgConnection;
use uuid::Uuid;

/// How long an order commitment may wait for its invoice before it is taken for an order that
/// was never placed and released.
pub const UNCONFIRMED_REAP_AGE: chrono::Duration = chrono::Duration::minutes(10);

/// A commitment request.
#[derive(Clone, Debug)]
pub struct SpendCommitment {
    pub customer_id: Uuid,
    pub key_id: String,
    pub kind: SpendKind,
    pub subject_id: String,
    pub amount: Cents,
}

impl PaymentsService {
    /// Commits spend against the key's envelope; `Ok(true)` when the subject was committed
    /// before (nothing changed). 403 `spend_limit_exceeded` with the remainders when a cap (or
    /// the deployment's refusal of keys without an envelope) stops it.
    pub async fn commit_spend(&self, commitment: &SpendCommitment) -> Result<bool, ApiError> {
        if commitment.amount.0 < 0
            || commitment.key_id.trim().is_empty()
            || commitment.subject_id.trim().is_empty()
        {
            return Err(ApiError::field(
                platform::error::ErrorCode::InvalidRequest,
                "amountCents",
                "a commitment needs a key, a subject and an amount of 0 or more",
            ));
        }
        let mut tx = self.pool.begin().await?;
        let committed = self.commit_in(&mut tx, commitment, true).await?;
        tx.commit().await?;
        Ok(committed)
    }

    /// Commits within `tx`; `check` false skips the caps (money already taken).
    pub(super) async fn commit_in(
        &self,
        tx: &mut PgConnection,
        commitment: &SpendCommitment,
        check: bool,
    ) -> Result<bool, ApiError> {
        let SpendCommitment {
            customer_id,
            key_id,
            kind,
            subject_id,
            amount,
        } = commitment;
        let now = platform::time::now();
        // Holds the key's envelope lock shared and the subject's commitment row; an already
        // active commitment changes nothing.
        if !repo::spend::commit(tx, *customer_id, *kind, subject_id, key_id, *amount, now).await? {
            return Ok(true);
        }
        // The envelope row's running totals take the amount, and the row stays locked until the
        // transaction ends, so commitments of one key apply one after the other; a refusal rolls
        // both writes back (the caller drops the transaction).
        let envelope = repo::spend::adjust_totals(tx, key_id, *customer_id, *amount, now, now).await?;
        if check {
            match &envelope {
                None if self.spend_default == WithoutEnvelope::Refuse => {
                    return Err(spend::no_envelope(*amount));
                }
                None => {}
                Some(envelope) => {
                    let windows = Windows::at(now);
                    spend::check(&envelope.caps, envelope.totals.before(&windows, *amount), *amount)?;
                }
            }
        }
        Ok(false)
    }

    /// Releases the subject's commitment; true when one was active.
    /// Lowers a subject's active commitment to `amount` (a cancelled order's kept charge).
    pub async fn reduce_spend(
        &self,
        customer_id: Uuid,
        kind: SpendKind,
        subject_id: &str,
        amount: Cents,
    ) -> Result<bool, ApiError> {
        let mut tx = self.pool.begin().await?;
        let reduced = repo::spend::reduce_to(
            &mut tx,
            customer_id,
            kind,
            subject_id,
            amount,
            platform::time::now(),
        )
        .await?;
        tx.commit().await?;
        Ok(reduced)
    }

    pub async fn release_spend(
        &self,
        customer_id: Uuid,
        kind: SpendKind,
        subject_id: &str,
    ) -> Result<bool, ApiError> {
        let mut tx = self.pool.begin().await?;
        let released =
            repo::spend::release(&mut tx, customer_id, kind, subject_id, platform::time::now()).await?;
        tx.commit().await?;
        Ok(released)
    }

    /// Staff: sets a key's caps.
    pub async fn set_envelope(
        &self,
        operator: &str,
        customer_id: Uuid,
        key_id: &str,
        caps: Caps,
    ) -> Result<EnvelopeView, ApiError> {
        let mut tx = self.pool.begin().await?;
        repo::spend::upsert_envelope(
            &mut tx,
            key_id,
            customer_id,
            &caps,
            operator,
            platform::time::now(),
        )
        .await?;
        tx.commit().await?;
        self.envelope(customer_id, key_id).await
    }

    /// A key's envelope with its commitments of the current UTC day and month.
    pub async fn envelope(&self, customer_id: Uuid, key_id: &str) -> Result<EnvelopeView, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let windows = Windows::at(platform::time::now());
        let envelope = repo::spend::read_envelope(&mut conn, key_id, customer_id).await?;
        let committed = match &envelope {
            Some(envelope) => envelope.totals.committed_in(&windows),
            // No envelope, no totals: what the key's commitments add up to.
            None => repo::spend::committed(&mut conn, key_id, customer_id, &windows).await?,
        };
        Ok(EnvelopeView {
            key_id: key_id.to_owned(),
            customer_id,
            caps: envelope.map(|envelope| envelope.caps),
            committed,
            windows,
            without_envelope: self.spend_default,
        })
    }
}

//! The periodic jobs of payments-svc, run every `jobs_interval` by [`crate::jobs`]:
//!
//! * expiring checkout sessions whose time ran out (ending their PSP side and releasing the
//!   order's spend commitment: its payment expired unpaid; a door pickup's session also tells
//!   shipping-svc, `pickup_payment.expired`);
//! * releasing order commitments never confirmed by an invoice ([`UNCONFIRMED_REAP_AGE`]);
//! * moving open bank invoices past their due date to `overdue` with `invoice.updated`
//!   (orders-svc moves the order to `overdue` on it; a later payment still settles them);
//! * sending card refunds of cancelled orders the processor has not settled yet.

use super::{PaymentsService, UNCONFIRMED_REAP_AGE};
use crate::domain::InvoiceReference;
use crate::{OUTBOX, events, repo};
use platform::error::ApiError;

/// Rows one run handles per job at most (the next run takes the rest).
const BATCH: i64 = 200;

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobReport {
    pub sessions_expired: usize,
    pub invoices_overdue: usize,
    /// Card refunds the processor settled (succeeded or failed) this run.
    pub refunds_settled: usize,
}

impl PaymentsService {
    /// Runs every job once.
    pub async fn run_jobs_once(&self) -> Result<JobReport, ApiError> {
        Ok(JobReport {
            sessions_expired: self.expire_sessions().await?,
            invoices_overdue: self.mark_overdue_invoices().await?,
            refunds_settled: self.send_pending_refunds().await?,
        })
    }

    /// Expires open sessions past their time, then ends their PSP side (best effort: a PSP
    /// success racing this is the documented late success).
    pub async fn expire_sessions(&self) -> Result<usize, ApiError> {
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        let expired = repo::checkout::sweep_expired(&mut tx, now, BATCH).await?;
        for session in &expired {
            self.session_expired(&mut tx, session).await?;
        }
        repo::spend::reap_unconfirmed(&mut tx, now - UNCONFIRMED_REAP_AGE, BATCH, now).await?;
        tx.commit().await?;
        for session in &expired {
            if let Some(processor_session_id) = &session.processor_session_id
                && let Err(error) = self.card.processor.expire(processor_session_id).await
            {
                tracing::warn!(session = %crate::domain::checkout::log_ref(&session.id), %error, "could not expire the processor's session");
            }
        }
        Ok(expired.len())
    }

    /// Moves unpaid bank invoices past their due date to `overdue`, each with `invoice.updated`.
    pub async fn mark_overdue_invoices(&self) -> Result<usize, ApiError> {
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        let overdue = repo::invoices::mark_overdue(&mut tx, now, BATCH).await?;
        for (invoice_id, customer_id) in &overdue {
            let invoice =
                repo::invoices::by_reference(&mut tx, *customer_id, &InvoiceReference::Id(*invoice_id))
                    .await?
                    .ok_or_else(|| ApiError::internal("an overdue invoice vanished"))?;
            OUTBOX
                .enqueue(&mut tx, events::invoice_updated(&invoice, now))
                .await?;
        }
        tx.commit().await?;
        if !overdue.is_empty() {
            tracing::info!(count = overdue.len(), "bank invoices are overdue");
        }
        Ok(overdue.len())
    }

    /// What an expired session leaves behind, in the expiring transaction: an invoice's session
    /// releases the order's spend; a pickup's session releases the pickup's spend and emits
    /// `pickup_payment.expired`.
    pub(super) async fn session_expired(
        &self,
        tx: &mut sqlx::PgConnection,
        session: &repo::checkout::ExpiredSession,
    ) -> Result<(), ApiError> {
        match &session.subject {
            crate::domain::checkout::SessionSubject::Invoice(invoice_id) => {
                self.release_order_spend(tx, session.customer_id, *invoice_id)
                    .await
            }
            crate::domain::checkout::SessionSubject::Pickup(charge) => {
                self.pickup_session_expired(tx, session, charge).await
            }
        }
    }

    /// Releases the spend commitment of the order of `invoice_id` (its card payment expired
    /// unpaid; a fresh link commits it again).
    pub(super) async fn release_order_spend(
        &self,
        tx: &mut sqlx::PgConnection,
        customer_id: uuid::Uuid,
        invoice_id: uuid::Uuid,
    ) -> Result<(), ApiError> {
        let invoice = repo::invoices::by_reference(tx, customer_id, &InvoiceReference::Id(invoice_id))
            .await?
            .ok_or_else(|| ApiError::internal("a session's invoice is missing"))?;
        if matches!(invoice.status, crate::domain::InvoiceStatus::Open) {
            let (kind, subject) = invoice.spend_subject();
            repo::spend::release(tx, customer_id, kind, &subject, platform::time::now()).await?;
        }
        Ok(())
    }
}

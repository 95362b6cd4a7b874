//! `POST /payments/prepare`: how to pay an order now, idempotently (`platform::idempotency`).
//!
//! Claim the key → find the customer's invoice by order UUID, order number, invoice UUID or
//! invoice number → lock it → paid or void: answer that state; card rail: reuse the open
//! session while it can be paid, else expire it and open a fresh one (locked to the amount due,
//! lasting `checkout_ttl`); bank rail: the invoice with its remittance instructions → store the
//! answer in the same transaction.

use super::{PaymentsService, SpendCommitment, invoice_not_found};
use crate::domain::checkout::CheckoutStatus;
use crate::domain::{Invoice, InvoiceReference, InvoiceStatus, PaymentMethod};
use crate::repo;
use platform::error::ApiError;
use platform::idempotency::{Answer, IdempotencyKey, Json};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Idempotency operation name of PreparePayment.
pub const OPERATION_PREPARE: &str = "payments.prepare";

/// The answer of a preparation: the invoice as it stands, with its current checkout session.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Prepared {
    pub invoice: Invoice,
}

impl Prepared {
    /// `paid`, `void` or `awaiting_payment`.
    pub fn state(&self) -> &'static str {
        match self.invoice.status {
            InvoiceStatus::Paid => "paid",
            InvoiceStatus::Void => "void",
            // Unspecified is never stored (the repository refuses a row without a status).
            InvoiceStatus::Open | InvoiceStatus::Overdue | InvoiceStatus::Unspecified => "awaiting_payment",
        }
    }
}

impl PaymentsService {
    /// Prepares the payment of the order named by `reference` for `customer_id` under `key`.
    pub async fn prepare_payment(
        &self,
        customer_id: Uuid,
        key_id: &str,
        key: IdempotencyKey,
        reference: InvoiceReference,
    ) -> Answer<Prepared> {
        let call = key.call(customer_id, OPERATION_PREPARE);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                let mut tx = self.pool.begin().await?;
                let found = repo::invoices::by_order_reference(&mut tx, customer_id, &reference)
                    .await?
                    .ok_or_else(invoice_not_found)?;
                // The lock serialises preparations of one invoice with its payments.
                repo::invoices::lock_by_id(&mut tx, customer_id, found.id)
                    .await?
                    .ok_or_else(invoice_not_found)?;
                let mut invoice =
                    repo::invoices::by_reference(&mut tx, customer_id, &InvoiceReference::Id(found.id))
                        .await?
                        .ok_or_else(invoice_not_found)?;
                let payable = matches!(invoice.status, InvoiceStatus::Open | InvoiceStatus::Overdue);
                if payable && invoice.payment_method == PaymentMethod::CardCheckout {
                    self.ensure_open_session(&mut tx, &invoice, key_id).await?;
                }
                self.attach_checkout(&mut tx, std::slice::from_mut(&mut invoice))
                    .await?;
                let prepared = Prepared { invoice };
                attempt.complete(&mut tx, &prepared).await?;
                tx.commit().await?;
                Ok(prepared)
            })
            .await
    }

    /// Keeps the invoice's open session while it can be paid; otherwise expires it and opens a
    /// fresh one lasting `checkout_ttl`.
    async fn ensure_open_session(
        &self,
        tx: &mut sqlx::PgConnection,
        invoice: &Invoice,
        key_id: &str,
    ) -> Result<(), ApiError> {
        let now = platform::time::now();
        if let Some(current) = repo::checkout::latest_session(tx, invoice.customer_id, invoice.id).await? {
            if current.is_payable(now) {
                return Ok(());
            }
            if current.status == CheckoutStatus::Open {
                repo::checkout::expire(tx, &current.id).await?;
            }
        }
        // The expired payment released the order's spend; a fresh link commits it again, under
        // the preparing key's envelope (403 spend_limit_exceeded when it no longer fits).
        let (kind, subject_id) = invoice.spend_subject();
        let commitment = SpendCommitment {
            customer_id: invoice.customer_id,
            key_id: key_id.to_owned(),
            kind,
            subject_id,
            amount: invoice.amount_due,
        };
        self.commit_in(tx, &commitment, true).await?;
        let ttl = chrono::Duration::from_std(self.card.checkout_ttl).unwrap_or_default();
        self.open_session(tx, invoice, now + ttl).await?;
        Ok(())
    }
}

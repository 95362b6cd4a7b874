//! Cancelled orders and their refunds (docs/payments.md, "Cancelled orders").
//!
//! `order.cancelled` is applied once per order (`payments.order_cancellations`): in one
//! transaction the invoice is credited down to the charge staff kept (`domain::cancellation`),
//! `invoice.updated` tells the change, the invoice's open checkout session ends, and what was paid
//! above the charge becomes refunds, one per payment at most: `pending` on the card rail (the
//! processor refunds it), `due` on the bank and stablecoin rails (staff send it back and record
//! it, `labctl payments refunds …`). Card refunds are sent after that commit and again by the
//! periodic job until the processor answers; the processor's idempotency key is the refund id,
//! so a retry never refunds twice. `payment.refunded` is emitted once, when a refund succeeds.

use super::PaymentsService;
use crate::domain::cancellation;
use crate::domain::{InvoiceStatus, PaymentMethod};
use crate::processor::{RefundOutcome, RefundRequest};
use crate::repo::refunds::{AppliedCancellation, NewRefund, Refund, RefundChange};
use crate::{OUTBOX, events, repo};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use uuid::Uuid;

/// Refunds one run of the worker sends at most.
const REFUND_BATCH: i64 = 50;
/// A refund the processor answered `pending` is asked again after this long (in case its
/// webhook never arrives).
const PENDING_RECHECK: chrono::Duration = chrono::Duration::minutes(10);
/// Default and largest page of the staff listing.
const LIST_DEFAULT: u32 = 50;
const LIST_MAX: u32 = 200;

/// What recording a refund came to.
#[derive(Clone, Debug)]
pub struct RecordedRefund {
    pub refund: Refund,
    pub already_recorded: bool,
}

impl PaymentsService {
    /// Applies `order.cancelled` (event `event_id`) of the customer's order; a second delivery
    /// changes nothing. Then sends the card refunds it created (best effort: the job retries).
    pub async fn apply_order_cancelled(
        &self,
        event_id: &str,
        customer_id: Uuid,
        cancelled: &proto::orders::OrderCancelled,
    ) -> Result<(), ApiError> {
        let order_id = platform::ids::parse_uuid("orderId", &cancelled.order_id)?;
        let charge = Cents(cancelled.charge_cents.max(0));
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        let invoice = match repo::invoices::by_order(&mut tx, customer_id, order_id).await? {
            Some(invoice) => repo::invoices::lock_by_id(&mut tx, customer_id, invoice.id).await?,
            None => None,
        };
        let applied = AppliedCancellation {
            customer_id,
            order_id,
            cancel_request_id: &cancelled.cancel_request_id,
            charge,
            event_id,
            invoice_id: invoice.as_ref().map(|invoice| invoice.id),
        };
        let first = repo::refunds::claim_cancellation(&mut tx, &applied, now).await?;
        let mut sessions = Vec::new();
        if first && let Some(invoice) = invoice {
            let settled = cancellation::settle(invoice.status, invoice.total, invoice.amount_paid, charge);
            if settled.status != invoice.status || settled.due != invoice.amount_due {
                repo::refunds::credit_invoice(
                    &mut tx,
                    customer_id,
                    invoice.id,
                    settled.status.as_str(),
                    settled.due,
                    settled.credited,
                    now,
                )
                .await?;
                let updated = self.reload(&mut tx, customer_id, invoice.id).await?;
                OUTBOX
                    .enqueue(&mut tx, events::invoice_updated(&updated, now))
                    .await?;
            }
            if settled.status != InvoiceStatus::Open && settled.status != InvoiceStatus::Overdue {
                sessions = repo::checkout::expire_open_of_invoice(&mut tx, customer_id, invoice.id).await?;
                // A stablecoin request still awaiting its transfer ends: a transfer sent later
                // is recorded `late` for staff and never pays the cancelled order.
                if let Some(request_id) =
                    crate::stablecoin::repo::expire_for_cancelled_invoice(&mut tx, invoice.id, now).await?
                    && let Some(request) = crate::stablecoin::repo::lock_by_id(&mut tx, request_id).await?
                {
                    OUTBOX
                        .enqueue(&mut tx, crate::stablecoin::events::expired(&request, now))
                        .await?;
                }
            }
            let payments = repo::refunds::invoice_payments(&mut tx, customer_id, invoice.id).await?;
            let owed: Vec<((Uuid, PaymentMethod), Cents)> = payments
                .into_iter()
                .map(|(id, rail, amount)| ((id, rail), amount))
                .collect();
            for ((payment_id, rail), amount) in cancellation::allocate(settled.refund, &owed) {
                let refund = NewRefund {
                    id: Uuid::now_v7(),
                    customer_id,
                    invoice_id: invoice.id,
                    payment_id,
                    order_id,
                    rail,
                    amount,
                    currency: invoice.currency.clone(),
                    status: if rail == PaymentMethod::CardCheckout {
                        "pending"
                    } else {
                        "due"
                    },
                };
                repo::refunds::insert(&mut tx, &refund, now).await?;
            }
            tracing::info!(
                order.id = %order_id,
                invoice = %invoice.invoice_number,
                status = settled.status.as_str(),
                refund_cents = settled.refund.0,
                "order cancellation applied to its invoice"
            );
        } else if first {
            tracing::warn!(order.id = %order_id, "a cancelled order has no invoice; nothing to credit");
        }
        // The order's door pickups are cancelled with its label: their pay links close, their
        // spend is released and shipping-svc hears `pickup_payment.expired` (a cancelled pickup
        // stays cancelled).
        if first {
            for session in
                repo::checkout::expire_open_pickups_of_order(&mut tx, customer_id, order_id).await?
            {
                self.session_expired(&mut tx, &session).await?;
                sessions.push(session.processor_session_id);
            }
        }
        // The order's unpaid add-ons will not be tested: their supplementary invoices are voided
        // (orders-svc cancels the add-ons on that news) and their spend commitments released.
        // A paid add-on's invoice stays: staff settle it with the order's charge.
        if first {
            for addon_invoice in
                repo::invoices::lock_unpaid_addon_invoices(&mut tx, customer_id, order_id).await?
            {
                repo::refunds::credit_invoice(
                    &mut tx,
                    customer_id,
                    addon_invoice.id,
                    InvoiceStatus::Void.as_str(),
                    Cents::ZERO,
                    addon_invoice.total,
                    now,
                )
                .await?;
                let updated = self.reload(&mut tx, customer_id, addon_invoice.id).await?;
                OUTBOX
                    .enqueue(&mut tx, events::invoice_updated(&updated, now))
                    .await?;
                sessions.extend(
                    repo::checkout::expire_open_of_invoice(&mut tx, customer_id, addon_invoice.id).await?,
                );
                if let Some(addon_id) = addon_invoice.addon_id {
                    repo::spend::release(
                        &mut tx,
                        customer_id,
                        crate::domain::spend::SpendKind::Addon,
                        &addon_id.to_string(),
                        now,
                    )
                    .await?;
                }
            }
        }
        tx.commit().await?;
        for processor_session_id in sessions.into_iter().flatten() {
            if let Err(error) = self.card.processor.expire(&processor_session_id).await {
                tracing::warn!(%error, "could not expire the processor's session of a cancelled order");
            }
        }
        if let Err(error) = self.send_pending_refunds().await {
            tracing::warn!(%error, "card refunds of a cancelled order could not be sent now; the job retries");
        }
        Ok(())
    }

    /// Sends pending card refunds to the processor (those never answered, or answered `pending`
    /// more than [`PENDING_RECHECK`] ago); returns how many it settled (succeeded or failed).
    pub async fn send_pending_refunds(&self) -> Result<usize, ApiError> {
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        let pending = repo::refunds::lock_pending(&mut tx, now - PENDING_RECHECK, REFUND_BATCH).await?;
        let mut settled = 0;
        for refund in &pending {
            let request = RefundRequest {
                refund_id: refund.id.to_string(),
                payment_reference: refund.paid_with.clone(),
                amount: refund.amount,
                currency: refund.currency.clone(),
            };
            let processor = self.card.processor(self.card.kind_for(refund.sandbox));
            match processor.refund(&request).await {
                Ok(outcome) => {
                    if self.apply_refund_outcome(&mut tx, refund, outcome).await? {
                        settled += 1;
                    }
                }
                Err(error) => {
                    tracing::warn!(refund.id = %refund.id, %error, "the processor could not take a refund now");
                    let change = RefundChange {
                        status: "pending",
                        failure: Some(&error.message),
                        ..RefundChange::default()
                    };
                    repo::refunds::update(&mut tx, refund.id, &change, now).await?;
                }
            }
        }
        tx.commit().await?;
        Ok(settled)
    }

    /// Writes what the processor said of a locked refund; true when it reached an end.
    async fn apply_refund_outcome(
        &self,
        tx: &mut sqlx::PgConnection,
        refund: &Refund,
        outcome: RefundOutcome,
    ) -> Result<bool, ApiError> {
        let now = platform::time::now();
        match outcome {
            RefundOutcome::Succeeded { reference } => {
                let change = RefundChange {
                    status: "succeeded",
                    processor_refund_id: Some(&reference),
                    ..RefundChange::default()
                };
                repo::refunds::update(tx, refund.id, &change, now).await?;
                let done = Refund {
                    status: "succeeded".into(),
                    processor_refund_id: Some(reference),
                    ..refund.clone()
                };
                OUTBOX.enqueue(tx, events::payment_refunded(&done, now)).await?;
                tracing::info!(refund.id = %refund.id, amount_cents = refund.amount.0, "card refund succeeded");
                Ok(true)
            }
            RefundOutcome::Pending { reference } => {
                let change = RefundChange {
                    status: "pending",
                    processor_refund_id: Some(&reference),
                    ..RefundChange::default()
                };
                repo::refunds::update(tx, refund.id, &change, now).await?;
                Ok(false)
            }
            RefundOutcome::Failed { reference, reason } => {
                let reference = (!reference.is_empty()).then_some(reference);
                let change = RefundChange {
                    status: "failed",
                    processor_refund_id: reference.as_deref(),
                    failure: Some(&reason),
                    ..RefundChange::default()
                };
                repo::refunds::update(tx, refund.id, &change, now).await?;
                tracing::error!(refund.id = %refund.id, %reason, "the processor refused a refund; staff must follow up");
                Ok(true)
            }
        }
    }

    /// Applies a processor's refund webhook to the refund it names; `refunded`, `failed` or
    /// `ignored` (unknown refund, not pending, or still pending).
    pub(super) async fn apply_refund_webhook(
        &self,
        tx: &mut sqlx::PgConnection,
        refund_id: &str,
        processor_refund_id: &str,
        status: &str,
    ) -> Result<&'static str, ApiError> {
        let Ok(id) = Uuid::parse_str(refund_id) else {
            return Ok("ignored");
        };
        let Some(refund) = repo::refunds::lock(tx, id).await? else {
            return Ok("ignored");
        };
        if refund.status != "pending" {
            return Ok("ignored");
        }
        let outcome = match status {
            "succeeded" => RefundOutcome::Succeeded {
                reference: processor_refund_id.to_owned(),
            },
            "failed" | "canceled" => RefundOutcome::Failed {
                reference: processor_refund_id.to_owned(),
                reason: format!("the processor reported the refund {status}"),
            },
            _ => return Ok("ignored"),
        };
        let failed = matches!(outcome, RefundOutcome::Failed { .. });
        self.apply_refund_outcome(tx, &refund, outcome).await?;
        Ok(if failed { "failed" } else { "refunded" })
    }

    /// Staff: refunds lab-wide, those needing a hand first.
    pub async fn list_refunds(&self, status: Option<&str>, limit: u32) -> Result<Vec<Refund>, ApiError> {
        if let Some(status) = status
            && !["pending", "succeeded", "failed", "due"].contains(&status)
        {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "status",
                "status must be pending, succeeded, failed or due",
            ));
        }
        let limit = match limit {
            0 => LIST_DEFAULT,
            limit if limit <= LIST_MAX => limit,
            _ => {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    "limit",
                    format!("limit must be 1 to {LIST_MAX}"),
                ));
            }
        };
        let mut conn = self.pool.acquire().await?;
        Ok(repo::refunds::list(&mut conn, status, i64::from(limit)).await?)
    }

    /// Staff: records that a `due` refund was carried out (bank transfer back, or the stablecoin
    /// transfer back to the payer address), with its reference: `succeeded`, `payment.refunded`.
    pub async fn record_refund(
        &self,
        operator: &str,
        refund_id: &str,
        reference: &str,
    ) -> Result<RecordedRefund, ApiError> {
        let id = platform::ids::parse_uuid("refundId", refund_id)?;
        let reference = reference.trim();
        if reference.is_empty() || reference.chars().count() > 200 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "reference",
                "reference must be 1 to 200 characters",
            ));
        }
        let mut tx = self.pool.begin().await?;
        let refund = repo::refunds::lock(&mut tx, id)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "refund not found"))?;
        if refund.status == "succeeded" && refund.external_reference.as_deref() == Some(reference) {
            tx.commit().await?;
            return Ok(RecordedRefund {
                refund,
                already_recorded: true,
            });
        }
        if refund.status != "due" {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "refund {} is {}; only a due refund is recorded by staff",
                    refund.id, refund.status
                ),
            )
            .with_details(serde_json::json!({ "status": refund.status })));
        }
        let now = platform::time::now();
        let change = RefundChange {
            status: "succeeded",
            external_reference: Some(reference),
            recorded_by: Some(operator),
            ..RefundChange::default()
        };
        repo::refunds::update(&mut tx, refund.id, &change, now).await?;
        let done = Refund {
            status: "succeeded".into(),
            external_reference: Some(reference.to_owned()),
            recorded_by: Some(operator.to_owned()),
            completed_at: Some(now),
            ..refund
        };
        OUTBOX
            .enqueue(&mut tx, events::payment_refunded(&done, now))
            .await?;
        tx.commit().await?;
        Ok(RecordedRefund {
            refund: done,
            already_recorded: false,
        })
    }
}

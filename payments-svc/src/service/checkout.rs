//! Hosted card checkout: the pay page's reads, a payment on the page (sandbox), its
//! authentication step, and processor webhooks (PSP). Settlement happens in one place,
//! [`PaymentsService::settle_session`], under the session's row lock.
//!
//! Races and their outcomes (each tested):
//! * double click / two tabs: the second attempt waits for the first's row lock, then finds the
//!   session `completed` and answers `already_paid` without charging;
//! * a redelivered processor webhook: its event id was recorded with the first delivery, so it
//!   answers `duplicate` and changes nothing (the payment's unique external reference is a
//!   second guard);
//! * a payment attempt after expiry: refused (`expired`) before any charge; the session can no
//!   longer be paid and `POST /payments/prepare` mints a fresh one;
//! * a late PSP success after our expiry (the payer was already on the PSP's page): the money
//!   was captured, so it settles the invoice if still unpaid; if another session paid it first,
//!   the capture is recorded as a payment with status `refund_due` and the invoice is unchanged;
//! * a declined card: the session stays open for another attempt until it expires.

use super::PaymentsService;
use crate::domain::checkout::{
    CheckoutPage, CheckoutSession, CheckoutStatus, PayOutcome, PaymentSource, ProcessorKind, SessionSubject,
    is_session_id, random_base62,
};
use crate::domain::payment::{Balance, STATUS_REFUND_DUE, STATUS_SUCCEEDED};
use crate::domain::{InvoiceReference, InvoiceStatus, Payment, PaymentMethod};
use crate::processor::{Charge, WebhookKind};
use crate::repo;
use crate::repo::checkout::CardToken;
use crate::{OUTBOX, events};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use sqlx::PgConnection;

/// What settling a session came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The invoice is now paid.
    Paid,
    /// The invoice had been paid (or voided) before: the capture is kept as `refund_due`.
    RefundDue,
    /// This payment reference was recorded before.
    Duplicate,
}

/// Counts a committed attempt on our checkout page (`platform::metrics`, rail `card`).
fn count_card_attempt(outcome: &PayOutcome) {
    match outcome {
        PayOutcome::Paid => platform::metrics::record_settlements("card", "paid", 1),
        PayOutcome::Declined { .. } => platform::metrics::record_settlements("card", "declined", 1),
        PayOutcome::AlreadyPaid | PayOutcome::RequiresConfirmation | PayOutcome::Expired => {}
    }
}

fn session_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "checkout session not found")
}

impl PaymentsService {
    /// The pay page of session `session_id`. With a PSP, the processor's side of an open session
    /// is opened here on first view.
    pub async fn checkout_page(&self, session_id: &str) -> Result<CheckoutPage, ApiError> {
        if !is_session_id(session_id) {
            return Err(session_not_found());
        }
        let mut conn = self.pool.acquire().await?;
        let mut session = repo::checkout::session(&mut conn, session_id)
            .await?
            .ok_or_else(session_not_found)?;
        drop(conn);
        if session.processor == ProcessorKind::Stripe
            && session.processor_session_id.is_none()
            && session.is_payable(platform::time::now())
        {
            session = self.open_at_processor(session_id).await?;
        }
        self.page_of(session).await
    }

    /// Opens the PSP side of a session under its row lock (the PSP deduplicates by our session
    /// id as its idempotency key, so a retry never opens two).
    async fn open_at_processor(&self, session_id: &str) -> Result<CheckoutSession, ApiError> {
        let mut tx = self.pool.begin().await?;
        let mut session = repo::checkout::lock_session(&mut tx, session_id)
            .await?
            .ok_or_else(session_not_found)?;
        if session.processor_session_id.is_some() {
            return Ok(session);
        }
        let (order_id, order_number, invoice_number) = match &session.subject {
            SessionSubject::Invoice(invoice_id) => {
                let invoice = repo::invoices::by_reference(
                    &mut tx,
                    session.customer_id,
                    &InvoiceReference::Id(*invoice_id),
                )
                .await?
                .ok_or_else(|| ApiError::internal("a session's invoice is missing"))?;
                (invoice.order_id, invoice.order_number, invoice.invoice_number)
            }
            // A door pickup has no invoice.
            SessionSubject::Pickup(charge) => (charge.order_id, charge.order_number.clone(), String::new()),
        };
        let request = crate::processor::OpenRequest {
            session_id: session.id.clone(),
            amount: session.amount,
            currency: session.currency.clone(),
            order_id: order_id.to_string(),
            order_number,
            invoice_number,
            expires_at: session.expires_at,
            return_url: session.hosted_url.clone(),
        };
        if let Some(opened) = self.card.processor(session.processor).open(&request).await? {
            repo::checkout::set_processor(&mut tx, &session.id, &opened.processor_session_id, &opened.url)
                .await?;
            session.processor_session_id = Some(opened.processor_session_id);
            session.processor_url = Some(opened.url);
        }
        tx.commit().await?;
        Ok(session)
    }

    async fn page_of(&self, session: CheckoutSession) -> Result<CheckoutPage, ApiError> {
        let invoice_id = match &session.subject {
            SessionSubject::Invoice(invoice_id) => *invoice_id,
            SessionSubject::Pickup(_) => return self.pickup_page_of(session).await,
        };
        let mut conn = self.pool.acquire().await?;
        let invoice =
            repo::invoices::by_reference(&mut conn, session.customer_id, &InvoiceReference::Id(invoice_id))
                .await?
                .ok_or_else(|| ApiError::internal("a session's invoice is missing"))?;
        let saved_cards = if session.processor == ProcessorKind::Sandbox {
            repo::checkout::saved_cards(&mut conn, session.customer_id).await?
        } else {
            Vec::new()
        };
        Ok(CheckoutPage {
            awaiting_confirmation: session.pending_token.is_some(),
            order_number: invoice.order_number,
            invoice_number: invoice.invoice_number,
            lines: invoice.lines,
            total: invoice.total,
            saved_cards,
            session,
        })
    }

    /// Pays session `session_id` on our page with a typed or saved card (sandbox processor).
    pub async fn pay_checkout(
        &self,
        session_id: &str,
        source: PaymentSource,
    ) -> Result<(PayOutcome, CheckoutPage), ApiError> {
        if !is_session_id(session_id) {
            return Err(session_not_found());
        }
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        // The lock serialises attempts on one session: a second click waits, then sees the first.
        let session = repo::checkout::lock_session(&mut tx, session_id)
            .await?
            .ok_or_else(session_not_found)?;
        let outcome = match self.refusal(&session, now) {
            Some(outcome) => outcome,
            None => {
                let (token, save) = self.card_token(&mut tx, &session, source).await?;
                let charge = self
                    .card
                    .processor(session.processor)
                    .charge(token.behaviour, false)?;
                // A card is kept only when the payer asked and the card was not declined.
                let keep = save && !matches!(charge, Charge::Declined { .. });
                if save {
                    repo::checkout::set_saved(&mut tx, session.customer_id, &token.token, keep).await?;
                }
                self.apply_charge(&mut tx, &session, &token, charge).await?
            }
        };
        tx.commit().await?;
        count_card_attempt(&outcome);
        Ok((outcome, self.checkout_page(session_id).await?))
    }

    /// Completes (`approve`) or abandons the authentication step of a pending payment.
    pub async fn confirm_checkout(
        &self,
        session_id: &str,
        approve: bool,
    ) -> Result<(PayOutcome, CheckoutPage), ApiError> {
        if !is_session_id(session_id) {
            return Err(session_not_found());
        }
        let now = platform::time::now();
        let mut tx = self.pool.begin().await?;
        let session = repo::checkout::lock_session(&mut tx, session_id)
            .await?
            .ok_or_else(session_not_found)?;
        let outcome = match self.refusal(&session, now) {
            Some(outcome) => outcome,
            None => {
                let Some(pending) = session.pending_token.clone() else {
                    return Err(ApiError::new(
                        ErrorCode::Conflict,
                        "no payment of this session waits for authentication",
                    ));
                };
                let token = repo::checkout::token(&mut tx, session.customer_id, &pending, false)
                    .await?
                    .ok_or_else(|| ApiError::internal("a pending card token is missing"))?;
                if approve {
                    let charge = self
                        .card
                        .processor(session.processor)
                        .charge(token.behaviour, true)?;
                    self.apply_charge(&mut tx, &session, &token, charge).await?
                } else {
                    let message = "The card's authentication was not completed.";
                    repo::checkout::record_decline(&mut tx, &session.id, message).await?;
                    PayOutcome::Declined {
                        code: "authentication_failed",
                        message: message.to_owned(),
                    }
                }
            }
        };
        tx.commit().await?;
        count_card_attempt(&outcome);
        Ok((outcome, self.checkout_page(session_id).await?))
    }

    /// Why a locked session takes no attempt now, if it does not.
    fn refusal(&self, session: &CheckoutSession, now: chrono::DateTime<chrono::Utc>) -> Option<PayOutcome> {
        if session.status == CheckoutStatus::Completed {
            return Some(PayOutcome::AlreadyPaid);
        }
        if !session.is_payable(now) {
            return Some(PayOutcome::Expired);
        }
        None
    }

    /// The card token of an attempt: a new token for a typed card, or the customer's saved one.
    /// Returns whether the payer asked to save the card.
    async fn card_token(
        &self,
        tx: &mut PgConnection,
        session: &CheckoutSession,
        source: PaymentSource,
    ) -> Result<(CardToken, bool), ApiError> {
        if session.processor != ProcessorKind::Sandbox {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "this session is paid on the processor's own page",
            ));
        }
        match source {
            PaymentSource::Saved { token } => {
                let token = repo::checkout::token(tx, session.customer_id, &token, true)
                    .await?
                    .ok_or_else(|| {
                        ApiError::field(
                            ErrorCode::InvalidRequest,
                            "savedCard",
                            "the saved card is unknown",
                        )
                    })?;
                Ok((token, false))
            }
            PaymentSource::Card { card, save } => {
                let now = platform::time::now();
                let behaviour = if card.is_past_expiry(now) {
                    crate::domain::checkout::CardBehaviour::ExpiredCard
                } else {
                    card.behaviour
                };
                let token = CardToken {
                    token: format!("pm_sandbox_{}", random_base62(24)),
                    card: crate::domain::checkout::SavedCard {
                        token: String::new(),
                        brand: card.brand.to_owned(),
                        last4: card.last4,
                        exp_month: card.exp_month,
                        exp_year: card.exp_year,
                    },
                    behaviour,
                };
                repo::checkout::insert_token(tx, session.customer_id, &token, false, now).await?;
                Ok((token, save))
            }
        }
    }

    /// Applies a charge's result to the locked session.
    async fn apply_charge(
        &self,
        tx: &mut PgConnection,
        session: &CheckoutSession,
        token: &CardToken,
        charge: Charge,
    ) -> Result<PayOutcome, ApiError> {
        match charge {
            Charge::Succeeded { reference } => {
                self.settle_session(tx, session, &reference, session.amount)
                    .await?;
                Ok(PayOutcome::Paid)
            }
            Charge::Declined { code, message } => {
                repo::checkout::record_decline(tx, &session.id, message).await?;
                Ok(PayOutcome::Declined {
                    code,
                    message: message.to_owned(),
                })
            }
            Charge::RequiresAuthentication => {
                repo::checkout::set_pending(tx, &session.id, Some(&token.token)).await?;
                Ok(PayOutcome::RequiresConfirmation)
            }
        }
    }

    /// Settles the locked `session` with a captured payment: the payment record, the invoice
    /// `paid` (previous status kept), `invoice.updated`, and the session `completed`, in the
    /// caller's transaction. The invoice row lock orders this against bank payments and other
    /// sessions of the invoice.
    pub(super) async fn settle_session(
        &self,
        tx: &mut PgConnection,
        session: &CheckoutSession,
        reference: &str,
        amount: Cents,
    ) -> Result<Settled, ApiError> {
        let invoice_id = match &session.subject {
            SessionSubject::Invoice(invoice_id) => *invoice_id,
            SessionSubject::Pickup(charge) => {
                return self.settle_pickup(tx, session, charge, reference, amount).await;
            }
        };
        let invoice = repo::invoices::lock_by_id(tx, session.customer_id, invoice_id)
            .await?
            .ok_or_else(|| ApiError::internal("a session's invoice is missing"))?;
        let settles = matches!(invoice.status, InvoiceStatus::Open | InvoiceStatus::Overdue);
        let now = platform::time::now();
        let payment = Payment {
            id: uuid::Uuid::now_v7(),
            customer_id: invoice.customer_id,
            invoice_id: invoice.id,
            invoice_number: invoice.invoice_number.clone(),
            order_id: invoice.order_id,
            order_number: invoice.order_number.clone(),
            rail: PaymentMethod::CardCheckout,
            status: if settles {
                STATUS_SUCCEEDED
            } else {
                STATUS_REFUND_DUE
            }
            .to_owned(),
            amount,
            currency: invoice.currency.clone(),
            external_reference: reference.to_owned(),
            received_at: now,
            created_at: now,
            recorded_by: None,
        };
        if !repo::payments::insert(tx, &payment).await? {
            return Ok(Settled::Duplicate);
        }
        repo::checkout::complete(tx, &session.id, payment.id, now).await?;
        if !settles {
            tracing::warn!(
                session = %crate::domain::checkout::log_ref(&session.id),
                invoice = %invoice.invoice_number,
                status = invoice.status.as_str(),
                "a card payment arrived for an invoice that was already settled; recorded as refund_due"
            );
            return Ok(Settled::RefundDue);
        }
        let balance = Balance {
            status: invoice.status,
            total: invoice.total,
            paid: invoice.amount_paid,
            due: invoice.amount_due,
        };
        let settlement = balance.settle(&invoice.invoice_number, amount)?;
        repo::invoices::apply_settlement(tx, invoice.customer_id, invoice.id, &settlement, now).await?;
        // Money arrived: the order's (add-on's) spend stands even if its expiry had released it.
        let (kind, subject) = invoice.spend_subject();
        repo::spend::reactivate(tx, invoice.customer_id, kind, &subject, now).await?;
        if settlement.completes {
            let updated =
                repo::invoices::by_reference(tx, invoice.customer_id, &InvoiceReference::Id(invoice.id))
                    .await?
                    .ok_or_else(|| ApiError::internal("a settled invoice vanished"))?;
            OUTBOX.enqueue(tx, events::invoice_updated(&updated, now)).await?;
        }
        tracing::info!(session = %crate::domain::checkout::log_ref(&session.id), invoice = %invoice.invoice_number, "card checkout settled");
        Ok(Settled::Paid)
    }

    /// Verifies and applies a processor webhook; answers what it came to (`settled`,
    /// `refund_due`, `duplicate`, `expired` or `ignored`).
    pub async fn handle_processor_webhook(
        &self,
        processor: &str,
        payload: &[u8],
        signature: &str,
    ) -> Result<&'static str, ApiError> {
        let kind = self.card.processor.kind();
        if processor != kind.as_str() || kind == ProcessorKind::Sandbox {
            return Err(ApiError::new(ErrorCode::NotFound, "no such processor"));
        }
        let event = self
            .card
            .processor
            .verify_webhook(payload, signature, platform::time::now())?;
        let mut tx = self.pool.begin().await?;
        if !repo::checkout::first_processor_event(&mut tx, kind, &event.id, &event.event_type).await? {
            return Ok("duplicate");
        }
        let outcome = match event.kind {
            WebhookKind::Paid {
                processor_session_id,
                session_id,
                amount,
                currency,
                payment_reference,
            } => {
                let Some(session) = self
                    .lock_webhook_session(&mut tx, kind, &processor_session_id, &session_id)
                    .await?
                else {
                    tracing::warn!(event = %event.id, "a paid webhook names no session of ours; ignored");
                    tx.commit().await?;
                    return Ok("ignored");
                };
                if session.status == CheckoutStatus::Completed {
                    "duplicate"
                } else if amount != session.amount || !currency.eq_ignore_ascii_case(&session.currency) {
                    // The amount is locked; a PSP answer for another amount is not ours to settle.
                    tracing::error!(session = %crate::domain::checkout::log_ref(&session.id), "a paid webhook carries another amount than the locked one");
                    return Err(ApiError::new(
                        ErrorCode::InvalidRequest,
                        "the paid amount differs from the session's locked amount",
                    ));
                } else {
                    match self
                        .settle_session(&mut tx, &session, &payment_reference, amount)
                        .await?
                    {
                        Settled::Paid => "settled",
                        Settled::RefundDue => "refund_due",
                        Settled::Duplicate => "duplicate",
                    }
                }
            }
            WebhookKind::Expired {
                processor_session_id,
                session_id,
            } => match self
                .lock_webhook_session(&mut tx, kind, &processor_session_id, &session_id)
                .await?
            {
                Some(session) if session.status == CheckoutStatus::Open => {
                    repo::checkout::expire(&mut tx, &session.id).await?;
                    self.session_expired(&mut tx, &repo::checkout::ExpiredSession::of(&session))
                        .await?;
                    "expired"
                }
                Some(_) => "ignored",
                None => "ignored",
            },
            WebhookKind::Refund {
                processor_refund_id,
                refund_id,
                status,
            } => {
                self.apply_refund_webhook(&mut tx, &refund_id, &processor_refund_id, &status)
                    .await?
            }
            WebhookKind::Other => "ignored",
        };
        tx.commit().await?;
        match outcome {
            "settled" => platform::metrics::record_settlements("card", "paid", 1),
            "refund_due" => platform::metrics::record_settlements("card", "refund_due", 1),
            "expired" => platform::metrics::record_settlements("card", "expired", 1),
            _ => {}
        }
        Ok(outcome)
    }

    async fn lock_webhook_session(
        &self,
        tx: &mut PgConnection,
        kind: ProcessorKind,
        processor_session_id: &str,
        session_id: &str,
    ) -> Result<Option<CheckoutSession>, ApiError> {
        if let Some(session) =
            repo::checkout::lock_by_processor_session(tx, kind, processor_session_id).await?
        {
            return Ok(Some(session));
        }
        if !is_session_id(session_id) {
            return Ok(None);
        }
        Ok(repo::checkout::lock_session(tx, session_id)
            .await?
            .filter(|session| session.processor == kind))
    }
}

//! The hosted payment of a door pickup (shipping-svc's `POST /orders/{reference}/pickup`).
//!
//! shipping-svc opens it with `OpenPickupCheckout` when it stores the pickup: a checkout
//! session of purpose `pickup`, bound to the pickup (not to an invoice: the order's invoice is
//! already paid, and a pickup is a separate charge), locked to the pickup's price, single use,
//! expiring after the checkout lifetime or at the pickup window's end, whichever comes first.
//! Opening it commits the price to the requesting key's spend envelope (kind `pickup`) in the
//! same transaction, so a refused envelope leaves no session.
//!
//! The payer pays it on the same hosted page as an order (`/pay/{sessionId}`, sandbox card form
//! or the PSP's page). Settlement runs in the one settlement function
//! ([`PaymentsService::settle_session`], under the session's row lock, for the page's payment
//! and the PSP's webhook alike) and for a pickup: records the payment in
//! `payments.pickup_payments` (unique per processor reference), completes the session and
//! enqueues `pickup_payment.paid` in the same transaction. shipping-svc consumes that event
//! (an idempotent consumer: a booked pickup answers as it stands) and books the pickup with the
//! carrier. Expiry (sweeper or the PSP's `checkout.session.expired`) releases the pickup's
//! spend and enqueues `pickup_payment.expired`; shipping-svc then frees the shipment for a new
//! pickup request. A PSP success that arrives after the expiry is kept as `refund_due` and
//! books nothing.

use super::checkout::Settled;
use super::{PaymentsService, SpendCommitment};
use crate::domain::checkout::{CheckoutPage, CheckoutSession, CheckoutStatus, PickupCharge, SessionSubject};
use crate::domain::spend::SpendKind;
use crate::domain::{InvoiceLine, checkout};
use crate::repo::checkout::{ExpiredSession, PickupPayment};
use crate::{OUTBOX, events, repo};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use sqlx::PgConnection;
use uuid::Uuid;

/// `status` of a pickup payment that paid the pickup.
pub const PICKUP_PAYMENT_SUCCEEDED: &str = "succeeded";
/// `status` of a pickup payment captured after its session expired (staff refund it).
pub const PICKUP_PAYMENT_REFUND_DUE: &str = "refund_due";

/// What shipping-svc asks for.
#[derive(Clone, Debug)]
pub struct NewPickupCheckout {
    pub charge: PickupCharge,
    pub amount: Cents,
    pub currency: String,
    /// The API key that requested the pickup (its envelope is charged).
    pub key_id: String,
    /// The latest expiry (the pickup window's end).
    pub pay_by: Option<DateTime<Utc>>,
    /// A sandbox customer's order: the session runs on the sandbox processor.
    pub sandbox: bool,
}

fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message.to_owned())
}

impl PaymentsService {
    /// Opens (or answers the existing) hosted payment of a door pickup of `customer_id`.
    pub async fn open_pickup_checkout(
        &self,
        customer_id: Uuid,
        new: NewPickupCheckout,
    ) -> Result<CheckoutSession, ApiError> {
        if new.amount.0 <= 0 {
            return Err(invalid("amountCents", "a pickup payment needs an amount above 0"));
        }
        if new.currency.trim().is_empty() {
            return Err(invalid("currency", "a currency is required"));
        }
        if new.key_id.trim().is_empty() {
            return Err(invalid("keyId", "the requesting key is required"));
        }
        if new.charge.description.trim().is_empty() || new.charge.order_number.trim().is_empty() {
            return Err(invalid(
                "description",
                "the pickup's order number and description are required",
            ));
        }
        let pickup_id = new.charge.pickup_id;
        let mut tx = self.pool.begin().await?;
        if let Some(existing) = repo::checkout::session_of_pickup(&mut tx, customer_id, pickup_id).await? {
            return same_charge(existing, &new);
        }
        let now = platform::time::now();
        let lifetime = now + chrono::Duration::from_std(self.card.checkout_ttl).unwrap_or_default();
        let expires_at = new.pay_by.map_or(lifetime, |pay_by| pay_by.min(lifetime));
        if expires_at <= now {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "the pickup window is over: it can no longer be paid",
            ));
        }
        // The envelope first: a refusal (403 spend_limit_exceeded) leaves nothing behind.
        self.commit_in(
            &mut tx,
            &SpendCommitment {
                customer_id,
                key_id: new.key_id.clone(),
                kind: SpendKind::Pickup,
                subject_id: pickup_id.to_string(),
                amount: new.amount,
            },
            true,
        )
        .await?;
        let id = checkout::new_session_id();
        let session = CheckoutSession {
            hosted_url: checkout::hosted_url(&self.card.site_url, &id),
            id,
            customer_id,
            subject: SessionSubject::Pickup(new.charge.clone()),
            amount: new.amount,
            currency: new.currency.trim().to_uppercase(),
            status: CheckoutStatus::Open,
            processor: self.card.kind_for(new.sandbox),
            processor_session_id: None,
            processor_url: None,
            pending_token: None,
            last_error: None,
            expires_at,
            created_at: now,
            completed_at: None,
        };
        if !repo::checkout::insert_session(&mut tx, &session).await? {
            // A concurrent call for the same pickup won: answer its session.
            tx.rollback().await?;
            let mut conn = self.pool.acquire().await?;
            let existing = repo::checkout::session_of_pickup(&mut conn, customer_id, pickup_id)
                .await?
                .ok_or_else(|| ApiError::internal("a pickup session conflict without a session"))?;
            return same_charge(existing, &new);
        }
        tx.commit().await?;
        tracing::info!(session = %crate::domain::checkout::log_ref(&session.id), pickup = %pickup_id, "pickup checkout opened");
        Ok(session)
    }

    /// The pay page of a pickup session: the order number and the pickup's one line.
    pub(super) async fn pickup_page_of(&self, session: CheckoutSession) -> Result<CheckoutPage, ApiError> {
        let Some(charge) = session.pickup().cloned() else {
            return Err(ApiError::internal("not a pickup session"));
        };
        let saved_cards = if session.processor == checkout::ProcessorKind::Sandbox {
            let mut conn = self.pool.acquire().await?;
            repo::checkout::saved_cards(&mut conn, session.customer_id).await?
        } else {
            Vec::new()
        };
        Ok(CheckoutPage {
            awaiting_confirmation: session.pending_token.is_some(),
            order_number: charge.order_number,
            invoice_number: String::new(),
            lines: vec![InvoiceLine {
                description: charge.description,
                quantity: 1,
                unit_price: session.amount,
                amount: session.amount,
            }],
            total: session.amount,
            saved_cards,
            session,
        })
    }

    /// Settles the locked pickup `session` with a captured payment, in the caller's
    /// transaction: the pickup payment, the session `completed`, the pickup's spend kept, and
    /// `pickup_payment.paid` for shipping-svc. A session that had expired (the sweeper told
    /// shipping-svc already) keeps the capture as `refund_due` and books nothing.
    pub(super) async fn settle_pickup(
        &self,
        tx: &mut PgConnection,
        session: &CheckoutSession,
        charge: &PickupCharge,
        reference: &str,
        amount: Cents,
    ) -> Result<Settled, ApiError> {
        let settles = session.status == CheckoutStatus::Open;
        let now = platform::time::now();
        let payment = PickupPayment {
            id: Uuid::now_v7(),
            customer_id: session.customer_id,
            pickup_id: charge.pickup_id,
            session_id: session.id.clone(),
            order_id: charge.order_id,
            status: if settles {
                PICKUP_PAYMENT_SUCCEEDED
            } else {
                PICKUP_PAYMENT_REFUND_DUE
            },
            amount,
            currency: session.currency.clone(),
            external_reference: reference.to_owned(),
            created_at: now,
        };
        if !repo::checkout::insert_pickup_payment(tx, &payment).await? {
            return Ok(Settled::Duplicate);
        }
        if !settles {
            tracing::warn!(
                session = %crate::domain::checkout::log_ref(&session.id),
                pickup = %charge.pickup_id,
                "a pickup payment arrived after its session expired; recorded as refund_due"
            );
            return Ok(Settled::RefundDue);
        }
        repo::checkout::complete(tx, &session.id, payment.id, now).await?;
        // Money arrived: the pickup's spend stands even if an expiry had released it.
        repo::spend::reactivate(
            tx,
            session.customer_id,
            SpendKind::Pickup,
            &charge.pickup_id.to_string(),
            now,
        )
        .await?;
        OUTBOX
            .enqueue(tx, events::pickup_payment_paid(session, charge, &payment, now))
            .await?;
        tracing::info!(session = %crate::domain::checkout::log_ref(&session.id), pickup = %charge.pickup_id, "pickup payment settled");
        Ok(Settled::Paid)
    }

    /// An expired pickup session: releases the pickup's spend and tells shipping-svc.
    pub(super) async fn pickup_session_expired(
        &self,
        tx: &mut PgConnection,
        session: &ExpiredSession,
        charge: &PickupCharge,
    ) -> Result<(), ApiError> {
        let now = platform::time::now();
        repo::spend::release(
            tx,
            session.customer_id,
            SpendKind::Pickup,
            &charge.pickup_id.to_string(),
            now,
        )
        .await?;
        OUTBOX
            .enqueue(tx, events::pickup_payment_expired(session, charge, now))
            .await?;
        Ok(())
    }
}

/// The existing session of a pickup, when it is for the same amount and currency (the amount is
/// locked: another amount for the same pickup is a conflict, never a second session).
fn same_charge(existing: CheckoutSession, new: &NewPickupCheckout) -> Result<CheckoutSession, ApiError> {
    if existing.amount != new.amount || !existing.currency.eq_ignore_ascii_case(new.currency.trim()) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "the pickup already has a payment for another amount",
        ));
    }
    Ok(existing)
}

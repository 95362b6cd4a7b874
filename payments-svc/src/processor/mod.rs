//! Card processors behind one interface ([`CardProcessor`]): the built-in [`sandbox`] (our own
//! pay page takes the well-known test cards) and a Stripe-shaped PSP adapter ([`stripe`]: the
//! pay page sends the payer to the PSP's hosted Checkout Session, and the PSP's signed webhooks
//! settle). Which one runs is configuration (`PAYMENTS_CARD_PROCESSOR`).
//!
//! The API never charges a card itself: the sandbox stands in for a card network, and with a
//! PSP the card details go from the payer's browser to the PSP only.

pub mod sandbox;
pub mod stripe;

use crate::domain::checkout::{CardBehaviour, ProcessorKind};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use platform::error::ApiError;
use platform::money::Cents;

/// What the processor needs to open its side of a session.
#[derive(Clone, Debug)]
pub struct OpenRequest {
    /// Our session id (the PSP's `client_reference_id` and idempotency key).
    pub session_id: String,
    pub amount: Cents,
    pub currency: String,
    pub order_id: String,
    pub order_number: String,
    pub invoice_number: String,
    pub expires_at: DateTime<Utc>,
    /// Where the PSP sends the payer back (our pay page).
    pub return_url: String,
}

/// The processor's side of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedSession {
    pub processor_session_id: String,
    /// The PSP's hosted page.
    pub url: String,
}

/// What charging a card on our own page came to (sandbox).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Charge {
    Succeeded {
        reference: String,
    },
    Declined {
        code: &'static str,
        message: &'static str,
    },
    RequiresAuthentication,
}

/// A verified processor webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookEvent {
    /// The processor's event id (a redelivery carries the same id).
    pub id: String,
    pub event_type: String,
    pub kind: WebhookKind,
}

/// What a verified webhook says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookKind {
    /// The payer paid the session (`checkout.session.completed` with `payment_status = paid`, or
    /// `checkout.session.async_payment_succeeded`).
    Paid {
        processor_session_id: String,
        /// Our session id (`client_reference_id`).
        session_id: String,
        amount: Cents,
        currency: String,
        /// The PSP's payment reference (payment intent), the payment's external reference.
        payment_reference: String,
    },
    /// The PSP expired the session (`checkout.session.expired`).
    Expired {
        processor_session_id: String,
        session_id: String,
    },
    /// A refund changed state at the PSP (`refund.created`, `refund.updated`,
    /// `charge.refund.updated`).
    Refund {
        processor_refund_id: String,
        /// Our refund id (`metadata[refund_id]`).
        refund_id: String,
        /// The PSP's refund status: `succeeded`, `pending`, `failed`, `canceled`, ….
        status: String,
    },
    /// Any other event (acknowledged, no effect).
    Other,
}

/// What refunding (part of) a card payment asks the processor.
#[derive(Clone, Debug)]
pub struct RefundRequest {
    /// Our refund id (the PSP's idempotency key and `metadata[refund_id]`).
    pub refund_id: String,
    /// The card payment's reference at the processor (payment intent, or the sandbox charge).
    pub payment_reference: String,
    pub amount: Cents,
    pub currency: String,
}

/// What the processor answered to a refund.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefundOutcome {
    /// The money is on its way back.
    Succeeded { reference: String },
    /// Accepted; a webhook tells the end.
    Pending { reference: String },
    /// Refused for good (for example the charge was disputed).
    Failed { reference: String, reason: String },
}

/// A card processor.
pub trait CardProcessor: Send + Sync {
    /// Which processor this is.
    fn kind(&self) -> ProcessorKind;

    /// Opens the processor's side of a new session; `None` when our own page takes the card.
    fn open<'a>(&'a self, request: &'a OpenRequest)
    -> BoxFuture<'a, Result<Option<OpenedSession>, ApiError>>;

    /// Ends the processor's side of a session that expired on our side (best effort).
    fn expire<'a>(&'a self, processor_session_id: &'a str) -> BoxFuture<'a, Result<(), ApiError>>;

    /// Charges a card on our own page; `authenticated` after the payer's confirm step.
    fn charge(&self, behaviour: CardBehaviour, authenticated: bool) -> Result<Charge, ApiError>;

    /// Refunds (part of) a card payment, idempotently per `request.refund_id`. A transient failure
    /// is an error (the refund stays pending and is tried again).
    fn refund<'a>(&'a self, request: &'a RefundRequest) -> BoxFuture<'a, Result<RefundOutcome, ApiError>>;

    /// Verifies a webhook's signature header over the exact raw body at `now`, then parses it.
    fn verify_webhook(
        &self,
        payload: &[u8],
        signature: &str,
        now: DateTime<Utc>,
    ) -> Result<WebhookEvent, ApiError>;
}

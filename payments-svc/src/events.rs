//! The events payments-svc emits through its outbox: `invoice.created`, `invoice.updated`,
//! `payment.confirmed` and `payment.refunded`, and the internal `pickup_payment.paid` / `pickup_payment.expired` for
//! shipping-svc (not subscribable event kinds: webhooks-svc never sends them to customers).
//! (What it consumes is `crate::consumer`.)

use crate::domain::{Invoice, Payment};
use chrono::{DateTime, Utc};
use platform::outbox::NewEvent;
use platform::time::rfc3339;
use proto::events::event_envelope::Data;
use proto::payments::{InvoiceCreated, InvoiceUpdated, PaymentConfirmed, PickupPaymentUpdated};

/// Event type of an issued invoice.
pub const INVOICE_CREATED: &str = "invoice.created";
/// Event type of an invoice status change.
pub const INVOICE_UPDATED: &str = "invoice.updated";
/// Event type of a settled payment.
pub const PAYMENT_CONFIRMED: &str = "payment.confirmed";

/// Event type of a settled door-pickup payment (internal).
pub const PICKUP_PAYMENT_PAID: &str = "pickup_payment.paid";
/// Event type of a door-pickup payment that expired unpaid (internal).
pub const PICKUP_PAYMENT_EXPIRED: &str = "pickup_payment.expired";

/// `invoice.created` for a freshly issued invoice.
pub fn invoice_created(invoice: &Invoice) -> NewEvent {
    NewEvent {
        event_type: INVOICE_CREATED,
        customer_id: invoice.customer_id,
        subject_id: invoice.id.to_string(),
        data: Data::InvoiceCreated(InvoiceCreated {
            invoice_id: invoice.id.to_string(),
            invoice_number: invoice.invoice_number.clone(),
            order_id: invoice.order_id.to_string(),
            order_number: invoice.order_number.clone(),
            status: invoice.status as i32,
            legacy_status: invoice.status.as_str().to_owned(),
            payment_method: invoice.payment_method as i32,
            legacy_payment_method: invoice.payment_method.as_str().to_owned(),
            currency: invoice.currency.clone(),
            total_cents: invoice.total.0,
            amount_due_cents: invoice.amount_due.0,
            issued_at: rfc3339(invoice.issued_at),
            due_at: rfc3339(invoice.due_at),
            addon_id: invoice.addon_id.map(|id| id.to_string()),
        }),
    }
}

/// `invoice.updated` for an invoice that just changed status (`invoice` is the new state).
pub fn invoice_updated(invoice: &Invoice, updated_at: DateTime<Utc>) -> NewEvent {
    NewEvent {
        event_type: INVOICE_UPDATED,
        customer_id: invoice.customer_id,
        subject_id: invoice.id.to_string(),
        data: Data::InvoiceUpdated(InvoiceUpdated {
            invoice_id: invoice.id.to_string(),
            invoice_number: invoice.invoice_number.clone(),
            order_id: invoice.order_id.to_string(),
            order_number: invoice.order_number.clone(),
            status: invoice.status as i32,
            legacy_status: invoice.status.as_str().to_owned(),
            previous_status: invoice.previous_status.unwrap_or_default() as i32,
            legacy_previous_status: invoice.previous_status.unwrap_or_default().as_str().to_owned(),
            amount_paid_cents: invoice.amount_paid.0,
            amount_due_cents: invoice.amount_due.0,
            updated_at: rfc3339(updated_at),
            addon_id: invoice.addon_id.map(|id| id.to_string()),
        }),
    }
}

/// `payment.confirmed` when `payment` brought `invoice` to paid. The amount is everything paid
/// on the invoice (the sum of its payments), the id that of the payment that completed it.
pub fn payment_confirmed(payment: &Payment, invoice: &Invoice, confirmed_at: DateTime<Utc>) -> NewEvent {
    NewEvent {
        event_type: PAYMENT_CONFIRMED,
        customer_id: invoice.customer_id,
        subject_id: payment.id.to_string(),
        data: Data::PaymentConfirmed(PaymentConfirmed {
            payment_id: payment.id.to_string(),
            invoice_id: invoice.id.to_string(),
            invoice_number: invoice.invoice_number.clone(),
            order_id: invoice.order_id.to_string(),
            order_number: invoice.order_number.clone(),
            rail: payment.rail as i32,
            legacy_rail: payment.rail.as_str().to_owned(),
            amount_cents: invoice.amount_paid.0,
            currency: invoice.currency.clone(),
            confirmed_at: rfc3339(confirmed_at),
            transaction_hash: None,
            addon_id: invoice.addon_id.map(|id| id.to_string()),
        }),
    }
}

/// `pickup_payment.paid`: `payment` settled the pickup session `session`.
pub fn pickup_payment_paid(
    session: &crate::domain::checkout::CheckoutSession,
    charge: &crate::domain::checkout::PickupCharge,
    payment: &crate::repo::checkout::PickupPayment,
    paid_at: DateTime<Utc>,
) -> NewEvent {
    NewEvent {
        event_type: PICKUP_PAYMENT_PAID,
        customer_id: session.customer_id,
        subject_id: charge.pickup_id.to_string(),
        data: Data::PickupPaymentUpdated(PickupPaymentUpdated {
            pickup_id: charge.pickup_id.to_string(),
            session_id: session.id.clone(),
            order_id: charge.order_id.to_string(),
            order_number: charge.order_number.clone(),
            status: "paid".to_owned(),
            payment_reference: payment.external_reference.clone(),
            amount_cents: payment.amount.0,
            currency: payment.currency.clone(),
            occurred_at: rfc3339(paid_at),
        }),
    }
}

/// `pickup_payment.expired`: the pickup session `session` expired unpaid.
pub fn pickup_payment_expired(
    session: &crate::repo::checkout::ExpiredSession,
    charge: &crate::domain::checkout::PickupCharge,
    expired_at: DateTime<Utc>,
) -> NewEvent {
    NewEvent {
        event_type: PICKUP_PAYMENT_EXPIRED,
        customer_id: session.customer_id,
        subject_id: charge.pickup_id.to_string(),
        data: Data::PickupPaymentUpdated(PickupPaymentUpdated {
            pickup_id: charge.pickup_id.to_string(),
            session_id: session.id.clone(),
            order_id: charge.order_id.to_string(),
            order_number: charge.order_number.clone(),
            status: "expired".to_owned(),
            payment_reference: String::new(),
            amount_cents: session.amount.0,
            currency: session.currency.clone(),
            occurred_at: rfc3339(expired_at),
        }),
    }
}

/// Event type of money given back.
pub const PAYMENT_REFUNDED: &str = "payment.refunded";

/// `payment.refunded`: `refund` completed at `refunded_at`.
pub fn payment_refunded(refund: &crate::repo::refunds::Refund, refunded_at: DateTime<Utc>) -> NewEvent {
    NewEvent {
        event_type: PAYMENT_REFUNDED,
        customer_id: refund.customer_id,
        subject_id: refund.payment_id.to_string(),
        data: Data::PaymentRefunded(proto::payments::PaymentRefunded {
            refund_id: refund.id.to_string(),
            payment_id: refund.payment_id.to_string(),
            invoice_id: refund.invoice_id.to_string(),
            invoice_number: refund.invoice_number.clone(),
            order_id: refund.order_id.to_string(),
            order_number: refund.order_number.clone(),
            rail: refund.rail as i32,
            amount_cents: refund.amount.0,
            currency: refund.currency.clone(),
            refunded_at: rfc3339(refunded_at),
            reference: refund.reference(),
        }),
    }
}

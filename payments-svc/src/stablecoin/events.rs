//! The stablecoin rail's events, through the outbox like every other: `payment.requested`,
//! `payment.observed`, `payment.confirming`, `payment.reorged` and `payment.expired`
//! (`payment.confirmed` is the one of `crate::events`, with the transaction hash set).

use super::request::PaymentRequest;
use chrono::{DateTime, Utc};
use platform::outbox::NewEvent;
use platform::time::rfc3339;
use proto::events::event_envelope::Data;
use proto::payments::{PaymentConfirming, PaymentExpired, PaymentObserved, PaymentReorged, PaymentRequested};

pub const PAYMENT_REQUESTED: &str = "payment.requested";
pub const PAYMENT_OBSERVED: &str = "payment.observed";
pub const PAYMENT_CONFIRMING: &str = "payment.confirming";
pub const PAYMENT_REORGED: &str = "payment.reorged";
pub const PAYMENT_EXPIRED: &str = "payment.expired";

fn event(request: &PaymentRequest, event_type: &'static str, data: Data) -> NewEvent {
    NewEvent {
        event_type,
        customer_id: request.customer_id,
        subject_id: request.id.to_string(),
        data,
    }
}

/// `payment.requested`: the exact amount, target and token of a (re)issued request.
pub fn requested(request: &PaymentRequest) -> NewEvent {
    event(
        request,
        PAYMENT_REQUESTED,
        Data::PaymentRequested(PaymentRequested {
            payment_request_id: request.id.to_string(),
            invoice_id: request.invoice_id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number.clone(),
            chain_id: request.chain_id,
            token_address: request.token.checksummed(),
            recipient_address: request.target.checksummed(),
            amount_atomic: request.amount.atomic.to_string(),
            amount_decimal: request.amount.decimal(),
            reference_atomic: request.amount.reference.to_string(),
            expires_at: rfc3339(request.expires_at),
        }),
    )
}

/// `payment.observed`: a matching transfer was first seen.
pub fn observed(request: &PaymentRequest, tx_hash: &str, block_number: u64, at: DateTime<Utc>) -> NewEvent {
    event(
        request,
        PAYMENT_OBSERVED,
        Data::PaymentObserved(PaymentObserved {
            payment_request_id: request.id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number.clone(),
            transaction_hash: tx_hash.to_owned(),
            block_number,
            observed_at: rfc3339(at),
        }),
    )
}

/// `payment.confirming`: the transfer waits for finalization (`confirmations` blocks so far).
pub fn confirming(
    request: &PaymentRequest,
    tx_hash: &str,
    confirmations: u64,
    at: DateTime<Utc>,
) -> NewEvent {
    event(
        request,
        PAYMENT_CONFIRMING,
        Data::PaymentConfirming(PaymentConfirming {
            payment_request_id: request.id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number.clone(),
            transaction_hash: tx_hash.to_owned(),
            confirmations,
            updated_at: rfc3339(at),
        }),
    )
}

/// `payment.reorged`: the observed transfer left the canonical chain.
pub fn reorged(request: &PaymentRequest, tx_hash: &str, at: DateTime<Utc>) -> NewEvent {
    event(
        request,
        PAYMENT_REORGED,
        Data::PaymentReorged(PaymentReorged {
            payment_request_id: request.id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number.clone(),
            transaction_hash: tx_hash.to_owned(),
            detected_at: rfc3339(at),
        }),
    )
}

/// `payment.expired`: unpaid past its expiry.
pub fn expired(request: &PaymentRequest, at: DateTime<Utc>) -> NewEvent {
    event(
        request,
        PAYMENT_EXPIRED,
        Data::PaymentExpired(PaymentExpired {
            payment_request_id: request.id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number.clone(),
            expired_at: rfc3339(at),
        }),
    )
}

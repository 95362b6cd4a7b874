//! Customer notifications (docs/notifications.md): the consent a customer records for its own end
//! customer's address, and the consent-gated email of a published COA to that address.
//!
//! Send: claim the key → validate → the customer's own COA in force (else `not_found` /
//! `conflict`) and its PDF → one transaction holding the recipient's active consent row lock
//! (none: `consent_required`): the per-recipient limit (`rate_limited`), the email row `sending`
//! and its id as the recovery point → SMTP → one transaction: `sent` and the stored answer, or
//! `failed` (503, the claim released; a retry with the same key resumes the same row and
//! Message-ID after checking consent again). Unsubscribe: a signed token names the consent,
//! withdrawn once (`one_click_unsubscribe`).

pub mod consent;
mod consents;
pub mod email;
pub mod repo;
mod send;
pub mod token;

use crate::service::ResultsService;
use chrono::Duration;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::IdempotencyStore;
use platform::mail::Mailer;
use platform::pagination::Listing;
use sqlx::PgPool;
use std::sync::Arc;
use token::UnsubscribeKeys;
use uuid::Uuid;

/// Idempotency operation name of RecordConsent.
pub const OPERATION_RECORD_CONSENT: &str = "notifications.record_consent";
/// Idempotency operation name of SendCoaEmail.
pub const OPERATION_SEND_COA_EMAIL: &str = "notifications.send_coa_email";
/// The listing of a customer's consents, newest recorded first.
pub const CONSENTS: Listing = Listing::new("recipient_consents");
/// The window of the per-recipient limit.
pub const RATE_WINDOW: Duration = Duration::hours(24);
/// Path of the public unsubscribe link under the site root; the token follows.
pub const UNSUBSCRIBE_PATH: &str = "/api/v1/unsubscribe/";

/// The notification use cases and what they need.
#[derive(Clone)]
pub struct Notifications {
    pool: PgPool,
    results: Arc<ResultsService>,
    mailer: Mailer,
    keys: UnsubscribeKeys,
    /// COA emails per customer and recipient in any 24 hours.
    daily_limit: u32,
    idempotency: IdempotencyStore,
}

/// The outcome of an unsubscribe link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unsubscribed {
    /// The consent is withdrawn (now or before).
    pub withdrawn: bool,
    /// It was withdrawn before this call.
    pub unchanged: bool,
}

impl Notifications {
    pub fn new(
        pool: PgPool,
        results: Arc<ResultsService>,
        mailer: Mailer,
        keys: UnsubscribeKeys,
        daily_limit: u32,
    ) -> Self {
        // The claim outlives the SMTP conversation (lettre's own timeout is a minute), so a retry
        // never takes over a send that is still talking to the relay.
        let idempotency = IdempotencyStore::new(crate::SCHEMA).with_timing(
            std::time::Duration::from_secs(120),
            std::time::Duration::from_secs(10),
        );
        Self {
            pool,
            results,
            mailer,
            keys,
            daily_limit,
            idempotency,
        }
    }
}

fn second_consent(existing: Option<Uuid>) -> ApiError {
    let error = ApiError::field(
        ErrorCode::Conflict,
        "recipientEmail",
        "this recipient already has an active consent; withdraw it first to record another",
    );
    match existing {
        Some(id) => error.with_details(serde_json::json!({ "consentId": id })),
        None => error,
    }
}

fn link_not_valid() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "unsubscribe link not valid or expired")
}

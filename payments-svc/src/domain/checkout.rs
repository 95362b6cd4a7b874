//! Hosted card checkout: the session bound to one invoice or one door pickup (single use,
//! amount-locked, expiring), its public id, and the sandbox processor's well-known test cards.
//!
//! A session is `open` until it is paid (`completed`) or its time runs out (`expired`); a
//! declined card leaves it `open`. At most one session of an invoice is open at a time; a door
//! pickup has exactly one session, ever.

use chrono::{DateTime, Datelike, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use rand::Rng;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Prefix of a session's public id.
pub const SESSION_ID_PREFIX: &str = "cs_";
/// Random characters after the prefix (base62: about 190 bits).
const SESSION_ID_RANDOM_CHARS: usize = 32;
const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Draws `length` random base62 characters.
pub fn random_base62(length: usize) -> String {
    let mut rng = rand::rng();
    (0..length)
        .map(|_| char::from(BASE62[rng.random_range(0..BASE62.len())]))
        .collect()
}

/// A new public session id: `cs_` and 32 random base62 characters. The id is the capability of
/// the hosted URL (as with Stripe Checkout), so it is unguessable.
pub fn new_session_id() -> String {
    format!("{SESSION_ID_PREFIX}{}", random_base62(SESSION_ID_RANDOM_CHARS))
}

/// True when `value` has the shape of a session id (anything else is a 404 without a lookup).
pub fn is_session_id(value: &str) -> bool {
    value.len() == SESSION_ID_PREFIX.len() + SESSION_ID_RANDOM_CHARS
        && value.starts_with(SESSION_ID_PREFIX)
        && value[SESSION_ID_PREFIX.len()..]
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric())
}

/// Status of a checkout session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckoutStatus {
    Open,
    Completed,
    Expired,
}

impl CheckoutStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckoutStatus::Open => "open",
            CheckoutStatus::Completed => "completed",
            CheckoutStatus::Expired => "expired",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "open" => Some(CheckoutStatus::Open),
            "completed" => Some(CheckoutStatus::Completed),
            "expired" => Some(CheckoutStatus::Expired),
            _ => None,
        }
    }
}

/// Which processor takes the card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessorKind {
    /// The built-in sandbox: our own pay page takes test cards.
    Sandbox,
    /// A Stripe-shaped PSP: the pay page sends the payer to the PSP's hosted checkout.
    Stripe,
}

impl ProcessorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessorKind::Sandbox => "sandbox",
            ProcessorKind::Stripe => "stripe",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "sandbox" => Some(ProcessorKind::Sandbox),
            "stripe" => Some(ProcessorKind::Stripe),
            _ => None,
        }
    }
}

/// A door pickup a session pays (shipping-svc owns the pickup; it has no invoice).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PickupCharge {
    pub pickup_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    /// The one line the pay page shows ("Door pickup 2026-11-25 09:00-12:00").
    pub description: String,
}

/// What a session pays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionSubject {
    /// An order's invoice (the card rail): settling it pays the invoice.
    Invoice(Uuid),
    /// A door pickup: settling it records a pickup payment and tells shipping-svc
    /// (`pickup_payment.paid`), which books the pickup.
    Pickup(PickupCharge),
}

impl SessionSubject {
    /// `invoice` or `pickup` (the `purpose` column and the page's `purpose`).
    pub fn purpose(&self) -> &'static str {
        match self {
            SessionSubject::Invoice(_) => PURPOSE_INVOICE,
            SessionSubject::Pickup(_) => PURPOSE_PICKUP,
        }
    }
}

/// `purpose` of a session that pays an invoice.
pub const PURPOSE_INVOICE: &str = "invoice";
/// `purpose` of a session that pays a door pickup.
pub const PURPOSE_PICKUP: &str = "pickup";

/// A hosted checkout session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckoutSession {
    pub id: String,
    pub customer_id: Uuid,
    /// The invoice or the door pickup it pays.
    pub subject: SessionSubject,
    pub amount: Cents,
    pub currency: String,
    pub status: CheckoutStatus,
    pub processor: ProcessorKind,
    pub processor_session_id: Option<String>,
    pub processor_url: Option<String>,
    /// `{site_url}/pay/{id}`.
    pub hosted_url: String,
    pub pending_token: Option<String>,
    pub last_error: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl CheckoutSession {
    /// The invoice the session pays (`None` for a door pickup).
    pub fn invoice_id(&self) -> Option<Uuid> {
        match &self.subject {
            SessionSubject::Invoice(id) => Some(*id),
            SessionSubject::Pickup(_) => None,
        }
    }

    /// The door pickup the session pays, if it pays one.
    pub fn pickup(&self) -> Option<&PickupCharge> {
        match &self.subject {
            SessionSubject::Pickup(charge) => Some(charge),
            SessionSubject::Invoice(_) => None,
        }
    }

    /// True when the session can take a payment attempt at `now`.
    pub fn is_payable(&self, now: DateTime<Utc>) -> bool {
        self.status == CheckoutStatus::Open && now < self.expires_at
    }

    /// The status a reader sees at `now`: an open session past its expiry reads as expired
    /// even before the sweeper wrote it.
    pub fn status_at(&self, now: DateTime<Utc>) -> CheckoutStatus {
        match self.status {
            CheckoutStatus::Open if now >= self.expires_at => CheckoutStatus::Expired,
            status => status,
        }
    }
}

/// How logs name session `id` without revealing it: the id is the capability to pay (the pay
/// link), so logs carry the first 12 hex digits of its SHA-256 instead (`ses_` + them), enough to
/// correlate lines and find the row (`encode(sha256(id::bytea), 'hex') LIKE '<ref>%'`).
pub fn log_ref(id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    format!("ses_{}", &hex::encode(digest)[..12])
}

/// The hosted URL of session `id` under `site_url`.
pub fn hosted_url(site_url: &str, id: &str) -> String {
    format!("{}/pay/{id}", site_url.trim_end_matches('/'))
}

/// What a sandbox test card does when charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardBehaviour {
    Succeeds,
    GenericDecline,
    InsufficientFunds,
    ExpiredCard,
    /// Asks for an authentication step (3-D Secure) before it succeeds.
    RequiresAuthentication,
}

impl CardBehaviour {
    pub fn as_str(self) -> &'static str {
        match self {
            CardBehaviour::Succeeds => "succeeds",
            CardBehaviour::GenericDecline => "generic_decline",
            CardBehaviour::InsufficientFunds => "insufficient_funds",
            CardBehaviour::ExpiredCard => "expired_card",
            CardBehaviour::RequiresAuthentication => "requires_authentication",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        [
            CardBehaviour::Succeeds,
            CardBehaviour::GenericDecline,
            CardBehaviour::InsufficientFunds,
            CardBehaviour::ExpiredCard,
            CardBehaviour::RequiresAuthentication,
        ]
        .into_iter()
        .find(|behaviour| behaviour.as_str() == value)
    }
}

/// The sandbox's test cards (Stripe's well-known numbers): number, brand, behaviour.
pub const TEST_CARDS: &[(&str, &str, CardBehaviour)] = &[
    ("4242424242424242", "visa", CardBehaviour::Succeeds),
    ("5555555555554444", "mastercard", CardBehaviour::Succeeds),
    ("4000000000000002", "visa", CardBehaviour::GenericDecline),
    ("4000000000009995", "visa", CardBehaviour::InsufficientFunds),
    ("4000000000000069", "visa", CardBehaviour::ExpiredCard),
    ("4000002500003155", "visa", CardBehaviour::RequiresAuthentication),
];

/// A card as typed on the pay page, validated: digits only (spaces and dashes dropped), a test
/// card of the sandbox, a month 1..=12, a four-digit year, a 3–4 digit CVC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestCard {
    pub brand: &'static str,
    pub last4: String,
    pub exp_month: i32,
    pub exp_year: i32,
    pub behaviour: CardBehaviour,
}

fn card_field(field: &str, message: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message)
}

impl TestCard {
    /// Validates a typed card (the number never appears in an error or a log).
    pub fn parse(number: &str, exp_month: i32, exp_year: i32, cvc: &str) -> Result<Self, ApiError> {
        let digits: String = number
            .chars()
            .filter(|character| !matches!(character, ' ' | '-'))
            .collect();
        if digits.len() < 12 || digits.len() > 19 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(card_field(
                "card.number",
                "the card number must be 12 to 19 digits",
            ));
        }
        let Some((_, brand, behaviour)) = TEST_CARDS.iter().find(|(test, _, _)| *test == digits) else {
            return Err(card_field(
                "card.number",
                "the sandbox takes only its test card numbers (for example 4242 4242 4242 4242)",
            ));
        };
        if !(1..=12).contains(&exp_month) {
            return Err(card_field("card.expMonth", "the expiry month must be 1 to 12"));
        }
        if !(2000..=2099).contains(&exp_year) {
            return Err(card_field(
                "card.expYear",
                "the expiry year must have four digits",
            ));
        }
        if !(3..=4).contains(&cvc.len()) || !cvc.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(card_field("card.cvc", "the security code must be 3 or 4 digits"));
        }
        Ok(Self {
            brand,
            last4: digits[digits.len() - 4..].to_owned(),
            exp_month,
            exp_year,
            behaviour: *behaviour,
        })
    }

    /// True when the card's expiry month has passed at `now`.
    pub fn is_past_expiry(&self, now: DateTime<Utc>) -> bool {
        (self.exp_year, self.exp_month) < (now.year(), i32::try_from(now.month()).unwrap_or(12))
    }
}

/// A saved card as the pay page lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedCard {
    pub token: String,
    pub brand: String,
    pub last4: String,
    pub exp_month: i32,
    pub exp_year: i32,
}

/// What the pay page shows: the session, the order and its invoice lines, the customer's saved
/// cards (sandbox) and the state of the last attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckoutPage {
    pub session: CheckoutSession,
    pub order_number: String,
    /// Empty for a door pickup (it has no invoice).
    pub invoice_number: String,
    pub lines: Vec<crate::domain::InvoiceLine>,
    pub total: Cents,
    pub saved_cards: Vec<SavedCard>,
    pub awaiting_confirmation: bool,
}

/// What a payment attempt on the pay page came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PayOutcome {
    /// This attempt paid the session (the invoice settled).
    Paid,
    /// The session had been paid before (double click, second tab): nothing was charged.
    AlreadyPaid,
    /// The card was declined; the session stays open until it expires.
    Declined { code: &'static str, message: String },
    /// The card asks for its authentication step (confirm page).
    RequiresConfirmation,
    /// The session expired before this attempt: nothing was charged.
    Expired,
}

impl PayOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            PayOutcome::Paid => "paid",
            PayOutcome::AlreadyPaid => "already_paid",
            PayOutcome::Declined { .. } => "declined",
            PayOutcome::RequiresConfirmation => "requires_confirmation",
            PayOutcome::Expired => "expired",
        }
    }
}

/// How a page payment pays: a newly typed card, or a saved card's token.
#[derive(Clone, Debug)]
pub enum PaymentSource {
    Card { card: TestCard, save: bool },
    Saved { token: String },
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_session_is_named_in_logs_by_a_reference_that_does_not_contain_its_id() {
        let id = "cs_AbCdEfGhIjKlMnOpQrStUvWxYz012345";
        let reference = log_ref(id);
        assert!(
            reference.starts_with("ses_") && reference.len() == 16,
            "{reference}"
        );
        assert!(!reference.contains(&id[3..9]));
        assert_eq!(reference, log_ref(id), "stable, so log lines correlate");
        assert_ne!(reference, log_ref("cs_AbCdEfGhIjKlMnOpQrStUvWxYz012346"));
    }

    use super::*;

    #[test]
    fn session_ids_are_unguessable_and_recognised_by_shape() {
        let id = new_session_id();
        assert!(is_session_id(&id), "{id}");
        assert_ne!(id, new_session_id());
        assert!(!is_session_id("cs_short"));
        assert!(!is_session_id(&format!("cs_{}", "!".repeat(32))));
        assert!(!is_session_id(&format!("xx_{}", "a".repeat(32))));
    }

    #[test]
    fn the_well_known_test_numbers_have_their_behaviours() {
        let card = |number| TestCard::parse(number, 12, 2034, "123").unwrap().behaviour;
        assert_eq!(card("4242 4242 4242 4242"), CardBehaviour::Succeeds);
        assert_eq!(card("4000000000000002"), CardBehaviour::GenericDecline);
        assert_eq!(card("4000-0000-0000-9995"), CardBehaviour::InsufficientFunds);
        assert_eq!(card("4000000000000069"), CardBehaviour::ExpiredCard);
        assert_eq!(card("4000002500003155"), CardBehaviour::RequiresAuthentication);
        let parsed = TestCard::parse("4242424242424242", 1, 2030, "999").unwrap();
        assert_eq!((parsed.brand, parsed.last4.as_str()), ("visa", "4242"));
    }

    #[test]
    fn malformed_cards_name_the_field_and_never_echo_the_number() {
        let field = |error: ApiError| error.details.unwrap()["field"].as_str().unwrap().to_owned();
        let unknown = TestCard::parse("4111111111111111", 12, 2034, "123").unwrap_err();
        assert!(!unknown.message.contains("4111"));
        assert_eq!(field(unknown), "card.number");
        assert_eq!(
            field(TestCard::parse("4242", 12, 2034, "123").unwrap_err()),
            "card.number"
        );
        assert_eq!(
            field(TestCard::parse("4242424242424242", 13, 2034, "123").unwrap_err()),
            "card.expMonth"
        );
        assert_eq!(
            field(TestCard::parse("4242424242424242", 12, 34, "123").unwrap_err()),
            "card.expYear"
        );
        assert_eq!(
            field(TestCard::parse("4242424242424242", 12, 2034, "12a").unwrap_err()),
            "card.cvc"
        );
    }

    #[test]
    fn an_open_session_past_its_expiry_reads_as_expired_and_takes_no_payment() {
        let now = Utc::now();
        let session = CheckoutSession {
            id: new_session_id(),
            customer_id: Uuid::nil(),
            subject: SessionSubject::Invoice(Uuid::nil()),
            amount: Cents(100),
            currency: "USD".into(),
            status: CheckoutStatus::Open,
            processor: ProcessorKind::Sandbox,
            processor_session_id: None,
            processor_url: None,
            hosted_url: String::new(),
            pending_token: None,
            last_error: None,
            expires_at: now,
            created_at: now,
            completed_at: None,
        };
        assert!(!session.is_payable(now));
        assert_eq!(session.status_at(now), CheckoutStatus::Expired);
        assert!(session.is_payable(now - chrono::Duration::seconds(1)));
        assert_eq!(
            session.status_at(now - chrono::Duration::seconds(1)),
            CheckoutStatus::Open
        );
    }
}

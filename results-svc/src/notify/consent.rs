//! Consent records and COA emails as the domain sees them: the closed lists (mechanisms of
//! consent and of withdrawal, email statuses) and the validation of what a customer records or
//! sends. Nothing here touches the database or the mail relay.

use chrono::{DateTime, Duration, Utc};
use platform::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How a recipient gave consent (the closed list the API accepts).
pub const CONSENT_MECHANISMS: [&str; 5] = [
    "web_form",
    "email_reply",
    "signed_paper",
    "verbal_recorded",
    "in_app",
];
/// Withdrawal through the API by the customer.
pub const WITHDRAWN_BY_CUSTOMER: &str = "customer_request";
/// Withdrawal by the recipient through the email's one-click unsubscribe link.
pub const WITHDRAWN_BY_ONE_CLICK: &str = "one_click_unsubscribe";
/// Longest address accepted (RFC 5321's path limit).
pub const MAX_EMAIL_CHARS: usize = 254;
/// Longest note from the customer quoted in a COA email.
pub const MAX_MESSAGE_CHARS: usize = 2000;
/// Longest `consentedBy`, `textVersion` and `evidenceReference`.
const MAX_NAME_CHARS: usize = 200;
const MAX_VERSION_CHARS: usize = 64;
const MAX_EVIDENCE_CHARS: usize = 500;
/// How far in the future `consentedAt` may be (clock skew between the customer and us).
const FUTURE_TOLERANCE: Duration = Duration::minutes(5);

/// A recorded consent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Consent {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub recipient_email: String,
    pub consented_by: String,
    pub consented_at: DateTime<Utc>,
    pub text_version: String,
    pub mechanism: String,
    pub evidence_reference: Option<String>,
    pub recorded_at: DateTime<Utc>,
    pub withdrawn_at: Option<DateTime<Utc>>,
    pub withdrawal_mechanism: Option<String>,
}

impl Consent {
    /// `active` or `withdrawn`.
    pub fn status(&self) -> &'static str {
        if self.withdrawn_at.is_some() {
            "withdrawn"
        } else {
            "active"
        }
    }
}

/// A consent as the customer asks to record it, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct NewConsent {
    pub recipient_email: String,
    pub consented_by: String,
    pub consented_at: DateTime<Utc>,
    pub text_version: String,
    pub mechanism: String,
    pub evidence_reference: Option<String>,
}

/// The consent fields as received.
#[derive(Clone, Debug, Default)]
pub struct ConsentInput {
    pub recipient_email: String,
    pub consented_by: String,
    pub consented_at: Option<DateTime<Utc>>,
    pub text_version: String,
    pub mechanism: String,
    pub evidence_reference: Option<String>,
}

impl NewConsent {
    /// Validates `input` at `now`: a plain address, one-line texts within their limits, a known
    /// mechanism and a consent time that is not in the future.
    pub fn validate(input: ConsentInput, now: DateTime<Utc>) -> Result<Self, ApiError> {
        let recipient_email = recipient(&input.recipient_email)?;
        let consented_by = one_line("consentedBy", &input.consented_by, MAX_NAME_CHARS)?;
        let text_version = one_line("textVersion", &input.text_version, MAX_VERSION_CHARS)?;
        let mechanism = input.mechanism.trim();
        if !CONSENT_MECHANISMS.contains(&mechanism) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "mechanism",
                format!("mechanism must be one of {}", CONSENT_MECHANISMS.join(", ")),
            )
            .with_details(serde_json::json!({ "allowed": CONSENT_MECHANISMS })));
        }
        let consented_at = input.consented_at.ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                "consentedAt",
                "consentedAt is required (ISO 8601)",
            )
        })?;
        if consented_at > now + FUTURE_TOLERANCE {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "consentedAt",
                "consentedAt is in the future",
            ));
        }
        let evidence_reference = match input.evidence_reference.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(evidence) => Some(one_line("evidenceReference", evidence, MAX_EVIDENCE_CHARS)?),
        };
        Ok(Self {
            recipient_email,
            consented_by,
            consented_at,
            text_version,
            mechanism: mechanism.to_owned(),
            evidence_reference,
        })
    }
}

/// The recipient address, trimmed: one plain mailbox (`name@domain`) of at most 254 characters.
pub fn recipient(address: &str) -> Result<String, ApiError> {
    let address = address.trim();
    if address.is_empty()
        || address.chars().count() > MAX_EMAIL_CHARS
        || !platform::mail::is_plain_address(address)
    {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "recipientEmail",
            "recipientEmail must be one plain email address (name@domain, at most 254 characters)",
        ));
    }
    Ok(address.to_owned())
}

/// How addresses are compared: without regard to case.
pub fn recipient_key(address: &str) -> String {
    address.trim().to_lowercase()
}

/// The customer's optional note: plain text of at most 2000 characters, line breaks kept
/// (`\r\n` becomes `\n`), no other control character. Empty is none.
pub fn note(message: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(message) = message else {
        return Ok(None);
    };
    let message = message.replace("\r\n", "\n");
    if message.trim().is_empty() {
        return Ok(None);
    }
    let refuse = |why: &str| ApiError::field(ErrorCode::InvalidRequest, "message", why.to_owned());
    if message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(refuse("message is at most 2000 characters of plain text"));
    }
    if message.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(refuse(
            "message is plain text: no control characters other than line breaks and tabs",
        ));
    }
    Ok(Some(message.trim_end().to_owned()))
}

fn one_line(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max || value.chars().any(char::is_control) {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            field,
            format!("{field} is one line of 1 to {max} characters"),
        ));
    }
    Ok(value.to_owned())
}

/// One COA email as recorded (the answer of SendCoaEmail, stored for replays).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoaEmail {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub coa_id: Uuid,
    pub accession_number: String,
    pub consent_id: Uuid,
    pub recipient_email: String,
    /// `sending`, `sent` or `failed`.
    pub status: String,
    pub message_id: String,
    pub verify_url: String,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> ConsentInput {
        ConsentInput {
            recipient_email: " Buyer@Example.org ".into(),
            consented_by: "Jane Buyer (CRM 4411)".into(),
            consented_at: Some(platform::time::now() - Duration::days(1)),
            text_version: "2026-01".into(),
            mechanism: "web_form".into(),
            evidence_reference: Some("form-991".into()),
        }
    }

    #[test]
    fn a_complete_consent_is_accepted_with_the_address_trimmed() {
        let consent = NewConsent::validate(input(), platform::time::now()).unwrap();
        assert_eq!(consent.recipient_email, "Buyer@Example.org");
        assert_eq!(recipient_key(&consent.recipient_email), "buyer@example.org");
    }

    #[test]
    fn an_unknown_mechanism_a_future_consent_and_a_bad_address_are_refused_naming_the_field() {
        let now = platform::time::now();
        let field = |input: ConsentInput| {
            NewConsent::validate(input, now).unwrap_err().details.unwrap()["field"].clone()
        };
        assert_eq!(
            field(ConsentInput {
                mechanism: "guessed".into(),
                ..input()
            }),
            "mechanism"
        );
        assert_eq!(
            field(ConsentInput {
                consented_at: Some(now + Duration::hours(1)),
                ..input()
            }),
            "consentedAt"
        );
        assert_eq!(
            field(ConsentInput {
                consented_at: None,
                ..input()
            }),
            "consentedAt"
        );
        for address in ["no-at", "Jane <jane@example.org>", "a@b@c.org", ""] {
            assert_eq!(
                field(ConsentInput {
                    recipient_email: address.into(),
                    ..input()
                }),
                "recipientEmail"
            );
        }
        assert_eq!(
            field(ConsentInput {
                consented_by: "two\nlines".into(),
                ..input()
            }),
            "consentedBy"
        );
    }

    #[test]
    fn a_note_is_plain_text_within_its_limit() {
        assert_eq!(note(None).unwrap(), None);
        assert_eq!(note(Some("  ".into())).unwrap(), None);
        assert_eq!(
            note(Some("a\r\nb <b>x</b>".into())).unwrap().as_deref(),
            Some("a\nb <b>x</b>")
        );
        assert!(note(Some("x".repeat(2001))).is_err());
        assert!(note(Some("bell\u{7}".into())).is_err());
    }
}

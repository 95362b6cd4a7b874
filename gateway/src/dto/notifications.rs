//! Customer-notification shapes (docs/notifications.md): the consent a customer records for its
//! own end customer's address, the consent list and withdrawal, and the consent-gated COA email.

use super::common::{list_envelope, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::results as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Body of `POST /notifications/consents`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordConsentRequest {
    /// The recipient's address: one plain mailbox (`name@domain`), at most 254 characters.
    /// Addresses are compared without regard to case.
    #[schema(max_length = 254)]
    pub recipient_email: String,
    /// Who consented: a name or an identifier in your own records (one line, 1 to 200 characters).
    #[schema(min_length = 1, max_length = 200)]
    pub consented_by: String,
    /// When the recipient consented (ISO 8601; not in the future).
    #[schema(value_type = String, format = DateTime)]
    pub consented_at: DateTime<Utc>,
    /// Version of the consent text the recipient agreed to, e.g. `2026-01` (1 to 64 characters).
    #[schema(min_length = 1, max_length = 64)]
    pub text_version: String,
    /// How consent was given: `web_form`, `email_reply`, `signed_paper`, `verbal_recorded` or `in_app`.
    pub mechanism: String,
    /// Optional reference to the evidence in your records (form submission id, document number…),
    /// at most 500 characters.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub evidence_reference: Option<String>,
}

/// Query of `GET /notifications/consents`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ConsentsQuery {
    /// Only consents of this address (without regard to case).
    pub recipient_email: Option<String>,
    /// Only `active` or only `withdrawn` consents.
    pub status: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    /// `pagination.nextCursor` of the previous page, unchanged.
    pub cursor: Option<String>,
}

/// A recipient's consent to receive COAs by email.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Consent {
    pub id: String,
    pub recipient_email: String,
    pub consented_by: String,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub consented_at: DateTime<Utc>,
    pub text_version: String,
    /// `web_form`, `email_reply`, `signed_paper`, `verbal_recorded` or `in_app`.
    pub mechanism: String,
    pub evidence_reference: Option<String>,
    /// `active` or `withdrawn`.
    pub status: String,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub withdrawn_at: Option<DateTime<Utc>>,
    /// `customer_request` (withdrawn through the API) or `one_click_unsubscribe` (the recipient
    /// used the link of an email).
    pub withdrawal_mechanism: Option<String>,
    /// When you recorded it.
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: DateTime<Utc>,
}

single_envelope!(ConsentEnvelope, ConsentData, consent: Consent);
list_envelope!(ConsentList, Consent);

impl TryFrom<pb::Consent> for Consent {
    type Error = ApiError;

    fn try_from(consent: pb::Consent) -> Result<Self, ApiError> {
        Ok(Self {
            consented_at: required_time(consent.consented_at.as_ref(), "consent time")?,
            recorded_at: required_time(consent.recorded_at.as_ref(), "consent record time")?,
            withdrawn_at: optional_time(consent.withdrawn_at.as_ref()),
            id: consent.id,
            recipient_email: consent.recipient_email,
            consented_by: consent.consented_by,
            text_version: consent.text_version,
            mechanism: consent.mechanism,
            evidence_reference: consent.evidence_reference,
            status: consent.status,
            withdrawal_mechanism: consent.withdrawal_mechanism,
        })
    }
}

/// Body of `POST /notifications/customer-coa`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendCoaEmailRequest {
    /// One of your published COAs: its id or its accession number (`ACC-…`, the newest
    /// published COA of the accession). It must be in force (not retracted or superseded).
    #[schema(min_length = 1, max_length = 120)]
    pub reference: String,
    /// The recipient: an address with an active consent on record.
    #[schema(max_length = 254)]
    pub recipient_email: String,
    /// Optional note quoted in the email: plain text (line breaks allowed), at most 2000
    /// characters, never rendered as HTML.
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub message: Option<String>,
}

/// One COA email as sent.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoaEmail {
    pub id: String,
    pub coa_id: String,
    pub accession_number: String,
    pub recipient_email: String,
    /// The consent that allowed it.
    pub consent_id: String,
    /// `sent`: the mail relay accepted it. (A relay that refuses is a 503 and nothing is
    /// claimed sent.)
    pub status: String,
    /// The email's `Message-ID` header.
    pub message_id: String,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub sent_at: Option<DateTime<Utc>>,
    /// The COA's public verify link, as written in the email.
    pub verify_url: String,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

single_envelope!(CoaEmailEnvelope, CoaEmailData, email: CoaEmail);

impl TryFrom<pb::CoaEmail> for CoaEmail {
    type Error = ApiError;

    fn try_from(email: pb::CoaEmail) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(email.created_at.as_ref(), "email creation time")?,
            sent_at: optional_time(email.sent_at.as_ref()),
            id: email.id,
            coa_id: email.coa_id,
            accession_number: email.accession_number,
            recipient_email: email.recipient_email,
            consent_id: email.consent_id,
            status: email.status,
            message_id: email.message_id,
            verify_url: email.verify_url,
        })
    }
}

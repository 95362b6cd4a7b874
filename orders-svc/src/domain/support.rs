//! Support tickets: the ticket and its thread, the status machine (open → answered on a staff
//! answer, back to open when the customer writes, closed by staff and final), ticket numbers and
//! references, and the input rules (subject 1 to 200 characters, bodies 1 to 10 000 characters of
//! text stored exactly as written). No SQL, no gRPC.

use super::fields::invalid;
use chrono::{DateTime, Datelike, Utc};
use platform::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;
/// Longest message body (and closing note), in characters.
pub const MAX_BODY_CHARS: usize = 10_000;
/// Longest order reference a ticket may carry, in characters.
pub const MAX_REFERENCE_CHARS: usize = 120;

/// Where a ticket stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatus {
    /// Waiting for staff.
    Open,
    /// Staff answered last.
    Answered,
    /// Closed by staff; final.
    Closed,
}

impl TicketStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [TicketStatus; 3] = [Self::Open, Self::Answered, Self::Closed];

    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Answered => "answered",
            Self::Closed => "closed",
        }
    }

    /// Parses a stored name.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == value)
    }

    /// Parses a `status` filter: 400 `invalid_request` naming the allowed values otherwise.
    pub fn parse_filter(value: &str) -> Result<Self, ApiError> {
        Self::parse(value.trim()).ok_or_else(|| {
            invalid("status", "status must be one of open, answered, closed").with_details(
                serde_json::json!({ "field": "status", "allowed": ["open", "answered", "closed"] }),
            )
        })
    }

    /// The status after a message by `author`: refused (409 `conflict`) on a closed ticket.
    pub fn after_message(self, author: AuthorKind) -> Result<Self, ApiError> {
        match (self, author) {
            (Self::Closed, _) => Err(ApiError::new(
                ErrorCode::Conflict,
                "the ticket is closed; open a new ticket",
            )),
            (_, AuthorKind::Staff) => Ok(Self::Answered),
            (_, AuthorKind::Customer) => Ok(Self::Open),
        }
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorKind {
    Customer,
    Staff,
}

impl AuthorKind {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Customer => "customer",
            Self::Staff => "staff",
        }
    }

    /// Parses a stored name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "customer" => Some(Self::Customer),
            "staff" => Some(Self::Staff),
            _ => None,
        }
    }
}

/// One message of a thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TicketMessage {
    pub id: Uuid,
    pub author_kind: AuthorKind,
    /// The operator's name for a staff message.
    pub author_name: Option<String>,
    /// Exactly as written.
    pub body: String,
    pub created_at: DateTime<Utc>,
}

/// A ticket with its thread (empty in listings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub id: Uuid,
    pub ticket_number: String,
    pub customer_id: Uuid,
    pub subject: String,
    pub status: TicketStatus,
    /// The reference as the customer gave it.
    pub reference: Option<String>,
    /// The customer's order it resolved to: id and number.
    pub order: Option<(Uuid, String)>,
    pub message_count: i32,
    pub messages: Vec<TicketMessage>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
}

/// A validated request to open a ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTicket {
    pub subject: String,
    pub body: String,
    pub reference: Option<String>,
}

impl NewTicket {
    /// Checks the subject (1 to 200 characters, not blank), the body ([`check_body`]) and the
    /// reference (not blank, at most 120 characters; whether it names an order is the service's
    /// question). An empty reference counts as none.
    pub fn validate(subject: String, body: String, reference: Option<String>) -> Result<Self, ApiError> {
        if subject.trim().is_empty() {
            return Err(invalid("subject", "subject must not be empty"));
        }
        if subject.chars().count() > MAX_SUBJECT_CHARS {
            return Err(invalid(
                "subject",
                format!("subject must be at most {MAX_SUBJECT_CHARS} characters"),
            ));
        }
        check_body("body", &body)?;
        let reference = reference.filter(|reference| !reference.is_empty());
        if let Some(reference) = &reference {
            if reference.trim().is_empty() {
                return Err(invalid("reference", "reference must not be blank"));
            }
            if reference.chars().count() > MAX_REFERENCE_CHARS {
                return Err(invalid(
                    "reference",
                    format!("reference must be at most {MAX_REFERENCE_CHARS} characters"),
                ));
            }
        }
        Ok(Self {
            subject,
            body,
            reference,
        })
    }
}

/// Checks a message body (or closing note) named `field`: 1 to 10 000 characters, not only
/// whitespace. It is stored exactly as written (no trimming, no escaping, no rendering).
pub fn check_body(field: &str, body: &str) -> Result<(), ApiError> {
    if body.trim().is_empty() {
        return Err(invalid(field, format!("{field} must not be empty")));
    }
    if body.chars().count() > MAX_BODY_CHARS {
        return Err(invalid(
            field,
            format!("{field} must be at most {MAX_BODY_CHARS} characters"),
        )
        .with_details(serde_json::json!({ "field": field, "maxLength": MAX_BODY_CHARS })));
    }
    Ok(())
}

/// The public number of a ticket: `TKT-<year>-<6-digit sequence>`.
pub fn ticket_number(created_at: DateTime<Utc>, sequence: i64) -> String {
    format!("TKT-{}-{sequence:06}", created_at.year())
}

/// How a ticket is named: its UUID or its number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketRef {
    Id(Uuid),
    Number(String),
}

impl TicketRef {
    /// Parses a ticket reference; `None` when it cannot name a ticket (answered as `not_found`).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if let Ok(id) = Uuid::parse_str(value) {
            return Some(Self::Id(id));
        }
        (value.len() > 4 && value.starts_with("TKT-")).then(|| Self::Number(value.to_owned()))
    }
}

/// The answer for a ticket that does not exist or belongs to another customer.
pub fn ticket_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "ticket not found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staff_answers_open_tickets_and_customer_messages_reopen_them() {
        use AuthorKind::{Customer, Staff};
        assert_eq!(
            TicketStatus::Open.after_message(Staff).unwrap(),
            TicketStatus::Answered
        );
        assert_eq!(
            TicketStatus::Answered.after_message(Customer).unwrap(),
            TicketStatus::Open
        );
        assert_eq!(
            TicketStatus::Answered.after_message(Staff).unwrap(),
            TicketStatus::Answered
        );
        assert_eq!(
            TicketStatus::Closed.after_message(Staff).unwrap_err().code,
            ErrorCode::Conflict
        );
        assert_eq!(
            TicketStatus::Closed.after_message(Customer).unwrap_err().code,
            ErrorCode::Conflict
        );
    }

    #[test]
    fn bodies_are_counted_in_characters_and_kept_as_written() {
        let body = " <script>alert(1)</script>\n\té".to_owned();
        let ticket = NewTicket::validate("Subject".into(), body.clone(), None).unwrap();
        assert_eq!(ticket.body, body);
        assert!(check_body("body", &"é".repeat(MAX_BODY_CHARS)).is_ok());
        let error = check_body("body", &"é".repeat(MAX_BODY_CHARS + 1)).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "body");
        assert!(check_body("body", " \n ").is_err());
    }

    #[test]
    fn subjects_and_references_are_checked() {
        let long = "s".repeat(MAX_SUBJECT_CHARS + 1);
        assert!(NewTicket::validate(long, "b".into(), None).is_err());
        assert!(NewTicket::validate("  ".into(), "b".into(), None).is_err());
        let none = NewTicket::validate("s".into(), "b".into(), Some(String::new())).unwrap();
        assert_eq!(none.reference, None);
        assert!(NewTicket::validate("s".into(), "b".into(), Some(" ".into())).is_err());
    }

    #[test]
    fn tickets_are_named_by_uuid_or_number() {
        let id = Uuid::now_v7();
        assert_eq!(TicketRef::parse(&id.to_string()), Some(TicketRef::Id(id)));
        assert_eq!(
            TicketRef::parse("TKT-2026-000001"),
            Some(TicketRef::Number("TKT-2026-000001".into()))
        );
        assert_eq!(TicketRef::parse("ORD-2026-000001"), None);
        assert_eq!(TicketRef::parse("TKT-"), None);
    }
}

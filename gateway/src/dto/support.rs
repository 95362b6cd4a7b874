//! Support-ticket shapes (docs/support.md): the open and reply bodies, the list query, the
//! ticket with its thread. Bodies are plain text passed through exactly as written: JSON escapes
//! them, nothing renders them as HTML.

use super::common::{list_envelope, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::orders as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Body of `POST /support/tickets`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenTicketRequest {
    /// One line, 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub subject: String,
    /// The first message: plain text (newlines and tabs allowed), 1 to 10000 characters, stored
    /// exactly as written and never rendered as HTML.
    #[schema(min_length = 1, max_length = 10000)]
    pub body: String,
    /// Optional: one of your orders (order UUID, ORD-…, INV-…, ACC-… or tracking number); an
    /// unknown reference, or another customer's, is 404 `not_found` with `details.field` =
    /// `reference`.
    #[serde(default)]
    #[schema(max_length = 120)]
    pub reference: Option<String>,
}

/// Body of `POST /support/tickets/{ticketId}/messages`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplyToTicketRequest {
    /// Plain text, 1 to 10000 characters, stored exactly as written.
    #[schema(min_length = 1, max_length = 10000)]
    pub body: String,
}

/// Query of `GET /support/tickets`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TicketsQuery {
    /// Only tickets in this status: `open`, `answered` or `closed`.
    pub status: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    /// `pagination.nextCursor` of the previous page, unchanged.
    pub cursor: Option<String>,
}

/// A support ticket. In a list the `messages` array is empty (read one ticket for its thread).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub id: String,
    /// Human number, `TKT-<year>-<six digits>`; accepted wherever a ticket id is.
    pub ticket_number: String,
    pub subject: String,
    /// `open` (waiting for staff), `answered` (staff answered last) or `closed` (final).
    pub status: String,
    /// The reference given when opening, as given.
    pub reference: Option<String>,
    /// The order it resolved to.
    pub order_id: Option<String>,
    pub order_number: Option<String>,
    pub message_count: i32,
    /// The thread, oldest first.
    pub messages: Vec<TicketMessage>,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub closed_at: Option<DateTime<Utc>>,
}

/// One message of a ticket's thread.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketMessage {
    pub id: String,
    /// `customer` or `staff`.
    pub author: String,
    /// The operator's name on a staff message; `null` on the customer's.
    pub author_name: Option<String>,
    /// Plain text exactly as written (never HTML).
    pub body: String,
    #[serde(serialize_with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

single_envelope!(TicketEnvelope, TicketData, ticket: Ticket);
list_envelope!(TicketList, Ticket);

impl TryFrom<pb::Ticket> for Ticket {
    type Error = ApiError;

    fn try_from(ticket: pb::Ticket) -> Result<Self, ApiError> {
        let status = match ticket.status() {
            pb::TicketStatus::Open => "open",
            pb::TicketStatus::Answered => "answered",
            pb::TicketStatus::Closed => "closed",
            pb::TicketStatus::Unspecified => {
                return Err(ApiError::internal(
                    "orders-svc answered a ticket without a status",
                ));
            }
        };
        let messages = ticket
            .messages
            .into_iter()
            .map(TicketMessage::try_from)
            .collect::<Result<_, _>>()?;
        Ok(Self {
            created_at: required_time(ticket.created_at.as_ref(), "ticket creation time")?,
            updated_at: required_time(ticket.updated_at.as_ref(), "ticket update time")?,
            closed_at: optional_time(ticket.closed_at.as_ref()),
            id: ticket.id,
            ticket_number: ticket.ticket_number,
            subject: ticket.subject,
            status: status.to_owned(),
            reference: ticket.reference,
            order_id: ticket.order_id,
            order_number: ticket.order_number,
            message_count: ticket.message_count,
            messages,
        })
    }
}

impl TryFrom<pb::TicketMessage> for TicketMessage {
    type Error = ApiError;

    fn try_from(message: pb::TicketMessage) -> Result<Self, ApiError> {
        let author = match message.author_kind() {
            pb::TicketAuthorKind::Staff => "staff",
            _ => "customer",
        };
        Ok(Self {
            created_at: required_time(message.created_at.as_ref(), "message time")?,
            id: message.id,
            author: author.to_owned(),
            author_name: (!message.author_name.is_empty()).then_some(message.author_name),
            body: message.body,
        })
    }
}

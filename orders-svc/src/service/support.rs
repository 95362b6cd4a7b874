//! Support tickets (docs/support.md): customers open tickets, read them and reply; staff list,
//! answer and close them.
//!
//! Open: claim the key (when the caller sent one: the spec does not require it here) → validate
//! → resolve the optional reference to one of the customer's orders (else `not_found`) → one
//! transaction: the ticket, its first message and the stored answer. Reply: the same under its
//! own key, moving the ticket back to `open`. Answer and close
//! (staff): one transaction holding the ticket's row lock: the message, the new status and the
//! event (`support.ticket_answered`, `support.ticket_closed`) in the outbox.

use crate::OUTBOX;
use crate::config::Settings;
use crate::domain::support::{
    AuthorKind, NewTicket, Ticket, TicketMessage, TicketRef, TicketStatus, check_body, ticket_not_found,
    ticket_number,
};
use crate::repo::support::{self as repo, TicketFilter};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, IdempotencyStore, Json};
use platform::outbox::NewEvent;
use platform::pagination::{After, Listing, Page, PageRequest};
use platform::principal::Principal;
use proto::events::event_envelope::Data;
use proto::orders::{TicketAnswered, TicketClosed};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Idempotency operation name of OpenTicket.
pub const OPERATION_OPEN_TICKET: &str = "support.open_ticket";
/// Idempotency operation name of ReplyToTicket.
pub const OPERATION_REPLY: &str = "support.reply";
/// Event type of a staff answer.
pub const TICKET_ANSWERED: &str = "support.ticket_answered";
/// Event type of a ticket closed by staff.
pub const TICKET_CLOSED: &str = "support.ticket_closed";
/// The listing of a customer's tickets, newest first.
pub const TICKETS: Listing = Listing::new("support_tickets");
/// The staff listing of every customer's tickets, newest first.
pub const ALL_TICKETS: Listing = Listing::new("support_tickets_all");

/// The support-ticket use cases.
#[derive(Clone)]
pub struct SupportDesk {
    pool: PgPool,
    idempotency: IdempotencyStore,
}

/// What a staff answer came to.
#[derive(Clone, Debug)]
pub struct Answering {
    /// The ticket with its thread.
    pub ticket: Ticket,
    /// The same answer was the ticket's latest message already: nothing was posted.
    pub unchanged: bool,
}

/// A ticket after `CloseTicket`, and whether it was closed already.
#[derive(Clone, Debug)]
pub struct Closing {
    pub ticket: Ticket,
    pub already_closed: bool,
}

impl SupportDesk {
    /// Builds the use cases over the orders schema's pool and idempotency store (with the
    /// configured timing).
    pub fn new(pool: PgPool, settings: &Settings) -> Self {
        let idempotency = IdempotencyStore::new(crate::SCHEMA)
            .with_timing(settings.idempotency.lease, settings.idempotency.wait);
        Self { pool, idempotency }
    }

    /// Opens a ticket for the principal's customer, under idempotency `key` when there is one
    /// (without, every call opens a ticket).
    pub async fn open_ticket(
        &self,
        principal: &Principal,
        key: Option<IdempotencyKey>,
        subject: String,
        body: String,
        reference: Option<String>,
    ) -> Answer<Ticket> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let work = async |attempt: Option<&Attempt<'_, Json>>| {
            let request = NewTicket::validate(subject, body, reference)?;
            let mut tx = self.pool.begin().await?;
            let ticket = insert_new_ticket(&mut tx, customer_id, request).await?;
            if let Some(attempt) = attempt {
                attempt.complete(&mut tx, &ticket).await?;
            }
            tx.commit().await?;
            Ok(ticket)
        };
        match key {
            None => Answer::fresh(work(None).await),
            Some(key) => {
                let call = key.call(customer_id, OPERATION_OPEN_TICKET);
                self.idempotency
                    .run(&self.pool, call, &Json, async |attempt| work(Some(attempt)).await)
                    .await
            }
        }
    }

    /// Adds the customer's message to one of its tickets, under idempotency `key` when there is
    /// one; the ticket goes back to `open` (a closed ticket is 409 `conflict`).
    pub async fn reply(
        &self,
        principal: &Principal,
        key: Option<IdempotencyKey>,
        ticket: String,
        body: String,
    ) -> Answer<Ticket> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let work = async |attempt: Option<&Attempt<'_, Json>>| {
            check_body("body", &body)?;
            let mut tx = self.pool.begin().await?;
            let found = lock(&mut tx, Some(customer_id), &ticket).await?;
            let updated = add_message(&mut tx, found, AuthorKind::Customer, None, body).await?;
            if let Some(attempt) = attempt {
                attempt.complete(&mut tx, &updated).await?;
            }
            tx.commit().await?;
            Ok(updated)
        };
        match key {
            None => Answer::fresh(work(None).await),
            Some(key) => {
                let call = key.call(customer_id, OPERATION_REPLY);
                self.idempotency
                    .run(&self.pool, call, &Json, async |attempt| work(Some(attempt)).await)
                    .await
            }
        }
    }

    /// Reads one of the customer's tickets with its thread; another customer's is `not_found`.
    pub async fn get_ticket(&self, customer_id: Uuid, ticket: &str) -> Result<Ticket, ApiError> {
        self.read(Some(customer_id), ticket).await
    }

    /// Reads any ticket with its thread (staff).
    pub async fn read_ticket(&self, ticket: &str) -> Result<Ticket, ApiError> {
        self.read(None, ticket).await
    }

    /// One page of the customer's tickets, newest first.
    pub async fn list_tickets(
        &self,
        customer_id: Uuid,
        status: Option<TicketStatus>,
        page: &PageRequest,
    ) -> Result<Page<Ticket>, ApiError> {
        self.list(TICKETS, Some(customer_id), status, page).await
    }

    /// One page of every customer's tickets (or one customer's), newest first (staff).
    pub async fn list_all_tickets(
        &self,
        customer_id: Option<Uuid>,
        status: Option<TicketStatus>,
        page: &PageRequest,
    ) -> Result<Page<Ticket>, ApiError> {
        self.list(ALL_TICKETS, customer_id, status, page).await
    }

    /// Adds operator `operator`'s answer: the ticket becomes `answered` and
    /// `support.ticket_answered` goes to the outbox in the same transaction. The same answer
    /// again (the ticket's latest message is this operator's with this very body: a retried
    /// command) posts nothing and answers the ticket as it stands, `unchanged`.
    pub async fn answer(&self, operator: &str, ticket: &str, body: String) -> Result<Answering, ApiError> {
        check_body("body", &body)?;
        let mut tx = self.pool.begin().await?;
        let mut found = lock(&mut tx, None, ticket).await?;
        let thread = repo::thread(&mut tx, found.customer_id, found.id).await?;
        let repeated = thread.last().is_some_and(|last| {
            last.author_kind == AuthorKind::Staff
                && last.author_name.as_deref() == Some(operator)
                && last.body == body
        });
        if repeated {
            tx.commit().await?;
            found.messages = thread;
            return Ok(Answering {
                ticket: found,
                unchanged: true,
            });
        }
        let updated = add_message(&mut tx, found, AuthorKind::Staff, Some(operator), body).await?;
        let message = updated
            .messages
            .last()
            .ok_or_else(|| ApiError::internal("an answered ticket has no message"))?;
        OUTBOX
            .enqueue(&mut tx, ticket_answered(&updated, message))
            .await?;
        tx.commit().await?;
        Ok(Answering {
            ticket: updated,
            unchanged: false,
        })
    }

    /// Closes a ticket (staff) with an optional note added to the thread as a staff message;
    /// `support.ticket_closed` goes to the outbox. A closed ticket is answered as it is.
    pub async fn close(
        &self,
        operator: &str,
        ticket: &str,
        note: Option<String>,
    ) -> Result<Closing, ApiError> {
        let note = note.filter(|note| !note.is_empty());
        if let Some(note) = &note {
            check_body("note", note)?;
        }
        let mut tx = self.pool.begin().await?;
        let mut found = lock(&mut tx, None, ticket).await?;
        if found.status == TicketStatus::Closed {
            found.messages = repo::thread(&mut tx, found.customer_id, found.id).await?;
            return Ok(Closing {
                ticket: found,
                already_closed: true,
            });
        }
        let now = platform::time::now();
        if let Some(note) = note {
            let message = new_message(AuthorKind::Staff, Some(operator), note, now);
            repo::insert_message(&mut tx, found.customer_id, found.id, &message).await?;
        }
        repo::set_ticket_status(&mut tx, found.customer_id, found.id, TicketStatus::Closed, now).await?;
        let closed = reread(&mut tx, found.customer_id, found.id).await?;
        OUTBOX.enqueue(&mut tx, ticket_closed(&closed)).await?;
        tx.commit().await?;
        Ok(Closing {
            ticket: closed,
            already_closed: false,
        })
    }

    async fn read(&self, customer_id: Option<Uuid>, ticket: &str) -> Result<Ticket, ApiError> {
        let reference = TicketRef::parse(ticket).ok_or_else(ticket_not_found)?;
        let mut conn = self.pool.acquire().await?;
        let mut found = repo::find_ticket(&mut conn, customer_id, &reference, false)
            .await?
            .ok_or_else(ticket_not_found)?;
        found.messages = repo::thread(&mut conn, found.customer_id, found.id).await?;
        Ok(found)
    }

    async fn list(
        &self,
        listing: Listing,
        customer_id: Option<Uuid>,
        status: Option<TicketStatus>,
        page: &PageRequest,
    ) -> Result<Page<Ticket>, ApiError> {
        let after: Option<After> = listing.after(page)?;
        let filter = TicketFilter {
            customer_id,
            status,
            after: after.map(|after| (after.created_at, after.id)),
            limit: page.fetch(),
        };
        let mut conn = self.pool.acquire().await?;
        let tickets = repo::list_tickets(&mut conn, &filter).await?;
        Ok(listing.page(page, tickets, |ticket| After::new(ticket.created_at, ticket.id)))
    }
}

/// Resolves the reference of a validated request (the customer's own order, else `not_found`
/// naming `reference`) and stores the ticket with its first message.
async fn insert_new_ticket(
    tx: &mut PgConnection,
    customer_id: Uuid,
    request: NewTicket,
) -> Result<Ticket, ApiError> {
    let order = match &request.reference {
        None => None,
        Some(reference) => Some(
            repo::resolve_order(tx, customer_id, reference)
                .await?
                .ok_or_else(|| ApiError::field(ErrorCode::NotFound, "reference", "order not found"))?,
        ),
    };
    let now = platform::time::now();
    let sequence = repo::next_ticket_sequence(tx).await?;
    let mut ticket = Ticket {
        id: Uuid::now_v7(),
        ticket_number: ticket_number(now, sequence),
        customer_id,
        subject: request.subject,
        status: TicketStatus::Open,
        reference: request.reference,
        order,
        message_count: 0,
        messages: Vec::new(),
        created_at: now,
        updated_at: now,
        closed_at: None,
    };
    repo::insert_ticket(tx, &ticket).await?;
    let message = new_message(AuthorKind::Customer, None, request.body, now);
    repo::insert_message(tx, customer_id, ticket.id, &message).await?;
    ticket.message_count = 1;
    ticket.messages.push(message);
    Ok(ticket)
}

/// Locks a ticket (the customer's own when `customer_id` is given) for a change.
async fn lock(tx: &mut PgConnection, customer_id: Option<Uuid>, ticket: &str) -> Result<Ticket, ApiError> {
    let reference = TicketRef::parse(ticket).ok_or_else(ticket_not_found)?;
    repo::find_ticket(tx, customer_id, &reference, true)
        .await?
        .ok_or_else(ticket_not_found)
}

/// Appends a message by `author` to a locked ticket and moves its status; returns the ticket
/// with its whole thread.
async fn add_message(
    tx: &mut PgConnection,
    ticket: Ticket,
    author: AuthorKind,
    author_name: Option<&str>,
    body: String,
) -> Result<Ticket, ApiError> {
    let status = ticket.status.after_message(author)?;
    let now = platform::time::now();
    let message = new_message(author, author_name, body, now);
    repo::insert_message(tx, ticket.customer_id, ticket.id, &message).await?;
    repo::set_ticket_status(tx, ticket.customer_id, ticket.id, status, now).await?;
    reread(tx, ticket.customer_id, ticket.id).await
}

/// Reads a ticket with its thread inside the transaction that changed it.
async fn reread(tx: &mut PgConnection, customer_id: Uuid, ticket_id: Uuid) -> Result<Ticket, ApiError> {
    let mut ticket = repo::find_ticket(tx, Some(customer_id), &TicketRef::Id(ticket_id), false)
        .await?
        .ok_or_else(ticket_not_found)?;
    ticket.messages = repo::thread(tx, customer_id, ticket_id).await?;
    Ok(ticket)
}

fn new_message(
    author: AuthorKind,
    author_name: Option<&str>,
    body: String,
    at: DateTime<Utc>,
) -> TicketMessage {
    TicketMessage {
        id: Uuid::now_v7(),
        author_kind: author,
        author_name: author_name.map(str::to_owned),
        body,
        created_at: at,
    }
}

/// Builds `support.ticket_answered` for the staff message `message` of `ticket`.
fn ticket_answered(ticket: &Ticket, message: &TicketMessage) -> NewEvent {
    let (order_id, order_number) = order_fields(ticket);
    NewEvent {
        event_type: TICKET_ANSWERED,
        customer_id: ticket.customer_id,
        subject_id: ticket.id.to_string(),
        data: Data::TicketAnswered(TicketAnswered {
            ticket_id: ticket.id.to_string(),
            ticket_number: ticket.ticket_number.clone(),
            status: ticket.status.as_str().to_owned(),
            reference: ticket.reference.clone().unwrap_or_default(),
            order_id,
            order_number,
            message_id: message.id.to_string(),
            answered_at: platform::time::rfc3339(message.created_at),
        }),
    }
}

/// Builds `support.ticket_closed` for a closed ticket.
fn ticket_closed(ticket: &Ticket) -> NewEvent {
    let (order_id, order_number) = order_fields(ticket);
    NewEvent {
        event_type: TICKET_CLOSED,
        customer_id: ticket.customer_id,
        subject_id: ticket.id.to_string(),
        data: Data::TicketClosed(TicketClosed {
            ticket_id: ticket.id.to_string(),
            ticket_number: ticket.ticket_number.clone(),
            status: ticket.status.as_str().to_owned(),
            reference: ticket.reference.clone().unwrap_or_default(),
            order_id,
            order_number,
            closed_at: platform::time::rfc3339(ticket.closed_at.unwrap_or(ticket.updated_at)),
        }),
    }
}

fn order_fields(ticket: &Ticket) -> (String, String) {
    ticket
        .order
        .as_ref()
        .map(|(id, number)| (id.to_string(), number.clone()))
        .unwrap_or_default()
}

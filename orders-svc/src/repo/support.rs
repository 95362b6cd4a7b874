//! SQL of support tickets (`orders.support_tickets`, `orders.support_ticket_messages`). Customer
//! reads filter by `customer_id`; the staff reads are lab-wide by design and every statement
//! after them filters by the ticket's own customer.

use super::corrupt;
use crate::domain::reference::OrderReference;
use crate::domain::support::{AuthorKind, Ticket, TicketMessage, TicketRef, TicketStatus};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// Columns of a ticket row, in [`TicketRow`] order.
const TICKET_COLUMNS: &str = "id, ticket_number, customer_id, subject, status, reference, order_id, order_number, \
     message_count, created_at, updated_at, closed_at";

/// Which page of tickets to read, newest first.
#[derive(Clone, Debug, Default)]
pub struct TicketFilter {
    /// Only this customer's tickets (always set for a customer's listing).
    pub customer_id: Option<Uuid>,
    pub status: Option<TicketStatus>,
    /// Position of the last ticket of the previous page.
    pub after: Option<(DateTime<Utc>, Uuid)>,
    pub limit: i64,
}

/// Draws the next ticket-number sequence value.
pub async fn next_ticket_sequence(conn: &mut PgConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT nextval('orders.ticket_number_seq')")
        .fetch_one(conn)
        .await
}

/// Resolves a reference to one of the customer's orders (id and number): the order's UUID,
/// `ORD-…`, `INV-…`, `ACC-…` or the tracking number of its label. `None` for anything else,
/// another customer's order included.
pub async fn resolve_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &str,
) -> Result<Option<(Uuid, String)>, sqlx::Error> {
    let query = match OrderReference::parse(reference) {
        Some(OrderReference::Id(id)) => {
            sqlx::query_as("SELECT id, order_number FROM orders.orders WHERE customer_id = $1 AND id = $2")
                .bind(customer_id)
                .bind(id)
        }
        Some(OrderReference::OrderNumber(number)) => sqlx::query_as(
            "SELECT id, order_number FROM orders.orders WHERE customer_id = $1 AND order_number = $2",
        )
        .bind(customer_id)
        .bind(number),
        Some(OrderReference::InvoiceNumber(number)) => sqlx::query_as(
            "SELECT id, order_number FROM orders.orders WHERE customer_id = $1 AND invoice_number = $2",
        )
        .bind(customer_id)
        .bind(number),
        Some(OrderReference::AccessionNumber(number)) => sqlx::query_as(
            "SELECT o.id, o.order_number FROM orders.orders o JOIN orders.samples s \
               ON s.customer_id = o.customer_id AND s.order_id = o.id \
             WHERE o.customer_id = $1 AND s.accession_number = $2",
        )
        .bind(customer_id)
        .bind(number),
        Some(OrderReference::TrackingNumber(number)) => sqlx::query_as(
            "SELECT o.id, o.order_number FROM orders.orders o JOIN orders.order_shipping s \
               ON s.customer_id = o.customer_id AND s.order_id = o.id \
             WHERE o.customer_id = $1 AND s.tracking_number = $2",
        )
        .bind(customer_id)
        .bind(number),
        None => return Ok(None),
    };
    query.fetch_optional(conn).await
}

/// Inserts a ticket (without its messages: [`insert_message`] adds them and counts them).
pub async fn insert_ticket(conn: &mut PgConnection, ticket: &Ticket) -> Result<(), sqlx::Error> {
    let (order_id, order_number) = ticket.order.clone().unzip();
    sqlx::query(
        "INSERT INTO orders.support_tickets (id, ticket_number, customer_id, subject, status, reference, \
           order_id, order_number, message_count, created_at, updated_at, closed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10, $11)",
    )
    .bind(ticket.id)
    .bind(&ticket.ticket_number)
    .bind(ticket.customer_id)
    .bind(&ticket.subject)
    .bind(ticket.status.as_str())
    .bind(&ticket.reference)
    .bind(order_id)
    .bind(order_number)
    .bind(ticket.created_at)
    .bind(ticket.updated_at)
    .bind(ticket.closed_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Appends a message to a ticket's thread and counts it on the ticket.
pub async fn insert_message(
    conn: &mut PgConnection,
    customer_id: Uuid,
    ticket_id: Uuid,
    message: &TicketMessage,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH added AS (INSERT INTO orders.support_ticket_messages \
           (id, ticket_id, customer_id, author_kind, author_name, body, created_at) \
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ticket_id) \
         UPDATE orders.support_tickets SET message_count = message_count + 1 \
         WHERE customer_id = $3 AND id = (SELECT ticket_id FROM added)",
    )
    .bind(message.id)
    .bind(ticket_id)
    .bind(customer_id)
    .bind(message.author_kind.as_str())
    .bind(&message.author_name)
    .bind(&message.body)
    .bind(message.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes a ticket's status, update time and closing time.
pub async fn set_ticket_status(
    conn: &mut PgConnection,
    customer_id: Uuid,
    ticket_id: Uuid,
    status: TicketStatus,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE orders.support_tickets SET status = $3, updated_at = $4, \
           closed_at = CASE WHEN $3 = 'closed' THEN $4 ELSE closed_at END \
         WHERE customer_id = $1 AND id = $2",
    )
    .bind(customer_id)
    .bind(ticket_id)
    .bind(status.as_str())
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Reads one ticket (without its thread) by UUID or number: the customer's own when
/// `customer_id` is given, lab-wide otherwise. `lock` takes the row lock for a change.
pub async fn find_ticket(
    conn: &mut PgConnection,
    customer_id: Option<Uuid>,
    ticket: &TicketRef,
    lock: bool,
) -> Result<Option<Ticket>, sqlx::Error> {
    let (by_id, by_number) = match ticket {
        TicketRef::Id(id) => (Some(*id), None),
        TicketRef::Number(number) => (None, Some(number.as_str())),
    };
    let sql = format!(
        "SELECT {TICKET_COLUMNS} FROM orders.support_tickets \
         WHERE ($1::uuid IS NULL OR customer_id = $1) AND ($2::uuid IS NULL OR id = $2) \
           AND ($3::text IS NULL OR ticket_number = $3){}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row: Option<TicketRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(customer_id)
        .bind(by_id)
        .bind(by_number)
        .fetch_optional(conn)
        .await?;
    row.map(TicketRow::into_ticket).transpose()
}

/// Reads a ticket's thread, oldest first.
pub async fn thread(
    conn: &mut PgConnection,
    customer_id: Uuid,
    ticket_id: Uuid,
) -> Result<Vec<TicketMessage>, sqlx::Error> {
    let rows: Vec<MessageRow> = sqlx::query_as(
        "SELECT id, author_kind, author_name, body, created_at FROM orders.support_ticket_messages \
         WHERE customer_id = $1 AND ticket_id = $2 ORDER BY created_at, id",
    )
    .bind(customer_id)
    .bind(ticket_id)
    .fetch_all(conn)
    .await?;
    rows.into_iter()
        .map(|(id, author_kind, author_name, body, created_at)| {
            Ok(TicketMessage {
                id,
                author_kind: AuthorKind::parse(&author_kind)
                    .ok_or_else(|| corrupt("author kind", &author_kind))?,
                author_name,
                body,
                created_at,
            })
        })
        .collect()
}

/// Reads one page of tickets, newest first.
pub async fn list_tickets(
    conn: &mut PgConnection,
    filter: &TicketFilter,
) -> Result<Vec<Ticket>, sqlx::Error> {
    let (after_time, after_id) = filter.after.unzip();
    let sql = format!(
        "SELECT {TICKET_COLUMNS} FROM orders.support_tickets \
         WHERE ($1::uuid IS NULL OR customer_id = $1) AND ($2::text IS NULL OR status = $2) \
           AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) \
         ORDER BY created_at DESC, id DESC LIMIT $5"
    );
    let rows: Vec<TicketRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(filter.customer_id)
        .bind(filter.status.map(TicketStatus::as_str))
        .bind(after_time)
        .bind(after_id)
        .bind(filter.limit)
        .fetch_all(conn)
        .await?;
    rows.into_iter().map(TicketRow::into_ticket).collect()
}

/// A thread message as stored: id, author kind, author name, body, time.
type MessageRow = (Uuid, String, Option<String>, String, DateTime<Utc>);

#[derive(sqlx::FromRow)]
struct TicketRow {
    id: Uuid,
    ticket_number: String,
    customer_id: Uuid,
    subject: String,
    status: String,
    reference: Option<String>,
    order_id: Option<Uuid>,
    order_number: Option<String>,
    message_count: i32,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    closed_at: Option<DateTime<Utc>>,
}

impl TicketRow {
    fn into_ticket(self) -> Result<Ticket, sqlx::Error> {
        Ok(Ticket {
            id: self.id,
            ticket_number: self.ticket_number,
            customer_id: self.customer_id,
            subject: self.subject,
            status: TicketStatus::parse(&self.status)
                .ok_or_else(|| corrupt("ticket status", &self.status))?,
            reference: self.reference,
            order: self.order_id.zip(self.order_number),
            message_count: self.message_count,
            messages: Vec::new(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            closed_at: self.closed_at,
        })
    }
}

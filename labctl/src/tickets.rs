//! `labctl tickets`: customers' support tickets over orders-svc's `SupportService`. Any operator
//! lists and shows them; answering and closing need `support.agent`. Bodies are printed as the
//! customer wrote them (labctl renders text, never HTML).

use crate::client::{request, staff_token, status_error, timestamp};
use crate::{Connection, TicketsCommand};
use anyhow::Context;
use platform::mesh;
use platform::principal::roles;
use proto::orders::support_service_client::SupportServiceClient;
use proto::orders::{self as pb, TicketAuthorKind, TicketStatus};
use serde_json::{Value, json};

/// Runs one tickets command with a token carrying the role it needs.
pub async fn execute(connection: &Connection, command: TicketsCommand) -> anyhow::Result<Value> {
    let role = match command {
        TicketsCommand::List { .. } | TicketsCommand::Show { .. } => "",
        TicketsCommand::Answer { .. } | TicketsCommand::Close { .. } => roles::SUPPORT_AGENT,
    };
    let token = staff_token(connection, mesh::ORDERS_SVC, role).await?;
    let mut client = connection
        .channel(&connection.orders_addr)
        .await
        .map(SupportServiceClient::new)
        .with_context(|| format!("cannot reach orders-svc at {}", connection.orders_addr))?;
    match command {
        TicketsCommand::List {
            status,
            customer,
            limit,
            cursor,
        } => {
            let message = pb::ListAllTicketsRequest {
                status,
                customer_id: customer,
                limit,
                cursor,
            };
            let page = client
                .list_all_tickets(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(json!({
                "tickets": page.tickets.iter().map(ticket).collect::<Vec<_>>(),
                "nextCursor": page.next_cursor,
            }))
        }
        TicketsCommand::Show { ticket: reference } => {
            let message = pb::ReadTicketRequest { ticket: reference };
            let response = client
                .read_ticket(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(ticket(&response.ticket.unwrap_or_default()))
        }
        TicketsCommand::Answer {
            ticket: reference,
            body,
            body_file,
        } => {
            let body = match (body, body_file) {
                (Some(body), None) => body,
                (None, Some(path)) => std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
                _ => anyhow::bail!("give the answer with exactly one of --body or --body-file"),
            };
            let message = pb::AnswerTicketRequest {
                ticket: reference,
                body,
            };
            let response = client
                .answer_ticket(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            let mut answered = ticket(&response.ticket.unwrap_or_default());
            answered["unchanged"] = json!(response.unchanged);
            Ok(answered)
        }
        TicketsCommand::Close {
            ticket: reference,
            note,
        } => {
            let message = pb::CloseTicketRequest {
                ticket: reference,
                note,
            };
            let response = client
                .close_ticket(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            let mut closed = ticket(&response.ticket.unwrap_or_default());
            closed["alreadyClosed"] = json!(response.already_closed);
            Ok(closed)
        }
    }
}

/// A ticket as labctl shows it (the thread only when it was read).
fn ticket(ticket: &pb::Ticket) -> Value {
    let status = match ticket.status() {
        TicketStatus::Open => "open",
        TicketStatus::Answered => "answered",
        TicketStatus::Closed => "closed",
        TicketStatus::Unspecified => "unspecified",
    };
    json!({
        "id": ticket.id, "ticketNumber": ticket.ticket_number, "customerId": ticket.customer_id,
        "subject": ticket.subject, "status": status, "reference": ticket.reference,
        "orderId": ticket.order_id, "orderNumber": ticket.order_number,
        "messageCount": ticket.message_count,
        "createdAt": timestamp(ticket.created_at.as_ref()), "updatedAt": timestamp(ticket.updated_at.as_ref()),
        "closedAt": ticket.closed_at.as_ref().map(|at| timestamp(Some(at))),
        "messages": ticket.messages.iter().map(|message| json!({
            "id": message.id,
            "author": match message.author_kind() {
                TicketAuthorKind::Staff => "staff",
                _ => "customer",
            },
            "authorName": (!message.author_name.is_empty()).then_some(&message.author_name),
            "body": message.body,
            "createdAt": timestamp(message.created_at.as_ref()),
        })).collect::<Vec<_>>(),
    })
}

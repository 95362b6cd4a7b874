//! Translation of the support-ticket use cases to `lab.orders.v1.SupportService` (orders-svc).
//! Opening and replying carry the caller's `Idempotency-Key` (optional) as metadata and report whether
//! orders-svc answered with a stored replay.

use super::{Replayable, is_replay, missing, service_error};
use crate::caller::Caller;
use crate::dto::support::{
    OpenTicketRequest, ReplyToTicketRequest, Ticket, TicketEnvelope, TicketList, TicketsQuery,
};
use crate::peers::Peers;
use platform::error::ApiError;
use platform::grpc::{outgoing, outgoing_idempotent};
use platform::mesh::ORDERS_SVC;
use proto::orders as pb;

/// `POST /support/tickets`: opens a ticket with its first message.
pub async fn open_ticket(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: Option<&str>,
    body: OpenTicketRequest,
) -> Result<Replayable<TicketEnvelope>, ApiError> {
    let request = pb::OpenTicketRequest {
        subject: body.subject,
        body: body.body,
        reference: body.reference,
    };
    let response = peers
        .support()
        .open_ticket(outgoing_maybe_idempotent(
            request,
            &caller.token(ORDERS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let ticket = response.into_inner().ticket.ok_or_else(|| missing("ticket"))?;
    Ok(Replayable {
        body: Ticket::try_from(ticket)?.into(),
        replayed,
    })
}

/// `GET /support/tickets`: one page of the customer's tickets, newest first.
pub async fn list_tickets(
    peers: &Peers,
    caller: &Caller,
    query: TicketsQuery,
) -> Result<TicketList, ApiError> {
    let request = pb::ListTicketsRequest {
        status: query.status,
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .support()
        .list_tickets(outgoing(request, &caller.token(ORDERS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .tickets
        .into_iter()
        .map(Ticket::try_from)
        .collect::<Result<_, _>>()?;
    Ok(TicketList::new(data, page.next_cursor))
}

/// `GET /support/tickets/{ticketId}`: one of the customer's tickets with its thread.
pub async fn get_ticket(peers: &Peers, caller: &Caller, ticket: String) -> Result<TicketEnvelope, ApiError> {
    let request = pb::GetTicketRequest { ticket };
    let ticket = peers
        .support()
        .get_ticket(outgoing(request, &caller.token(ORDERS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner()
        .ticket
        .ok_or_else(|| missing("ticket"))?;
    Ok(Ticket::try_from(ticket)?.into())
}

/// `POST /support/tickets/{ticketId}/messages`: the customer's reply; the ticket with its thread.
pub async fn reply_to_ticket(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: Option<&str>,
    ticket: String,
    body: ReplyToTicketRequest,
) -> Result<Replayable<TicketEnvelope>, ApiError> {
    let request = pb::ReplyToTicketRequest {
        ticket,
        body: body.body,
    };
    let response = peers
        .support()
        .reply_to_ticket(outgoing_maybe_idempotent(
            request,
            &caller.token(ORDERS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let ticket = response.into_inner().ticket.ok_or_else(|| missing("ticket"))?;
    Ok(Replayable {
        body: Ticket::try_from(ticket)?.into(),
        replayed,
    })
}

/// A request carrying the idempotency key when the caller sent one.
fn outgoing_maybe_idempotent<M>(message: M, token: &str, key: Option<&str>) -> tonic::Request<M> {
    match key {
        Some(key) => outgoing_idempotent(message, token, key),
        None => outgoing(message, token),
    }
}

//! gRPC adapter of `lab.orders.v1.SupportService`: who may call each rpc ([`ACCESS`], enforced by
//! the platform's access layer), then per rpc: principal, idempotency key, call the use case of
//! `crate::service::support`, convert back. No business rule lives here.

use crate::domain::support::{AuthorKind, Ticket, TicketMessage, TicketStatus};
use crate::service::SupportDesk;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::pagination::PageRequest;
use platform::principal::roles;
use proto::orders::support_service_server::SupportService as SupportApi;
use proto::orders::{
    self as pb, AnswerTicketRequest, AnswerTicketResponse, CloseTicketRequest, CloseTicketResponse,
    GetTicketRequest, GetTicketResponse, ListAllTicketsRequest, ListAllTicketsResponse, ListTicketsRequest,
    ListTicketsResponse, OpenTicketRequest, OpenTicketResponse, ReadTicketRequest, ReadTicketResponse,
    ReplyToTicketRequest, ReplyToTicketResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys with orders:read to read and orders:write to open and reply;
/// any operator reads lab-wide; `support.agent` answers and closes.
pub const ACCESS: AccessTable = &[
    ("OpenTicket", access::customer(&[proto::scopes::ORDERS_WRITE])),
    ("ListTickets", access::customer(&[proto::scopes::ORDERS_READ])),
    ("GetTicket", access::customer(&[proto::scopes::ORDERS_READ])),
    ("ReplyToTicket", access::customer(&[proto::scopes::ORDERS_WRITE])),
    ("ListAllTickets", access::ANY_OPERATOR),
    ("ReadTicket", access::ANY_OPERATOR),
    ("AnswerTicket", access::staff(roles::SUPPORT_AGENT)),
    ("CloseTicket", access::staff(roles::SUPPORT_AGENT)),
];

/// The tonic service over the support-ticket use cases.
#[derive(Clone)]
pub struct SupportGrpc {
    desk: Arc<SupportDesk>,
}

impl SupportGrpc {
    pub fn new(desk: Arc<SupportDesk>) -> Self {
        Self { desk }
    }
}

#[tonic::async_trait]
impl SupportApi for SupportGrpc {
    async fn open_ticket(
        &self,
        request: Request<OpenTicketRequest>,
    ) -> Result<Response<OpenTicketResponse>, Status> {
        let principal = principal(&request)?;
        let key = IdempotencyKey::optional_from_grpc(&request)?;
        let OpenTicketRequest {
            subject,
            body,
            reference,
        } = request.into_inner();
        self.desk
            .open_ticket(&principal, key, subject, body, reference)
            .await
            .into_response(|ticket| OpenTicketResponse {
                ticket: Some(ticket_proto(&ticket)),
            })
    }

    async fn list_tickets(
        &self,
        request: Request<ListTicketsRequest>,
    ) -> Result<Response<ListTicketsResponse>, Status> {
        let principal = principal(&request)?;
        let ListTicketsRequest {
            status,
            limit,
            cursor,
        } = request.into_inner();
        let status = status.as_deref().map(TicketStatus::parse_filter).transpose()?;
        let page = PageRequest::new(limit, cursor)?;
        let page = self
            .desk
            .list_tickets(principal.customer()?, status, &page)
            .await?;
        Ok(Response::new(ListTicketsResponse {
            tickets: page.items.iter().map(ticket_proto).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn get_ticket(
        &self,
        request: Request<GetTicketRequest>,
    ) -> Result<Response<GetTicketResponse>, Status> {
        let principal = principal(&request)?;
        let ticket = self
            .desk
            .get_ticket(principal.customer()?, &request.get_ref().ticket)
            .await?;
        Ok(Response::new(GetTicketResponse {
            ticket: Some(ticket_proto(&ticket)),
        }))
    }

    async fn reply_to_ticket(
        &self,
        request: Request<ReplyToTicketRequest>,
    ) -> Result<Response<ReplyToTicketResponse>, Status> {
        let principal = principal(&request)?;
        let key = IdempotencyKey::optional_from_grpc(&request)?;
        let ReplyToTicketRequest { ticket, body } = request.into_inner();
        self.desk
            .reply(&principal, key, ticket, body)
            .await
            .into_response(|ticket| ReplyToTicketResponse {
                ticket: Some(ticket_proto(&ticket)),
            })
    }

    async fn list_all_tickets(
        &self,
        request: Request<ListAllTicketsRequest>,
    ) -> Result<Response<ListAllTicketsResponse>, Status> {
        let ListAllTicketsRequest {
            status,
            customer_id,
            limit,
            cursor,
        } = request.into_inner();
        let status = status.as_deref().map(TicketStatus::parse_filter).transpose()?;
        let customer_id = customer_id
            .filter(|customer| !customer.is_empty())
            .map(|customer| platform::ids::parse_uuid("customerId", &customer))
            .transpose()?;
        let page = PageRequest::new(limit, cursor)?;
        let page = self.desk.list_all_tickets(customer_id, status, &page).await?;
        Ok(Response::new(ListAllTicketsResponse {
            tickets: page.items.iter().map(ticket_proto).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn read_ticket(
        &self,
        request: Request<ReadTicketRequest>,
    ) -> Result<Response<ReadTicketResponse>, Status> {
        let ticket = self.desk.read_ticket(&request.get_ref().ticket).await?;
        Ok(Response::new(ReadTicketResponse {
            ticket: Some(ticket_proto(&ticket)),
        }))
    }

    async fn answer_ticket(
        &self,
        request: Request<AnswerTicketRequest>,
    ) -> Result<Response<AnswerTicketResponse>, Status> {
        let operator = principal(&request)?.subject;
        let AnswerTicketRequest { ticket, body } = request.into_inner();
        let answering = self.desk.answer(&operator, &ticket, body).await?;
        Ok(Response::new(AnswerTicketResponse {
            ticket: Some(ticket_proto(&answering.ticket)),
            unchanged: answering.unchanged,
        }))
    }

    async fn close_ticket(
        &self,
        request: Request<CloseTicketRequest>,
    ) -> Result<Response<CloseTicketResponse>, Status> {
        let operator = principal(&request)?.subject;
        let CloseTicketRequest { ticket, note } = request.into_inner();
        let closing = self.desk.close(&operator, &ticket, note).await?;
        Ok(Response::new(CloseTicketResponse {
            ticket: Some(ticket_proto(&closing.ticket)),
            already_closed: closing.already_closed,
        }))
    }
}

/// The proto form of a ticket (its thread as far as it was read).
pub fn ticket_proto(ticket: &Ticket) -> pb::Ticket {
    pb::Ticket {
        id: ticket.id.to_string(),
        ticket_number: ticket.ticket_number.clone(),
        customer_id: ticket.customer_id.to_string(),
        subject: ticket.subject.clone(),
        status: status_proto(ticket.status) as i32,
        reference: ticket.reference.clone(),
        order_id: ticket.order.as_ref().map(|(id, _)| id.to_string()),
        order_number: ticket.order.as_ref().map(|(_, number)| number.clone()),
        message_count: ticket.message_count,
        messages: ticket.messages.iter().map(message_proto).collect(),
        created_at: Some(platform::time::to_timestamp(ticket.created_at)),
        updated_at: Some(platform::time::to_timestamp(ticket.updated_at)),
        closed_at: platform::time::to_timestamp_opt(ticket.closed_at),
    }
}

fn message_proto(message: &TicketMessage) -> pb::TicketMessage {
    let author_kind = match message.author_kind {
        AuthorKind::Customer => pb::TicketAuthorKind::Customer,
        AuthorKind::Staff => pb::TicketAuthorKind::Staff,
    };
    pb::TicketMessage {
        id: message.id.to_string(),
        author_kind: author_kind as i32,
        author_name: message.author_name.clone().unwrap_or_default(),
        body: message.body.clone(),
        created_at: Some(platform::time::to_timestamp(message.created_at)),
    }
}

fn status_proto(status: TicketStatus) -> pb::TicketStatus {
    match status {
        TicketStatus::Open => pb::TicketStatus::Open,
        TicketStatus::Answered => pb::TicketStatus::Answered,
        TicketStatus::Closed => pb::TicketStatus::Closed,
    }
}

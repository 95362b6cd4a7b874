//! SupportService: opening tickets (idempotent, validated, the reference resolved to the
//! customer's own order), tenant isolation, the status machine driven by staff answers, customer
//! replies and closing, and the events of answers and closings in the outbox.

use crate::data::new_key;
use crate::helpers::*;
use platform::error::ErrorCode;
use proto::events::event_envelope::Data;
use proto::orders::support_service_client::SupportServiceClient;
use proto::orders::{
    AnswerTicketRequest, CloseTicketRequest, GetTicketRequest, ListAllTicketsRequest, ListTicketsRequest,
    OpenTicketRequest, ReplyToTicketRequest, Ticket, TicketAuthorKind, TicketStatus,
};
use tonic::transport::Channel;
use uuid::Uuid;

const SCRIPT: &str = "<script>alert(1)</script>\n\tLine two & \"quotes\" é ✓";

async fn support(app: &TestApp) -> SupportServiceClient<Channel> {
    SupportServiceClient::connect(format!("http://{}", app.addr))
        .await
        .expect("connect to the support service")
}

fn open_request(subject: &str, body: &str, reference: Option<&str>) -> OpenTicketRequest {
    OpenTicketRequest {
        subject: subject.to_owned(),
        body: body.to_owned(),
        reference: reference.map(str::to_owned),
    }
}

async fn open_as(
    app: &TestApp,
    token: &str,
    key: &str,
    request: OpenTicketRequest,
) -> Result<Ticket, tonic::Status> {
    let response = support(app)
        .await
        .open_ticket(platform::grpc::outgoing_idempotent(request, token, key))
        .await?;
    Ok(response.into_inner().ticket.expect("a ticket"))
}

async fn get_as(app: &TestApp, token: &str, ticket: &str) -> Result<Ticket, tonic::Status> {
    let request = GetTicketRequest {
        ticket: ticket.to_owned(),
    };
    let response = support(app)
        .await
        .get_ticket(platform::grpc::outgoing(request, token))
        .await?;
    Ok(response.into_inner().ticket.expect("a ticket"))
}

async fn answer_as(app: &TestApp, token: &str, ticket: &str, body: &str) -> Result<Ticket, tonic::Status> {
    let request = AnswerTicketRequest {
        ticket: ticket.to_owned(),
        body: body.to_owned(),
    };
    let response = support(app)
        .await
        .answer_ticket(platform::grpc::outgoing(request, token))
        .await?;
    Ok(response.into_inner().ticket.expect("a ticket"))
}

fn agent(app: &TestApp) -> String {
    app.keys.staff("sasha", &["support.agent"])
}

#[tokio::test]
async fn an_opened_ticket_keeps_its_body_byte_for_byte_and_a_retry_opens_no_second_ticket() {
    let app = spawn_app().await;
    let token = app.default_token();
    let key = new_key();
    let first = open_as(&app, &token, &key, open_request("Where is my COA?", SCRIPT, None))
        .await
        .unwrap();
    assert_eq!(first.status(), TicketStatus::Open);
    assert!(first.ticket_number.starts_with("TKT-"), "{}", first.ticket_number);
    assert_eq!(first.message_count, 1);
    assert_eq!(first.messages[0].body, SCRIPT);
    assert_eq!(first.messages[0].author_kind(), TicketAuthorKind::Customer);

    let retried = support(&app)
        .await
        .open_ticket(platform::grpc::outgoing_idempotent(
            open_request("Where is my COA?", SCRIPT, None),
            &token,
            &key,
        ))
        .await
        .unwrap();
    assert_eq!(
        retried
            .metadata()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(retried.into_inner().ticket.unwrap(), first);
    let reused = open_as(&app, &token, &key, open_request("Another", "text", None))
        .await
        .unwrap_err();
    assert_eq!(error_of(&reused).code, ErrorCode::IdempotencyKeyReused);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders.support_tickets")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 1);

    let read = get_as(&app, &token, &first.ticket_number).await.unwrap();
    assert_eq!(read.messages[0].body, SCRIPT);
    let stored: String = sqlx::query_scalar("SELECT body FROM orders.support_ticket_messages")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored.as_bytes(), SCRIPT.as_bytes());
}

#[tokio::test]
async fn a_reference_must_name_one_of_the_customers_own_orders() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let token = app.default_token();
    let invoice_number = order.payment.as_ref().unwrap().invoice_number.clone();
    for reference in [
        order.id.as_str(),
        order.order_number.as_str(),
        invoice_number.as_str(),
    ] {
        let ticket = open_as(
            &app,
            &token,
            &new_key(),
            open_request("About my order", "body", Some(reference)),
        )
        .await
        .unwrap();
        assert_eq!(ticket.reference.as_deref(), Some(reference));
        assert_eq!(ticket.order_id.as_deref(), Some(order.id.as_str()));
        assert_eq!(ticket.order_number.as_deref(), Some(order.order_number.as_str()));
    }
    let stranger = app.token(Uuid::now_v7(), &ORDER_SCOPES, None);
    let refused = open_as(
        &app,
        &stranger,
        &new_key(),
        open_request("s", "b", Some(&order.order_number)),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound);
    for reference in [
        "ORD-2026-999999",
        "1Z999AA10123456784",
        &Uuid::now_v7().to_string(),
    ] {
        let refused = open_as(&app, &token, &new_key(), open_request("s", "b", Some(reference)))
            .await
            .unwrap_err();
        let error = error_of(&refused);
        assert_eq!(error.code, ErrorCode::NotFound, "{reference}");
        assert_eq!(error.details.unwrap()["field"], "reference");
    }
}

#[tokio::test]
async fn subjects_and_bodies_outside_their_limits_are_refused_with_the_field_named() {
    let app = spawn_app().await;
    let token = app.default_token();
    let cases = [
        (open_request("", "body", None), "subject"),
        (open_request(&"s".repeat(201), "body", None), "subject"),
        (open_request("subject", "   ", None), "body"),
        (open_request("subject", &"é".repeat(10_001), None), "body"),
        (
            open_request("subject", "body", Some(&"r".repeat(121))),
            "reference",
        ),
    ];
    for (request, field) in cases {
        let refused = open_as(&app, &token, &new_key(), request).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{field}");
        let error = error_of(&refused);
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert_eq!(error.details.unwrap()["field"], field);
    }
    let longest = open_as(
        &app,
        &token,
        &new_key(),
        open_request(&"s".repeat(200), &"é".repeat(10_000), None),
    )
    .await
    .unwrap();
    assert_eq!(longest.messages[0].body.chars().count(), 10_000);
}

#[tokio::test]
async fn another_customers_ticket_is_not_found_not_listed_and_cannot_be_replied_to() {
    let app = spawn_app().await;
    let token = app.default_token();
    let ticket = open_as(&app, &token, &new_key(), open_request("Mine", "body", None))
        .await
        .unwrap();
    let stranger = app.token(Uuid::now_v7(), &ORDER_SCOPES, None);
    for reference in [ticket.id.as_str(), ticket.ticket_number.as_str()] {
        let refused = get_as(&app, &stranger, reference).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::NotFound);
        let missing = get_as(&app, &token, &Uuid::now_v7().to_string())
            .await
            .unwrap_err();
        assert_eq!(error_of(&refused), error_of(&missing));
    }
    let listed = support(&app)
        .await
        .list_tickets(platform::grpc::outgoing(ListTicketsRequest::default(), &stranger))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.tickets.is_empty());
    let reply = ReplyToTicketRequest {
        ticket: ticket.id.clone(),
        body: "not mine".into(),
    };
    let refused = support(&app)
        .await
        .reply_to_ticket(platform::grpc::outgoing_idempotent(reply, &stranger, &new_key()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound);
    assert_eq!(get_as(&app, &token, &ticket.id).await.unwrap().message_count, 1);
}

#[tokio::test]
async fn staff_answers_reopening_replies_and_closing_move_the_ticket_and_emit_events() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let token = app.default_token();
    let ticket = open_as(
        &app,
        &token,
        &new_key(),
        open_request("Label", "Where?", Some(&order.order_number)),
    )
    .await
    .unwrap();

    let answered = answer_as(&app, &agent(&app), &ticket.ticket_number, SCRIPT)
        .await
        .unwrap();
    assert_eq!(answered.status(), TicketStatus::Answered);
    assert_eq!(answered.messages.len(), 2);
    let answer = &answered.messages[1];
    assert_eq!(answer.author_kind(), TicketAuthorKind::Staff);
    assert_eq!(answer.author_name, "sasha");
    assert_eq!(answer.body, SCRIPT);
    let events = app.outbox_events_of("support.ticket_answered").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].customer_id, app.customer_id.to_string());
    assert_eq!(events[0].subject_id, ticket.id);
    let Some(Data::TicketAnswered(data)) = &events[0].data else {
        panic!("{:?}", events[0].data)
    };
    assert_eq!(data.ticket_number, ticket.ticket_number);
    assert_eq!(data.status, "answered");
    assert_eq!(data.reference, order.order_number);
    assert_eq!(data.order_id, order.id);
    assert_eq!(data.message_id, answer.id);

    let reply = ReplyToTicketRequest {
        ticket: ticket.id.clone(),
        body: "Thanks, one more question".into(),
    };
    let reopened = support(&app)
        .await
        .reply_to_ticket(platform::grpc::outgoing_idempotent(reply, &token, &new_key()))
        .await
        .unwrap()
        .into_inner()
        .ticket
        .unwrap();
    assert_eq!(reopened.status(), TicketStatus::Open);
    assert_eq!(reopened.message_count, 3);

    let close = |note: Option<&str>| CloseTicketRequest {
        ticket: ticket.id.clone(),
        note: note.map(str::to_owned),
    };
    let closed = support(&app)
        .await
        .close_ticket(platform::grpc::outgoing(close(Some("Resolved")), &agent(&app)))
        .await
        .unwrap()
        .into_inner();
    assert!(!closed.already_closed);
    let closed_ticket = closed.ticket.unwrap();
    assert_eq!(closed_ticket.status(), TicketStatus::Closed);
    assert!(closed_ticket.closed_at.is_some());
    assert_eq!(closed_ticket.messages.last().unwrap().body, "Resolved");
    let again = support(&app)
        .await
        .close_ticket(platform::grpc::outgoing(close(None), &agent(&app)))
        .await
        .unwrap()
        .into_inner();
    assert!(again.already_closed);
    assert_eq!(app.outbox_events_of("support.ticket_closed").await.len(), 1);

    let refused = answer_as(&app, &agent(&app), &ticket.id, "late")
        .await
        .unwrap_err();
    assert_eq!(error_of(&refused).code, ErrorCode::Conflict);
    assert_eq!(app.outbox_events_of("support.ticket_answered").await.len(), 1);
}

#[tokio::test]
async fn only_operators_with_support_agent_answer_and_customers_cannot() {
    let app = spawn_app().await;
    let token = app.default_token();
    let ticket = open_as(&app, &token, &new_key(), open_request("s", "b", None))
        .await
        .unwrap();
    let technician = app.keys.staff("tess", &["lab.technician"]);
    for caller in [token.as_str(), technician.as_str()] {
        let refused = answer_as(&app, caller, &ticket.id, "answer").await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    }
    // Any operator reads lab-wide; a customer key cannot.
    let reader = app.keys.staff("rory", &[]);
    let request = ListAllTicketsRequest {
        customer_id: Some(app.customer_id.to_string()),
        ..Default::default()
    };
    let all = support(&app)
        .await
        .list_all_tickets(platform::grpc::outgoing(request.clone(), &reader))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.tickets.len(), 1);
    let refused = support(&app)
        .await
        .list_all_tickets(platform::grpc::outgoing(request, &token))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
}

#[tokio::test]
async fn tickets_are_listed_newest_first_in_pages_and_by_status() {
    let app = spawn_app().await;
    let token = app.default_token();
    let mut opened = Vec::new();
    for index in 0..3 {
        let ticket = open_as(
            &app,
            &token,
            &new_key(),
            open_request(&format!("T{index}"), "b", None),
        )
        .await
        .unwrap();
        opened.push(ticket);
    }
    answer_as(&app, &agent(&app), &opened[0].id, "answer")
        .await
        .unwrap();
    let list = |status: Option<&str>, limit: Option<i32>, cursor: Option<String>| ListTicketsRequest {
        status: status.map(str::to_owned),
        limit,
        cursor,
    };
    let first = support(&app)
        .await
        .list_tickets(platform::grpc::outgoing(list(None, Some(2), None), &token))
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<&str> = first.tickets.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [opened[2].id.as_str(), opened[1].id.as_str()]);
    assert!(first.tickets.iter().all(|t| t.messages.is_empty()));
    let second = support(&app)
        .await
        .list_tickets(platform::grpc::outgoing(
            list(None, Some(2), first.next_cursor),
            &token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.tickets.len(), 1);
    assert_eq!(second.tickets[0].id, opened[0].id);
    assert_eq!(second.next_cursor, None);
    let answered = support(&app)
        .await
        .list_tickets(platform::grpc::outgoing(
            list(Some("answered"), None, None),
            &token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answered.tickets.len(), 1);
    assert_eq!(answered.tickets[0].id, opened[0].id);
    let refused = support(&app)
        .await
        .list_tickets(platform::grpc::outgoing(
            list(Some("pending"), None, None),
            &token,
        ))
        .await
        .unwrap_err();
    assert_eq!(error_of(&refused).details.unwrap()["field"], "status");
}

#[tokio::test]
async fn the_same_staff_answer_sent_again_posts_nothing_and_emits_nothing_until_the_customer_writes() {
    let app = spawn_app().await;
    let token = app.default_token();
    let ticket = open_as(&app, &token, &new_key(), open_request("Label", "Where?", None))
        .await
        .unwrap();
    let answer = |body: &'static str| {
        let request = AnswerTicketRequest {
            ticket: ticket.ticket_number.clone(),
            body: body.to_owned(),
        };
        let app = &app;
        async move {
            support(app)
                .await
                .answer_ticket(platform::grpc::outgoing(request, &agent(app)))
                .await
                .unwrap()
                .into_inner()
        }
    };
    let first = answer(SCRIPT).await;
    assert!(!first.unchanged);
    let again = answer(SCRIPT).await;
    assert!(again.unchanged, "a retried answer is recognised");
    assert_eq!(again.ticket.as_ref().unwrap().messages.len(), 2);
    assert_eq!(app.outbox_events_of("support.ticket_answered").await.len(), 1);
    // Another operator's identical text, or another text, is a new answer.
    let other = answer("A different answer").await;
    assert!(!other.unchanged);
    assert_eq!(other.ticket.as_ref().unwrap().messages.len(), 3);
    let other_operator = AnswerTicketRequest {
        ticket: ticket.ticket_number.clone(),
        body: "A different answer".into(),
    };
    let by_kim = support(&app)
        .await
        .answer_ticket(platform::grpc::outgoing(
            other_operator,
            &app.keys.staff("kim", &["support.agent"]),
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(!by_kim.unchanged);
    assert_eq!(app.outbox_events_of("support.ticket_answered").await.len(), 3);
    // After the customer's reply, the first answer's text may be sent again.
    support(&app)
        .await
        .reply_to_ticket(platform::grpc::outgoing_idempotent(
            ReplyToTicketRequest {
                ticket: ticket.id.clone(),
                body: "Still waiting".into(),
            },
            &token,
            &new_key(),
        ))
        .await
        .unwrap();
    assert!(!answer(SCRIPT).await.unchanged);
    assert_eq!(app.outbox_events_of("support.ticket_answered").await.len(), 4);
}

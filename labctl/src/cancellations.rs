//! `labctl cancellations`: the staff side of customers' cancellation requests (orders-svc):
//! list them (any operator), approve or decline one with a note shown to the customer
//! (payments.admin: an approval voids or refunds money).

use crate::client::{request, staff_token, status_error, timestamp};
use crate::lab::orders_client;
use crate::{CancellationsCommand, Connection};
use platform::mesh;
use platform::principal::roles;
use proto::common::OrderStatus;
use proto::enums::shown;
use proto::orders::{CancelDecision, CancelRequest};
use serde_json::{Value, json};

fn request_json(request: &CancelRequest) -> Value {
    json!({
        "id": request.id, "orderNumber": request.order_number, "status": request.status,
        "reason": request.reason,
        "orderStatusAtRequest": shown::<OrderStatus>(request.order_status, String::new()),
        "requestedAt": timestamp(request.requested_at.as_ref()),
        "decidedAt": timestamp(request.decided_at.as_ref()),
        "decidedBy": request.decided_by, "note": request.note,
        "chargeCents": (request.status == "approved").then_some(request.charge_cents),
    })
}

pub(crate) async fn execute(connection: &Connection, command: CancellationsCommand) -> anyhow::Result<Value> {
    let mut client = orders_client(connection).await?;
    let (order, note, decision, charge_cents) = match command {
        CancellationsCommand::List { status, limit } => {
            let token = staff_token(connection, mesh::ORDERS_SVC, "").await?;
            let message = proto::orders::ListCancelRequestsRequest { status, limit };
            let response = client
                .list_cancel_requests(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            return Ok(json!({
                "cancelRequests": response.cancel_requests.iter().map(request_json).collect::<Vec<_>>(),
            }));
        }
        CancellationsCommand::Approve {
            order,
            note,
            charge_cents,
        } => (order, note, CancelDecision::Approve, charge_cents),
        CancellationsCommand::Decline { order, note } => (order, note, CancelDecision::Decline, None),
    };
    let token = staff_token(connection, mesh::ORDERS_SVC, roles::PAYMENTS_ADMIN).await?;
    let message = proto::orders::DecideCancelRequestRequest {
        reference: order,
        decision: decision as i32,
        note,
        charge_cents,
    };
    let response = client
        .decide_cancel_request(request(message, &token))
        .await
        .map_err(status_error)?
        .into_inner();
    let order = response.order.unwrap_or_default();
    Ok(json!({
        "orderNumber": order.order_number,
        "orderStatus": shown::<OrderStatus>(order.status, order.legacy_status),
        "cancelRequest": response.cancel_request.as_ref().map(request_json),
        "unchanged": response.unchanged,
    }))
}

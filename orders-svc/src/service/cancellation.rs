//! Cancellation requests (rules: `crate::domain::cancellation`). A customer files one under an
//! idempotency key; staff list them and decide. Each step is one transaction under the order's
//! row lock: the request row, the order's status, the event (`order.cancellation_requested`,
//! `order.cancellation_declined`, or `order.status_changed` + `order.cancelled`) and the read
//! model commit together, so concurrent decisions serialize and only the first changes anything.
//! What cancelling means for the money and the label happens where they live: payments-svc and
//! shipping-svc consume `order.cancelled`.

use super::OrdersService;
use super::transition::transition;
use crate::domain::cancellation::{self, CancelRequest, Decision, RequestStatus};
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::status::OrderStatus;
use crate::repo::{self, cancellation as cancel_repo, samples as sample_repo};
use crate::{OUTBOX, events};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, IdempotencyKey, Json};
use platform::principal::Principal;
use sqlx::PgConnection;
use uuid::Uuid;

/// Idempotency operation name of RequestCancellation.
pub const OPERATION_CANCEL_REQUEST: &str = "orders.cancel_request";

/// Default and largest page of the staff listing.
const LIST_DEFAULT: u32 = 50;
const LIST_MAX: u32 = 200;

/// What a decision came to.
#[derive(Clone, Debug)]
pub struct Decided {
    pub request: CancelRequest,
    pub order: Order,
    /// The request had already been decided this way: nothing changed.
    pub unchanged: bool,
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "order not found")
}

impl OrdersService {
    /// Files the principal's customer's request to cancel the order `reference` names (UUID,
    /// order, invoice, tracking or accession number) under idempotency `key`.
    pub async fn request_cancellation(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        reference: &str,
        reason: &str,
        confirm: bool,
    ) -> Answer<CancelRequest> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let call = key.call(customer_id, OPERATION_CANCEL_REQUEST);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                let reason = cancellation::text("reason", reason)?;
                if !confirm {
                    return Err(ApiError::field(
                        ErrorCode::ConfirmationRequired,
                        "confirm",
                        "confirm must be true to request the cancellation of the order",
                    ));
                }
                let mut tx = self.pool.begin().await?;
                let order_id = resolve_customer_order(&mut tx, customer_id, reference)
                    .await?
                    .ok_or_else(not_found)?;
                let (status, order_number) = repo::lock_order(&mut tx, customer_id, order_id)
                    .await?
                    .ok_or_else(not_found)?;
                cancellation::check_fileable(status, &order_number)?;
                if let Some(latest) = cancel_repo::latest_for_update(&mut tx, customer_id, order_id).await?
                    && latest.status == RequestStatus::Pending
                {
                    return Err(ApiError::new(
                        ErrorCode::CancelRequestPending,
                        format!(
                            "order {order_number} already has a cancellation request awaiting a decision"
                        ),
                    )
                    .with_details(serde_json::json!({ "cancelRequestId": latest.id.to_string() })));
                }
                let request = CancelRequest {
                    id: Uuid::now_v7(),
                    order_id,
                    order_number,
                    status: RequestStatus::Pending,
                    reason,
                    order_status: status,
                    requested_at: platform::time::now(),
                    decided_at: None,
                    decided_by: None,
                    note: None,
                    charge_cents: None,
                };
                cancel_repo::insert(&mut tx, customer_id, &request).await?;
                OUTBOX
                    .enqueue(&mut tx, events::cancellation_request(customer_id, &request))
                    .await?;
                repo::view::refresh(&mut tx, customer_id, order_id).await?;
                attempt.complete(&mut tx, &request).await?;
                tx.commit().await?;
                tracing::info!(order.id = %order_id, cancel_request.id = %request.id, "cancellation requested");
                Ok(request)
            })
            .await
    }

    /// Cancellation requests lab-wide for staff, pending ones oldest first.
    pub async fn list_cancel_requests(
        &self,
        status: Option<&str>,
        limit: u32,
    ) -> Result<Vec<CancelRequest>, ApiError> {
        let status = status.map(RequestStatus::parse_filter).transpose()?;
        let limit = match limit {
            0 => LIST_DEFAULT,
            limit if limit <= LIST_MAX => limit,
            _ => {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    "limit",
                    format!("limit must be 1 to {LIST_MAX}"),
                ));
            }
        };
        let mut conn = self.pool.acquire().await?;
        Ok(cancel_repo::list(&mut conn, status, i64::from(limit)).await?)
    }

    /// Decides the pending cancellation request of the order `reference` names (lab-wide UUID,
    /// order, invoice or accession number) as `operator`.
    pub async fn decide_cancel_request(
        &self,
        operator: &str,
        reference: &str,
        decision: Decision,
        note: &str,
        charge_cents: Option<i64>,
    ) -> Result<Decided, ApiError> {
        let note = cancellation::text("note", note)?;
        let reference = OrderReference::parse(reference).ok_or_else(not_found)?;
        let mut tx = self.pool.begin().await?;
        let (customer_id, order_id) = sample_repo::find_order_for_staff(&mut tx, &reference)
            .await?
            .ok_or_else(not_found)?;
        let (status, _) = repo::lock_order(&mut tx, customer_id, order_id)
            .await?
            .ok_or_else(not_found)?;
        let no_request = || ApiError::new(ErrorCode::NotFound, "the order has no cancellation request");
        let mut request = cancel_repo::latest_for_update(&mut tx, customer_id, order_id)
            .await?
            .ok_or_else(no_request)?;
        if request.status != RequestStatus::Pending {
            if request.status == decision.status() {
                let order = read_order(&mut tx, customer_id, order_id).await?;
                tx.commit().await?;
                return Ok(Decided {
                    request,
                    order,
                    unchanged: true,
                });
            }
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "the cancellation request of order {} was already {}",
                    request.order_number,
                    request.status.as_str()
                ),
            )
            .with_details(serde_json::json!({ "status": request.status.as_str() })));
        }
        let order = read_order(&mut tx, customer_id, order_id).await?;
        let charge = match decision {
            Decision::Approve => Some(cancellation::approval_charge(status, order.total, charge_cents)?),
            Decision::Decline if charge_cents.is_some() => {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    "chargeCents",
                    "a declined request charges nothing",
                ));
            }
            Decision::Decline => None,
        };
        request.status = decision.status();
        request.decided_at = Some(platform::time::now());
        request.decided_by = Some(operator.to_owned());
        request.note = Some(note);
        request.charge_cents = charge.map(|charge| charge.0);
        cancel_repo::decide(&mut tx, customer_id, &request).await?;
        match decision {
            Decision::Decline => {
                OUTBOX
                    .enqueue(&mut tx, events::cancellation_request(customer_id, &request))
                    .await?;
            }
            Decision::Approve => {
                let moved = transition(
                    &mut tx,
                    (customer_id, order_id),
                    &request.order_number,
                    status,
                    OrderStatus::Cancelled,
                    "cancellation approved",
                )
                .await?;
                if !moved {
                    return Err(ApiError::new(
                        ErrorCode::OrderNotCancellable,
                        format!("an order in status {} cannot be cancelled", status.as_str()),
                    ));
                }
                OUTBOX
                    .enqueue(
                        &mut tx,
                        events::order_cancelled(customer_id, status, &request, order.total, &order.currency),
                    )
                    .await?;
            }
        }
        repo::view::refresh(&mut tx, customer_id, order_id).await?;
        let order = read_order(&mut tx, customer_id, order_id).await?;
        tx.commit().await?;
        tracing::info!(
            order.id = %order_id,
            cancel_request.id = %request.id,
            decision = request.status.as_str(),
            operator,
            "cancellation request decided"
        );
        Ok(Decided {
            request,
            order,
            unchanged: false,
        })
    }
}

/// The id of the customer's order by UUID, order, invoice, accession or tracking number.
pub(super) async fn resolve_customer_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    if let Some(row) = repo::view::find_view(conn, customer_id, reference).await? {
        return Ok(Some(row.order_id));
    }
    repo::view::order_without_view(conn, customer_id, reference).await
}

async fn read_order(conn: &mut PgConnection, customer_id: Uuid, order_id: Uuid) -> Result<Order, ApiError> {
    repo::find_order(conn, customer_id, &OrderReference::Id(order_id))
        .await?
        .ok_or_else(not_found)
}

//! The one way an order changes status: check the move against the state machine
//! (`crate::domain::status::TRANSITIONS`), then write the status, a history entry and
//! `order.status_changed`, all in the caller's transaction (which holds the order's lock).

use crate::domain::order::StatusChange;
use crate::domain::status::{Lifecycle, OrderStatus};
use crate::{OUTBOX, events, repo};
use sqlx::PgConnection;
use uuid::Uuid;

/// Moves a locked order (`(customer id, order id)`) from `from` to `to` for `reason`; returns
/// false, changing nothing, when the machine refuses the move.
pub async fn transition(
    tx: &mut PgConnection,
    order: (Uuid, Uuid),
    order_number: &str,
    from: OrderStatus,
    to: OrderStatus,
    reason: &str,
) -> Result<bool, sqlx::Error> {
    let (customer_id, order_id) = order;
    if !from.can_transition_to(to) {
        tracing::info!(order.id = %order_id, %from, %to, "transition not allowed, ignored");
        return Ok(false);
    }
    let change = StatusChange {
        from: Some(from),
        to,
        changed_at: platform::time::now(),
        reason: reason.to_owned(),
    };
    repo::set_status(tx, customer_id, order_id, to, change.changed_at).await?;
    repo::insert_status_change(tx, customer_id, order_id, &change).await?;
    OUTBOX
        .enqueue(
            tx,
            events::order_status_changed(customer_id, order_id, order_number, &change),
        )
        .await?;
    Ok(true)
}

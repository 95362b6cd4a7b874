//! Applying payments events to orders, each in one transaction that first records the event id
//! (`first_delivery`), so a redelivered event changes nothing.
//!
//! * `payment.confirmed`: the payment block becomes `paid` with nothing due; an order still in
//!   `invoice_sent` or `overdue` moves to `paid` (history entry, `order.status_changed`). An order
//!   already past payment (ship-first label, fulfilment) keeps its status.
//! * `invoice.created`: stores the payment block when the synchronous CreateInvoice answer never
//!   arrived (backstop; the event carries no bank instructions).
//! * `invoice.updated`: sets the payment block's status and amount due.
//!
//! Orders are looked up by the event's order id AND its envelope customer; an unknown order is
//! recorded as processed and otherwise ignored. The consumer (`crate::consumer`) turns the
//! stream's payloads into [`InvoiceNews`].

use super::OrdersService;
use crate::domain::order::{InvoiceNews, PaymentSummary, StatusChange};
use crate::domain::status::OrderStatus;
use crate::repo::{self, InvoiceMerge};
use crate::{OUTBOX, SCHEMA, events};
use platform::consumer::first_delivery;
use platform::streams::GROUP_ORDERS;
use sqlx::PgConnection;
use uuid::Uuid;

/// Reason recorded when a confirmed payment moves an order to `paid`.
pub const REASON_PAYMENT_CONFIRMED: &str = "payment.confirmed";

/// The event and the order it is about.
#[derive(Clone, Copy, Debug)]
pub struct EventTarget<'a> {
    pub event_id: &'a str,
    pub customer_id: Uuid,
    pub order_id: Uuid,
}

impl OrdersService {
    /// Applies what payments-svc announced about the target order's invoice, once per event.
    pub async fn apply_invoice_news(
        &self,
        target: EventTarget<'_>,
        news: &InvoiceNews,
    ) -> Result<(), sqlx::Error> {
        match news {
            InvoiceNews::PaymentConfirmed {
                invoice_id,
                invoice_number,
            } => {
                self.apply_payment_confirmed(target, (invoice_id, invoice_number))
                    .await
            }
            InvoiceNews::InvoiceCreated(summary) => self.apply_invoice_created(target, summary).await,
            InvoiceNews::InvoiceUpdated {
                invoice_id,
                invoice_number,
                status,
                amount_due,
            } => {
                self.apply_invoice_updated(target, (invoice_id, invoice_number), status, amount_due.0)
                    .await
            }
        }
    }

    /// Applies `payment.confirmed`.
    async fn apply_payment_confirmed(
        &self,
        target: EventTarget<'_>,
        invoice: (&str, &str),
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, target.event_id).await? {
            return tx.commit().await;
        }
        let Some((status, order_number)) =
            repo::lock_order(&mut tx, target.customer_id, target.order_id).await?
        else {
            tracing::warn!(order.id = %target.order_id, "payment.confirmed for an unknown order, ignored");
            return tx.commit().await;
        };
        repo::set_invoice_status(&mut tx, target.customer_id, target.order_id, invoice, "paid", 0).await?;
        if matches!(status, OrderStatus::InvoiceSent | OrderStatus::Overdue) {
            transition(
                &mut tx,
                target,
                &order_number,
                status,
                OrderStatus::Paid,
                REASON_PAYMENT_CONFIRMED,
            )
            .await?;
        }
        tx.commit().await
    }

    /// Applies `invoice.created` (backstop for a lost synchronous answer).
    async fn apply_invoice_created(
        &self,
        target: EventTarget<'_>,
        summary: &PaymentSummary,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, target.event_id).await? {
            return tx.commit().await;
        }
        repo::store_invoice_summary(
            &mut tx,
            target.customer_id,
            target.order_id,
            summary,
            InvoiceMerge::OnlyIfAbsent,
        )
        .await?;
        tx.commit().await
    }

    /// Applies `invoice.updated`.
    async fn apply_invoice_updated(
        &self,
        target: EventTarget<'_>,
        invoice: (&str, &str),
        status: &str,
        amount_due_cents: i64,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, target.event_id).await? {
            return tx.commit().await;
        }
        repo::set_invoice_status(
            &mut tx,
            target.customer_id,
            target.order_id,
            invoice,
            status,
            amount_due_cents,
        )
        .await?;
        tx.commit().await
    }
}

/// Moves a locked order along the state machine: status, history entry and
/// `order.status_changed`, in the caller's transaction. Refused transitions change nothing.
async fn transition(
    tx: &mut PgConnection,
    target: EventTarget<'_>,
    order_number: &str,
    from: OrderStatus,
    to: OrderStatus,
    reason: &str,
) -> Result<bool, sqlx::Error> {
    if !from.can_transition_to(to) {
        tracing::info!(order.id = %target.order_id, %from, %to, "transition not allowed, ignored");
        return Ok(false);
    }
    let change = StatusChange {
        from: Some(from),
        to,
        changed_at: platform::time::now(),
        reason: reason.to_owned(),
    };
    repo::set_status(tx, target.customer_id, target.order_id, to, change.changed_at).await?;
    repo::insert_status_change(tx, target.customer_id, target.order_id, &change).await?;
    OUTBOX
        .enqueue(
            tx,
            events::order_status_changed(target.customer_id, target.order_id, order_number, &change),
        )
        .await?;
    Ok(true)
}

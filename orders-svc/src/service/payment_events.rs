//! Applying payments events to orders, each in one transaction that first records the event id
//! (`first_delivery`), so a redelivered event changes nothing.
//!
//! * `payment.confirmed`: the payment block becomes `paid` with nothing due; an order still in
//!   `invoice_sent` or `overdue` moves to `paid` (history entry, `order.status_changed`). An order
//!   already past payment (ship-first label, fulfilment) keeps its status.
//! * `invoice.created`: stores the payment block when the synchronous CreateInvoice answer never
//!   arrived (backstop; the event carries no bank instructions).
//! * `invoice.updated`: sets the payment block's status and amount due; `paid` (a settled card
//!   checkout, or a bank payment) moves an `invoice_sent`/`overdue` order to `paid`, and
//!   `overdue` (the overdue job) moves an `invoice_sent` order to `overdue`, each with a history
//!   entry and `order.status_changed`.
//!
//! Orders are looked up by the event's order id AND its envelope customer; an unknown order is
//! recorded as processed and otherwise ignored. The consumer (`crate::consumer`) turns the
//! stream's payloads into [`InvoiceNews`].

use super::OrdersService;
use super::transition::transition;
use crate::SCHEMA;
use crate::domain::order::{InvoiceNews, PaymentSummary};
use crate::domain::status::OrderStatus;
use crate::repo::{self, InvoiceMerge};
use platform::consumer::first_delivery;
use platform::streams::GROUP_ORDERS;
use proto::common::InvoiceStatus;
use uuid::Uuid;

/// Reason recorded when a confirmed payment moves an order to `paid`.
pub const REASON_PAYMENT_CONFIRMED: &str = "payment.confirmed";
/// Reason recorded when an invoice change (card settlement, overdue) moves an order.
pub const REASON_INVOICE_UPDATED: &str = "invoice.updated";

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
                self.apply_invoice_updated(target, (invoice_id, invoice_number), *status, amount_due.0)
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
        repo::set_invoice_status(
            &mut tx,
            target.customer_id,
            target.order_id,
            invoice,
            InvoiceStatus::Paid,
            0,
        )
        .await?;
        if matches!(status, OrderStatus::InvoiceSent | OrderStatus::Overdue) {
            transition(
                &mut tx,
                (target.customer_id, target.order_id),
                &order_number,
                status,
                OrderStatus::Paid,
                REASON_PAYMENT_CONFIRMED,
            )
            .await?;
        }
        repo::view::refresh(&mut tx, target.customer_id, target.order_id).await?;
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
        if repo::store_invoice_summary(
            &mut tx,
            target.customer_id,
            target.order_id,
            summary,
            InvoiceMerge::OnlyIfAbsent,
        )
        .await?
        {
            repo::view::refresh(&mut tx, target.customer_id, target.order_id).await?;
        }
        tx.commit().await
    }

    /// Applies `invoice.updated`.
    async fn apply_invoice_updated(
        &self,
        target: EventTarget<'_>,
        invoice: (&str, &str),
        status: InvoiceStatus,
        amount_due_cents: i64,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, target.event_id).await? {
            return tx.commit().await;
        }
        if status == InvoiceStatus::Unspecified {
            tracing::warn!(order.id = %target.order_id, "invoice.updated without a status, ignored");
            return tx.commit().await;
        }
        let Some((order_status, order_number)) =
            repo::lock_order(&mut tx, target.customer_id, target.order_id).await?
        else {
            tracing::warn!(order.id = %target.order_id, "invoice.updated for an unknown order, ignored");
            return tx.commit().await;
        };
        repo::set_invoice_status(
            &mut tx,
            target.customer_id,
            target.order_id,
            invoice,
            status,
            amount_due_cents,
        )
        .await?;
        let next = match (status, order_status) {
            // A settled card checkout (and a bank payment, whose payment.confirmed follows).
            (InvoiceStatus::Paid, OrderStatus::InvoiceSent | OrderStatus::Overdue) => Some(OrderStatus::Paid),
            // The overdue job: an unpaid bank invoice passed its due date.
            (InvoiceStatus::Overdue, OrderStatus::InvoiceSent) => Some(OrderStatus::Overdue),
            _ => None,
        };
        if let Some(next) = next {
            transition(
                &mut tx,
                (target.customer_id, target.order_id),
                &order_number,
                order_status,
                next,
                REASON_INVOICE_UPDATED,
            )
            .await?;
        }
        repo::view::refresh(&mut tx, target.customer_id, target.order_id).await?;
        tx.commit().await
    }
}

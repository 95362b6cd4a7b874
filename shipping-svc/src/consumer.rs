//! The consumer of the orders and payments streams (group `shipping-svc`):
//!
//! * `order.created` on the card or bank rail: buy the order's label (ship-first);
//! * `payment.confirmed` on the stablecoin rail: buy the label (label after settlement);
//! * `payment.confirmed` on the bank rail: record the order paid and email the label;
//! * `payment.confirmed` on any rail (and `invoice.updated` to `paid`): record the order paid
//!   (door pickups need it);
//! * `pickup_payment.paid` (payments-svc settled a door pickup's hosted payment): book the
//!   pickup with the carrier (a booked pickup answers as it stands);
//! * `pickup_payment.expired`: the pickup ends `payment_expired` (a booked one is unchanged);
//! * `order.cancelled`: the label is voided with the carrier unless the carrier has the parcel,
//!   a standing door pickup is cancelled, and no label is bought for the order any more
//!   (`service::cancellation`).
//!
//! Every effect is idempotent by itself (one shipment per order, one email per shipment, one
//! paid record per order, one void per shipment), so a redelivered event changes nothing; other events are
//! acknowledged without effect.

use crate::domain::{LabelOrder, SHIP_FIRST_RAILS};
use crate::repo;
use crate::service::ShippingService;
use crate::service::cancellation::OrderCancellation;
use platform::consumer::{EventHandler, HandlerError, event_customer, event_uuid};
use platform::error::ApiError;
use proto::common::{InvoiceStatus, OrderStatus, PaymentMethod};
use proto::enums::or_legacy;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use uuid::Uuid;

/// Event type of a settled pickup payment (payments-svc).
const PICKUP_PAYMENT_PAID: &str = "pickup_payment.paid";
/// Event type of a pickup payment that expired unpaid (payments-svc).
const PICKUP_PAYMENT_EXPIRED: &str = "pickup_payment.expired";

/// Applies order and payment events to shipments.
pub struct ShippingEventsHandler {
    service: ShippingService,
}

impl ShippingEventsHandler {
    pub fn new(service: ShippingService) -> Self {
        Self { service }
    }
}

impl EventHandler for ShippingEventsHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        match &event.data {
            Some(Data::OrderCreated(order)) => {
                let label_order = LabelOrder {
                    customer_id: event_customer(event)?,
                    order_id: event_uuid(event, "order id", &order.order_id)?,
                    order_number: order.order_number.clone(),
                    payment_method: or_legacy(order.payment_method, &order.legacy_payment_method),
                    quote_id: event_uuid(event, "quote id", &order.quote_id)?,
                    shipping_address_id: order.shipping_address_id.clone(),
                    sandbox: order.sandbox,
                };
                self.service.remember_order(&label_order).await?;
                if SHIP_FIRST_RAILS.contains(&label_order.payment_method) {
                    self.service.ensure_label(&label_order).await?;
                }
                Ok(())
            }
            Some(Data::OrderCancelled(cancelled)) => {
                let cancellation = OrderCancellation {
                    customer_id: event_customer(event)?,
                    order_id: event_uuid(event, "order id", &cancelled.order_id)?,
                    from_status: or_legacy::<OrderStatus>(
                        cancelled.from_status,
                        &cancelled.legacy_from_status,
                    ),
                    cancelled_at: chrono::DateTime::parse_from_rfc3339(&cancelled.cancelled_at)
                        .map(|at| at.with_timezone(&chrono::Utc))
                        .unwrap_or_else(|_| platform::time::now()),
                };
                self.service.cancel_order_label(&cancellation).await?;
                Ok(())
            }
            // An add-on's supplementary invoice pays tests on a sample the lab already holds:
            // nothing to ship.
            Some(Data::PaymentConfirmed(payment)) if payment.addon_id.is_some() => Ok(()),
            Some(Data::PaymentConfirmed(payment)) => {
                let customer_id = event_customer(event)?;
                let order_id = event_uuid(event, "order id", &payment.order_id)?;
                let rail: PaymentMethod = or_legacy(payment.rail, &payment.legacy_rail);
                self.service
                    .record_paid(customer_id, order_id, rail.as_str())
                    .await?;
                if rail == PaymentMethod::ChainStablecoin {
                    // order.created travels on another stream: until it is here, retry.
                    let label_order = self
                        .service
                        .remembered_order(customer_id, order_id)
                        .await?
                        .ok_or_else(|| {
                            HandlerError::Retry(anyhow::anyhow!("order {order_id} not announced yet"))
                        })?;
                    self.service.ensure_label(&label_order).await?;
                }
                if rail == PaymentMethod::BankInvoice {
                    self.service.email_label(customer_id, order_id).await?;
                }
                Ok(())
            }
            Some(Data::PickupPaymentUpdated(update)) => {
                let customer_id = event_customer(event)?;
                let pickup_id = event_uuid(event, "pickup id", &update.pickup_id)?;
                match event.r#type.as_str() {
                    PICKUP_PAYMENT_PAID => self
                        .service
                        .confirm_pickup_payment(
                            Some(customer_id),
                            &pickup_id.to_string(),
                            &update.payment_reference,
                        )
                        .await
                        .map(|_| ())
                        .map_err(|error| {
                            tracing::error!(
                                pickup = %pickup_id,
                                code = error.code.as_str(),
                                message = %error.message,
                                "a paid pickup could not be booked"
                            );
                            HandlerError::from(error)
                        }),
                    PICKUP_PAYMENT_EXPIRED => self
                        .service
                        .expire_pickup_payment(customer_id, pickup_id)
                        .await
                        .map(|_| ())
                        .map_err(HandlerError::from),
                    _ => Ok(()),
                }
            }
            Some(Data::InvoiceUpdated(invoice))
                if invoice.addon_id.is_none()
                    && or_legacy::<InvoiceStatus>(invoice.status, &invoice.legacy_status)
                        == InvoiceStatus::Paid =>
            {
                let customer_id = event_customer(event)?;
                let order_id = event_uuid(event, "order id", &invoice.order_id)?;
                self.service
                    .record_paid(customer_id, order_id, "invoice")
                    .await
                    .map_err(HandlerError::from)
            }
            _ => Ok(()),
        }
    }
}

impl ShippingService {
    /// Remembers an announced order (once).
    pub async fn remember_order(&self, order: &LabelOrder) -> Result<(), ApiError> {
        let mut conn = self.pool().acquire().await?;
        repo::shipments::remember_order(&mut conn, order, platform::time::now()).await?;
        Ok(())
    }

    /// PrepareLabel: remembers the just-placed ship-first order and buys its label now, while
    /// its `POST /orders` waits; `order.created` finds the same label later (or buys it first,
    /// and this call finds it). `None` for an order cancelled before its label was bought.
    pub async fn prepare_label(
        &self,
        order: &LabelOrder,
    ) -> Result<Option<crate::domain::Shipment>, ApiError> {
        self.remember_order(order).await?;
        self.ensure_label(order).await
    }

    /// The customer's announced order.
    pub async fn remembered_order(
        &self,
        customer_id: Uuid,
        order_id: Uuid,
    ) -> Result<Option<LabelOrder>, ApiError> {
        let mut conn = self.pool().acquire().await?;
        Ok(repo::shipments::remembered_order(&mut conn, customer_id, order_id).await?)
    }

    /// Records that the customer's order is paid (once).
    pub async fn record_paid(&self, customer_id: Uuid, order_id: Uuid, rail: &str) -> Result<(), ApiError> {
        let mut conn = self.pool().acquire().await?;
        repo::shipments::mark_paid(&mut conn, customer_id, order_id, rail, platform::time::now()).await?;
        Ok(())
    }
}

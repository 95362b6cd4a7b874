//! The consumer of the orders and payments streams (group `shipping-svc`):
//!
//! * `order.created` on the card or bank rail: buy the order's label (ship-first);
//! * `payment.confirmed` on the stablecoin rail: buy the label (label after settlement);
//! * `payment.confirmed` on the bank rail: record the order paid and email the label;
//! * `payment.confirmed` on any rail (and `invoice.updated` to `paid`): record the order paid
//!   (door pickups need it);
//! * `pickup_payment.paid` (payments-svc settled a door pickup's hosted payment): book the
//!   pickup with the carrier (a booked pickup answers as it stands);
//! * `pickup_payment.expired`: the pickup ends `payment_expired` (a booked one is unchanged).
//!
//! Every effect is idempotent by itself (one shipment per order, one email per shipment, one
//! paid record per order), so a redelivered event changes nothing; other events are
//! acknowledged without effect.

use crate::domain::LabelOrder;
use crate::repo;
use crate::service::ShippingService;
use platform::consumer::{EventHandler, HandlerError, event_customer, event_uuid};
use platform::error::ApiError;
use proto::common::{InvoiceStatus, PaymentMethod};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use uuid::Uuid;

/// Rails whose orders are ship-first.
const SHIP_FIRST_RAILS: [PaymentMethod; 2] = [PaymentMethod::BankInvoice, PaymentMethod::CardCheckout];
/// `status` of `pickup_payment.paid`.
const PICKUP_PAID: &str = "paid";
/// `status` of `pickup_payment.expired`.
const PICKUP_EXPIRED: &str = "expired";

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
                    payment_method: order.payment_method.clone(),
                    quote_id: event_uuid(event, "quote id", &order.quote_id)?,
                    shipping_address_id: order.shipping_address_id.clone(),
                };
                self.service.remember_order(&label_order).await?;
                if PaymentMethod::parse(&order.payment_method)
                    .is_some_and(|rail| SHIP_FIRST_RAILS.contains(&rail))
                {
                    self.service.ensure_label(&label_order).await?;
                }
                Ok(())
            }
            Some(Data::PaymentConfirmed(payment)) => {
                let customer_id = event_customer(event)?;
                let order_id = event_uuid(event, "order id", &payment.order_id)?;
                self.service
                    .record_paid(customer_id, order_id, &payment.rail)
                    .await?;
                let rail = PaymentMethod::parse(&payment.rail);
                if rail == Some(PaymentMethod::ChainStablecoin) {
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
                if rail == Some(PaymentMethod::BankInvoice) {
                    self.service.email_label(customer_id, order_id).await?;
                }
                Ok(())
            }
            Some(Data::PickupPaymentUpdated(update)) => {
                let customer_id = event_customer(event)?;
                let pickup_id = event_uuid(event, "pickup id", &update.pickup_id)?;
                match update.status.as_str() {
                    PICKUP_PAID => self
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
                    PICKUP_EXPIRED => self
                        .service
                        .expire_pickup_payment(customer_id, pickup_id)
                        .await
                        .map(|_| ())
                        .map_err(HandlerError::from),
                    _ => Ok(()),
                }
            }
            Some(Data::InvoiceUpdated(invoice))
                if InvoiceStatus::parse(&invoice.status) == Some(InvoiceStatus::Paid) =>
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

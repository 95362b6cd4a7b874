//! The consumer of the orders stream (group `payments-svc`): `order.created` is the invoice
//! backstop, issuing the order's invoice when orders-svc's synchronous CreateInvoice call did
//! not; `order.cancelled` credits the order's invoice down to the kept charge, voiding it or
//! refunding what was paid above it (once per order, `crate::service` cancellation), and
//! releases the order's spend commitment, or lowers it to the charge staff kept (idempotent:
//! releasing a released commitment, or lowering one to the same amount, changes nothing); other
//! order events are acknowledged without effect.

use crate::convert;
use crate::service::PaymentsService;
use platform::consumer::{EventHandler, HandlerError, event_customer};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;

/// Issues the invoice of every created order that has none.
pub struct OrderEventsHandler {
    service: PaymentsService,
}

impl OrderEventsHandler {
    pub fn new(service: PaymentsService) -> Self {
        Self { service }
    }
}

impl EventHandler for OrderEventsHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        if let Some(Data::OrderCancelled(cancelled)) = &event.data {
            return self.release_cancelled(event, cancelled).await;
        }
        let Some(Data::OrderCreated(order)) = &event.data else {
            return Ok(());
        };
        let customer_id = event_customer(event)?;
        let invoice = convert::backstop_invoice(order)?;
        Ok(self
            .service
            .backstop_invoice(&event.id, customer_id, invoice)
            .await?)
    }
}

impl OrderEventsHandler {
    async fn release_cancelled(
        &self,
        event: &EventEnvelope,
        cancelled: &proto::orders::OrderCancelled,
    ) -> Result<(), HandlerError> {
        let customer_id = event_customer(event)?;
        self.service
            .apply_order_cancelled(&event.id, customer_id, cancelled)
            .await?;
        // What staff kept is still spent by the key; the rest of the commitment is freed.
        if cancelled.charge_cents > 0 {
            self.service
                .reduce_spend(
                    customer_id,
                    crate::domain::spend::SpendKind::Order,
                    &cancelled.order_id,
                    platform::money::Cents(cancelled.charge_cents),
                )
                .await?;
        } else {
            self.service
                .release_spend(
                    customer_id,
                    crate::domain::spend::SpendKind::Order,
                    &cancelled.order_id,
                )
                .await?;
        }
        Ok(())
    }
}

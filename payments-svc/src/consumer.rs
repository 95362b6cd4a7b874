//! The consumer of the orders stream (group `payments-svc`): `order.created` is the invoice
//! backstop, issuing the order's invoice when orders-svc's synchronous CreateInvoice call did
//! not; `order.cancelled` releases the order's spend commitment (idempotent: releasing a
//! released commitment changes nothing); other order events are acknowledged without effect.

use crate::convert;
use crate::service::PaymentsService;
use platform::consumer::{EventHandler, HandlerError};
use platform::error::{ApiError, ErrorCode};
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use uuid::Uuid;

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
        let permanent = |error: ApiError| {
            HandlerError::Permanent(anyhow::anyhow!("{}: {}", error.code.as_str(), error.message))
        };
        let customer_id = Uuid::parse_str(&event.customer_id)
            .map_err(|_| HandlerError::Permanent(anyhow::anyhow!("order.created without a customer id")))?;
        let invoice = convert::backstop_invoice(order).map_err(permanent)?;
        match self
            .service
            .backstop_invoice(&event.id, customer_id, invoice)
            .await
        {
            Ok(()) => Ok(()),
            Err(error) if matches!(error.code, ErrorCode::Internal | ErrorCode::ServiceUnavailable) => Err(
                HandlerError::Retry(anyhow::anyhow!("{}: {}", error.code.as_str(), error.message)),
            ),
            Err(error) => Err(permanent(error)),
        }
    }
}

impl OrderEventsHandler {
    async fn release_cancelled(
        &self,
        event: &EventEnvelope,
        cancelled: &proto::orders::OrderCancelled,
    ) -> Result<(), HandlerError> {
        let Ok(customer_id) = Uuid::parse_str(&event.customer_id) else {
            return Err(HandlerError::Permanent(anyhow::anyhow!(
                "order.cancelled without a customer id"
            )));
        };
        self.service
            .release_spend(
                customer_id,
                crate::domain::spend::SpendKind::Order,
                &cancelled.order_id,
            )
            .await
            .map(|_| ())
            .map_err(|error| {
                HandlerError::Retry(anyhow::anyhow!("{}: {}", error.code.as_str(), error.message))
            })
    }
}

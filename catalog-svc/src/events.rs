//! Consumer of the orders stream (group `catalog-svc`): on `order.created` the quote is recorded
//! as consumed by that order, once. This is informational; orders-svc enforces one order per
//! quote. Other event types are acknowledged and ignored.

use crate::repo;
use platform::consumer::{EventHandler, HandlerError, first_delivery};
use platform::streams::GROUP_CATALOG;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use sqlx::PgPool;
use uuid::Uuid;

/// Event type this consumer acts on.
pub const ORDER_CREATED: &str = "order.created";

/// Applies orders-domain events to the catalog schema.
pub struct OrderEvents {
    pool: PgPool,
}

impl OrderEvents {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn uuid(what: &str, value: &str) -> Result<Uuid, HandlerError> {
    Uuid::parse_str(value)
        .map_err(|_| HandlerError::Permanent(anyhow::anyhow!("{what} {value:?} is not a uuid")))
}

impl EventHandler for OrderEvents {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        if event.r#type != ORDER_CREATED {
            return Ok(());
        }
        let Some(Data::OrderCreated(created)) = &event.data else {
            return Err(HandlerError::Permanent(anyhow::anyhow!(
                "order.created without its payload"
            )));
        };
        let customer_id = uuid("customer id", &event.customer_id)?;
        let quote_id = uuid("quote id", &created.quote_id)?;
        let order_id = uuid("order id", &created.order_id)?;
        let consumed_at = chrono::DateTime::parse_from_rfc3339(&created.created_at)
            .map(|time| time.to_utc())
            .unwrap_or_else(|_| platform::time::now());
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, crate::SCHEMA, GROUP_CATALOG, &event.id).await? {
            return Ok(());
        }
        let changed =
            repo::mark_quote_consumed(&mut tx, customer_id, quote_id, order_id, consumed_at).await?;
        tx.commit().await?;
        tracing::info!(%quote_id, %order_id, changed, "order.created applied to its quote");
        Ok(())
    }
}

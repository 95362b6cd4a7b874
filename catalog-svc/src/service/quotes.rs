//! Quote use cases: create (idempotent when the caller sends a key) and read, always for the
//! caller's customer (a created quote is its own stored answer: quotes are immutable); and
//! recording which order consumed a quote, from the orders stream.

use super::CatalogService;
use crate::domain::quote::{self, CURRENCY, Quote, QuoteRequest};
use crate::repo;
use chrono::{DateTime, Utc};
use platform::consumer::first_delivery;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, Json};
use platform::streams::GROUP_CATALOG;
use uuid::Uuid;

/// Idempotency operation name of quote creation.
pub const OP_CREATE_QUOTE: &str = "catalog.create_quote";

fn quote_not_found() -> ApiError {
    ApiError::new(ErrorCode::QuoteNotFound, "the quote does not exist")
}

impl CatalogService {
    /// Prices and stores a quote on the current revision for the caller's customer. With an
    /// idempotency key, a repeat of the same request answers the same quote.
    pub async fn create_quote(
        &self,
        customer_id: Uuid,
        request: QuoteRequest,
        key: Option<IdempotencyKey>,
    ) -> Answer<Quote> {
        let Some(key) = key else {
            return Answer::fresh(self.store_quote(customer_id, &request, None).await);
        };
        let call = key.call(customer_id, OP_CREATE_QUOTE);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                self.store_quote(customer_id, &request, Some(attempt)).await
            })
            .await
    }

    /// Prices the quote and stores it (with the key's answer, when there is a key).
    async fn store_quote(
        &self,
        customer_id: Uuid,
        request: &QuoteRequest,
        attempt: Option<&Attempt<'_, Json>>,
    ) -> Result<Quote, ApiError> {
        let quote = self.price_quote(customer_id, request).await?;
        let mut tx = self.pool.begin().await?;
        repo::insert_quote(&mut tx, &quote).await?;
        if let Some(attempt) = attempt {
            attempt.complete(&mut tx, &quote).await?;
        }
        tx.commit().await?;
        Ok(quote)
    }

    /// Reads a quote of the caller's customer, expired or not (the caller judges `expires_at`).
    pub async fn get_quote(&self, customer_id: Uuid, quote_id: &str) -> Result<Quote, ApiError> {
        let id = Uuid::parse_str(quote_id.trim()).map_err(|_| quote_not_found())?;
        repo::find_quote(&self.pool, customer_id, id)
            .await?
            .ok_or_else(quote_not_found)
    }

    /// Records, once per event `event_id`, that order `order_id` consumed the quote.
    pub async fn record_quote_consumed(
        &self,
        event_id: &str,
        customer_id: Uuid,
        quote_id: Uuid,
        order_id: Uuid,
        consumed_at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, crate::SCHEMA, GROUP_CATALOG, event_id).await? {
            return Ok(());
        }
        let changed =
            repo::mark_quote_consumed(&mut tx, customer_id, quote_id, order_id, consumed_at).await?;
        tx.commit().await?;
        tracing::info!(%quote_id, %order_id, changed, "order.created applied to its quote");
        Ok(())
    }

    async fn price_quote(&self, customer_id: Uuid, request: &QuoteRequest) -> Result<Quote, ApiError> {
        let (revision, catalog) = self.current().await?;
        let priced = quote::price(&catalog, request)?;
        let created_at = platform::time::now();
        Ok(Quote {
            id: Uuid::new_v4(),
            customer_id,
            catalog_revision: revision,
            priced,
            currency: CURRENCY.to_owned(),
            created_at,
            expires_at: created_at + self.quote_ttl,
        })
    }
}

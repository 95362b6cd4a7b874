//! Quote use cases: create (optionally idempotent) and read, always for the caller's customer.

use super::{Idempotency, QuoteOutcome, Service};
use crate::domain::quote::{self, CURRENCY, Quote, QuoteRequest};
use crate::repo;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Claim, IdempotencyScope, StoredOutcome};
use uuid::Uuid;

/// Idempotency operation name of quote creation.
pub const OP_CREATE_QUOTE: &str = "catalog.create_quote";

fn quote_not_found() -> ApiError {
    ApiError::new(ErrorCode::QuoteNotFound, "the quote does not exist")
}

impl Service {
    /// Prices and stores a quote on the current revision for the caller's customer. With an
    /// idempotency key, a repeat of the same request returns the same quote.
    pub async fn create_quote(
        &self,
        customer_id: Uuid,
        request: QuoteRequest,
        idempotency: Option<Idempotency>,
    ) -> Result<QuoteOutcome, ApiError> {
        let Some(Idempotency { key, fingerprint }) = idempotency else {
            let quote = self.price_quote(customer_id, &request).await?;
            let mut tx = self.pool.begin().await?;
            repo::insert_quote(&mut tx, &quote).await?;
            tx.commit().await?;
            return Ok(QuoteOutcome {
                quote,
                replayed: false,
            });
        };
        let scope = IdempotencyScope {
            customer_id,
            operation: OP_CREATE_QUOTE,
            key,
        };
        let ticket = match self.idempotency.claim(&self.pool, &scope, &fingerprint).await? {
            Claim::Replay(StoredOutcome::Failure(error)) => return Err(error),
            Claim::Replay(StoredOutcome::Success(bytes)) => {
                let id = Uuid::from_slice(&bytes).map_err(ApiError::internal)?;
                let quote = repo::find_quote(&self.pool, customer_id, id).await?;
                let quote = quote.ok_or_else(|| ApiError::internal("a replayed quote is missing"))?;
                return Ok(QuoteOutcome {
                    quote,
                    replayed: true,
                });
            }
            Claim::Run { ticket, .. } => ticket,
        };
        let outcome = match self.price_quote(customer_id, &request).await {
            Ok(quote) => Ok(quote),
            Err(error) if error.code.http_status() < 500 => Err(error),
            Err(error) => {
                self.idempotency.release(&self.pool, &ticket).await;
                return Err(error);
            }
        };
        let stored = match &outcome {
            Ok(quote) => StoredOutcome::Success(quote.id.as_bytes().to_vec()),
            Err(error) => StoredOutcome::Failure(error.clone()),
        };
        let committed = async {
            let mut tx = self.pool.begin().await?;
            if let Ok(quote) = &outcome {
                repo::insert_quote(&mut tx, quote).await?;
            }
            self.idempotency.complete(&mut tx, &ticket, &stored).await?;
            tx.commit().await?;
            Ok::<(), ApiError>(())
        };
        if let Err(error) = committed.await {
            self.idempotency.release(&self.pool, &ticket).await;
            return Err(error);
        }
        outcome.map(|quote| QuoteOutcome {
            quote,
            replayed: false,
        })
    }

    /// Reads a quote of the caller's customer, expired or not (the caller judges `expires_at`).
    pub async fn get_quote(&self, customer_id: Uuid, quote_id: &str) -> Result<Quote, ApiError> {
        let id = Uuid::parse_str(quote_id.trim()).map_err(|_| quote_not_found())?;
        repo::find_quote(&self.pool, customer_id, id)
            .await?
            .ok_or_else(quote_not_found)
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

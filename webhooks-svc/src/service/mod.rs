//! Use cases of webhooks-svc; each owns its transactions. Endpoint management
//! (`endpoints.rs`), test deliveries (`test_delivery.rs`), delivery listings and the staff
//! operations (`deliveries.rs`), and the fan-out of stream events (`fanout.rs`).
//!
//! The four mutations are idempotent (`idempotent.rs`, on `platform::idempotency`): the key is
//! bound to the operation, the exact request and the calling API key, and the stored answer is
//! sealed with the secrets keyring because CreateEndpoint and RotateSecret answers carry a
//! plaintext signing secret.

mod deliveries;
mod endpoints;
mod fanout;
mod idempotent;
mod test_delivery;

pub use deliveries::Viewer;

use crate::config::{DeliverySettings, IdempotencyTiming};
use crate::dispatcher::Dispatcher;
use crate::keyring::Keyring;
use crate::ssrf::AddressGuard;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::IdempotencyStore;
use sqlx::PgPool;
use std::sync::Arc;
use uuid::Uuid;

/// The use cases over the pool, the keyring, the address guard and the dispatcher.
#[derive(Clone)]
pub struct WebhooksService {
    pool: PgPool,
    keyring: Keyring,
    guard: AddressGuard,
    dispatcher: Arc<Dispatcher>,
    idempotency: IdempotencyStore,
    delivery: DeliverySettings,
    /// How many endpoints (not deleted) one customer may have.
    max_endpoints_per_customer: u32,
}

impl WebhooksService {
    pub fn new(
        pool: PgPool,
        keyring: Keyring,
        guard: AddressGuard,
        dispatcher: Arc<Dispatcher>,
        idempotency: IdempotencyTiming,
    ) -> Self {
        let delivery = dispatcher.settings().clone();
        Self {
            pool,
            keyring,
            guard,
            dispatcher,
            idempotency: IdempotencyStore::new(crate::SCHEMA)
                .with_timing(idempotency.lease, idempotency.wait),
            delivery,
            max_endpoints_per_customer: crate::domain::endpoint::DEFAULT_MAX_ENDPOINTS_PER_CUSTOMER,
        }
    }

    /// Sets how many endpoints (not deleted) one customer may have.
    pub fn with_endpoint_limit(mut self, max_endpoints_per_customer: u32) -> Self {
        self.max_endpoints_per_customer = max_endpoints_per_customer;
        self
    }
}

/// Parses an endpoint id (400 `invalid_request` on `endpointId` when not a UUID).
pub fn endpoint_id(text: &str) -> Result<Uuid, ApiError> {
    platform::ids::parse_uuid("endpointId", text)
}

/// The answer for a missing, deleted or other customer's endpoint.
pub fn endpoint_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "webhook endpoint not found")
}

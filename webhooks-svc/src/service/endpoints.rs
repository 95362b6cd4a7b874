//! Registering, listing, deleting endpoints and rotating their secrets.

use super::idempotent::SealedAttempt;
use super::{WebhooksService, endpoint_not_found};
use crate::domain::endpoint::{endpoint_limit_reached, invalid_url};
use crate::domain::signing::generate_secret;
use crate::domain::{Endpoint, EndpointStatus, IssuedSecret, NewEndpoint};
use crate::repo;
use crate::repo::endpoints::SealedSecret;
use crate::ssrf::UrlHost;
use platform::error::ApiError;
use platform::idempotency::{Answer, IdempotencyKey};
use platform::pagination::{After, Listing, Page, PageRequest};
use platform::principal::{Principal, PrincipalKind};
use secrecy::ExposeSecret;
use uuid::Uuid;

/// The listing of a customer's endpoints, newest first.
pub const ENDPOINTS: Listing = Listing::new("webhook_endpoints");

/// Idempotency operation of CreateEndpoint.
pub const OPERATION_CREATE: &str = "webhooks.create";
/// Idempotency operation of DeleteEndpoint.
pub const OPERATION_DELETE: &str = "webhooks.delete";
/// Idempotency operation of RotateSecret.
pub const OPERATION_ROTATE: &str = "webhooks.rotate_secret";

/// A customer key needs `webhooks:write` and the read scope of every selected event (403 with
/// `details.required` and `details.missing`); the rule is the one the gateway applies.
fn require_read_scopes(principal: &Principal, events: &[String]) -> Result<(), ApiError> {
    if principal.kind != PrincipalKind::Customer {
        return Ok(());
    }
    platform::access::require_subscription(events, &principal.scopes)
}

impl WebhooksService {
    /// Registers an endpoint for the principal's customer and returns its secret (once).
    pub async fn create_endpoint(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        new: NewEndpoint,
    ) -> Answer<IssuedSecret> {
        let admitted = require_read_scopes(principal, &new.events).and_then(|()| match new.url.host() {
            UrlHost::Ip(address) => self
                .guard
                .check_literal(*address)
                .map_err(|refused| invalid_url(refused.into())),
            UrlHost::Domain(_) => Ok(()),
        });
        if let Err(error) = admitted {
            return Answer::fresh(Err(error));
        }
        self.idempotent(principal, key, OPERATION_CREATE, async |customer_id, attempt| {
            // Resolved names are vetted after the claim and never stored: a retry resolves again.
            self.guard
                .vet_url(&new.url)
                .await
                .map_err(|error| attempt.transient(invalid_url(error)))?;
            self.register(customer_id, attempt, new).await
        })
        .await
    }

    async fn register(
        &self,
        customer_id: Uuid,
        attempt: &SealedAttempt<'_>,
        new: NewEndpoint,
    ) -> Result<IssuedSecret, ApiError> {
        let now = platform::time::now();
        let endpoint = Endpoint {
            id: Uuid::now_v7(),
            customer_id,
            url: new.url.as_str().to_owned(),
            events: new.events,
            description: new.description,
            status: EndpointStatus::Active,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
            previous_secret_expires_at: None,
        };
        let secret = generate_secret();
        let sealed = self.seal_secret(endpoint.id, secret.expose_secret());
        let mut tx = self.pool.begin().await?;
        repo::endpoints::lock_customer(&mut tx, customer_id).await?;
        let limit = self.max_endpoints_per_customer;
        if repo::endpoints::count_live(&mut tx, customer_id).await? >= i64::from(limit) {
            return Err(endpoint_limit_reached(limit));
        }
        repo::endpoints::insert(&mut tx, &endpoint, &sealed).await?;
        let issued = IssuedSecret {
            endpoint,
            signing_secret: secret,
        };
        attempt.complete(&mut tx, &issued).await?;
        tx.commit().await?;
        tracing::info!(endpoint.id = %issued.endpoint.id, events = ?issued.endpoint.events, "webhook endpoint registered");
        Ok(issued)
    }

    fn seal_secret(&self, endpoint_id: Uuid, secret: &str) -> SealedSecret {
        SealedSecret {
            sealed: self.keyring.seal(secret.as_bytes(), endpoint_id.as_bytes()),
            key_id: self.keyring.current_id().to_owned(),
        }
    }

    /// One newest-first page of the customer's endpoints (not deleted), as safe metadata.
    pub async fn list_endpoints(
        &self,
        customer_id: Uuid,
        page: &PageRequest,
    ) -> Result<Page<Endpoint>, ApiError> {
        let after = ENDPOINTS.after(page)?;
        let mut conn = self.pool.acquire().await?;
        let rows = repo::endpoints::list(&mut conn, customer_id, after, page.fetch()).await?;
        Ok(ENDPOINTS.page(page, rows, |endpoint| {
            After::new(endpoint.created_at, endpoint.id)
        }))
    }

    /// Deletes the customer's endpoint; its pending deliveries are abandoned.
    pub async fn delete_endpoint(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        id: Uuid,
    ) -> Answer<Endpoint> {
        self.idempotent(principal, key, OPERATION_DELETE, async |customer_id, attempt| {
            let mut tx = self.pool.begin().await?;
            let endpoint = repo::endpoints::mark_deleted(&mut tx, customer_id, id, platform::time::now())
                .await?
                .ok_or_else(endpoint_not_found)?;
            let abandoned = repo::deliveries::abandon_pending(&mut tx, customer_id, id).await?;
            attempt.complete(&mut tx, &endpoint).await?;
            tx.commit().await?;
            tracing::info!(endpoint.id = %id, abandoned, "webhook endpoint deleted");
            Ok(endpoint)
        })
        .await
    }

    /// Issues a new secret; the previous one keeps signing beside it for the overlap window.
    pub async fn rotate_secret(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        id: Uuid,
    ) -> Answer<IssuedSecret> {
        self.idempotent(principal, key, OPERATION_ROTATE, async |customer_id, attempt| {
            let mut tx = self.pool.begin().await?;
            let (_, secrets) = repo::endpoints::lock(&mut tx, customer_id, id)
                .await?
                .ok_or_else(endpoint_not_found)?;
            let secret = generate_secret();
            let current = self.seal_secret(id, secret.expose_secret());
            let overlap =
                chrono::Duration::from_std(self.delivery.rotation_overlap).unwrap_or(chrono::Duration::MAX);
            let expires_at = platform::time::now() + overlap;
            let endpoint = repo::endpoints::store_rotation(
                &mut tx,
                customer_id,
                id,
                &current,
                &secrets.current,
                expires_at,
            )
            .await?
            .ok_or_else(endpoint_not_found)?;
            let issued = IssuedSecret {
                endpoint,
                signing_secret: secret,
            };
            attempt.complete(&mut tx, &issued).await?;
            tx.commit().await?;
            tracing::info!(endpoint.id = %id, "webhook signing secret rotated");
            Ok(issued)
        })
        .await
    }
}

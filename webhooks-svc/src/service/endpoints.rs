//! Registering, listing, deleting endpoints and rotating their secrets.

use super::idempotent::{Binding, EndpointRun, Outcome, Started};
use super::{WebhooksService, endpoint_not_found};
use crate::domain::endpoint::{endpoint_limit_reached, invalid_url};
use crate::domain::signing::generate_secret;
use crate::domain::{Endpoint, EndpointStatus, NewEndpoint};
use crate::repo;
use crate::repo::endpoints::SealedSecret;
use crate::ssrf::UrlHost;
use platform::error::ApiError;
use platform::idempotency::Ticket;
use platform::pagination::{After, Listing, Page, PageRequest};
use platform::principal::{Principal, PrincipalKind};
use proto::webhooks as pb;
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
        key: String,
        request: pb::CreateEndpointRequest,
    ) -> Outcome<pb::CreateEndpointResponse> {
        let checked = principal.customer().and_then(|customer_id| {
            let new = NewEndpoint::validate(&request.url, &request.events, request.description.as_deref())?;
            require_read_scopes(principal, &new.events)?;
            if let UrlHost::Ip(address) = new.url.host() {
                self.guard
                    .check_literal(*address)
                    .map_err(|refused| invalid_url(refused.into()))?;
            }
            Ok((customer_id, new))
        });
        let (customer_id, new) = match checked {
            Ok(checked) => checked,
            Err(error) => return Outcome::fresh(Err(error)),
        };
        let binding = Binding {
            customer_id,
            principal,
            operation: OPERATION_CREATE,
            key,
        };
        let ticket = match self.start(binding, &request).await {
            Ok(Started::Run { ticket, .. }) => ticket,
            Ok(Started::Replayed(outcome)) => return outcome,
            Err(error) => return Outcome::fresh(Err(error)),
        };
        // Resolved names are vetted after the claim and never stored: a retry resolves again.
        if let Err(error) = self.guard.vet_url(&new.url).await {
            self.release(&ticket).await;
            return Outcome::fresh(Err(invalid_url(error)));
        }
        match self.register(customer_id, &ticket, new).await {
            Ok(response) => Outcome::fresh(Ok(response)),
            Err(error) => Outcome::fresh(Err(self.settle_failure(&ticket, error).await)),
        }
    }

    async fn register(
        &self,
        customer_id: Uuid,
        ticket: &Ticket,
        new: NewEndpoint,
    ) -> Result<pb::CreateEndpointResponse, ApiError> {
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
        let response = pb::CreateEndpointResponse {
            endpoint: Some((&endpoint).into()),
            signing_secret: secret.expose_secret().to_owned(),
        };
        let mut tx = self.pool.begin().await?;
        repo::endpoints::lock_customer(&mut tx, customer_id).await?;
        let limit = self.max_endpoints_per_customer;
        if repo::endpoints::count_live(&mut tx, customer_id).await? >= i64::from(limit) {
            return Err(endpoint_limit_reached(limit));
        }
        repo::endpoints::insert(&mut tx, &endpoint, &sealed).await?;
        self.complete(&mut tx, ticket, OPERATION_CREATE, customer_id, &response)
            .await?;
        tx.commit().await?;
        tracing::info!(endpoint.id = %endpoint.id, events = ?endpoint.events, "webhook endpoint registered");
        Ok(response)
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
        key: String,
        request: pb::DeleteEndpointRequest,
    ) -> Outcome<pb::DeleteEndpointResponse> {
        let EndpointRun {
            customer_id,
            endpoint_id: id,
            ticket,
            ..
        } = match self
            .start_endpoint_operation(principal, key, OPERATION_DELETE, &request.endpoint_id, &request)
            .await
        {
            Ok(run) => run,
            Err(answer) => return answer,
        };
        let deleted = async {
            let mut tx = self.pool.begin().await?;
            let endpoint = repo::endpoints::mark_deleted(&mut tx, customer_id, id, platform::time::now())
                .await?
                .ok_or_else(endpoint_not_found)?;
            let abandoned = repo::deliveries::abandon_pending(&mut tx, customer_id, id).await?;
            let response = pb::DeleteEndpointResponse {
                endpoint: Some((&endpoint).into()),
            };
            self.complete(&mut tx, &ticket, OPERATION_DELETE, customer_id, &response)
                .await?;
            tx.commit().await?;
            tracing::info!(endpoint.id = %id, abandoned, "webhook endpoint deleted");
            Ok::<_, ApiError>(response)
        };
        match deleted.await {
            Ok(response) => Outcome::fresh(Ok(response)),
            Err(error) => Outcome::fresh(Err(self.settle_failure(&ticket, error).await)),
        }
    }

    /// Issues a new secret; the previous one keeps signing beside it for the overlap window.
    pub async fn rotate_secret(
        &self,
        principal: &Principal,
        key: String,
        request: pb::RotateSecretRequest,
    ) -> Outcome<pb::RotateSecretResponse> {
        let EndpointRun {
            customer_id,
            endpoint_id: id,
            ticket,
            ..
        } = match self
            .start_endpoint_operation(principal, key, OPERATION_ROTATE, &request.endpoint_id, &request)
            .await
        {
            Ok(run) => run,
            Err(answer) => return answer,
        };
        let rotated = async {
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
            let response = pb::RotateSecretResponse {
                endpoint: Some((&endpoint).into()),
                signing_secret: secret.expose_secret().to_owned(),
            };
            self.complete(&mut tx, &ticket, OPERATION_ROTATE, customer_id, &response)
                .await?;
            tx.commit().await?;
            tracing::info!(endpoint.id = %id, "webhook signing secret rotated");
            Ok::<_, ApiError>(response)
        };
        match rotated.await {
            Ok(response) => Outcome::fresh(Ok(response)),
            Err(error) => Outcome::fresh(Err(self.settle_failure(&ticket, error).await)),
        }
    }
}

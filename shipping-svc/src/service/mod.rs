//! Use cases of shipping-svc. Each owns its transactions; every state change commits with its
//! event through the outbox.
//!
//! * [`labels`]: buying an order's label exactly once (order events), rendering it.
//! * [`tracking`]: recording carrier scans (staff, sandbox scripts, carrier webhooks).
//! * [`webhooks`]: the external carrier's tracker webhooks: verified, each event applied once.
//! * [`read`]: shipments, labels, signed label downloads, the order's shipping block.
//! * [`email`]: emailing the label when a bank invoice is paid, once.
//! * [`pickups`]: door-pickup options, requests and booking after payment.
//! * [`files`]: the label PDFs in the blob store (and moving older ones out of the database).
//! * [`cancellation`]: a cancelled order's label: voided with the carrier before it is used.

pub mod cancellation;
pub mod email;
pub mod files;
pub mod labels;
pub mod pickups;
pub mod read;
pub mod tracking;
pub mod webhooks;

use crate::carrier::CarrierAdapter;
use crate::config::Settings;
use crate::domain::Address;
use crate::domain::pickup::PickupRules;
use crate::mail::Mailer;
use platform::error::{ApiError, ErrorCode};
use platform::grpc::MeshChannel as Channel;
use platform::idempotency::IdempotencyStore;
use platform::label_links::LabelLinks;
use platform::tokens::TokenIssuer;
use proto::catalog::catalog_service_client::CatalogServiceClient;
use proto::identity::identity_service_client::IdentityServiceClient;
use proto::payments::payments_service_client::PaymentsServiceClient;
use sqlx::PgPool;
use std::sync::Arc;
use uuid::Uuid;

/// The built-in sandbox carrier, which serves a sandbox customer's orders in every mode.
static SANDBOX_CARRIER: CarrierAdapter = CarrierAdapter::Sandbox(crate::carrier::sandbox::SandboxCarrier);

/// The shipping use cases and what they need.
#[derive(Clone)]
pub struct ShippingService {
    pool: PgPool,
    carrier: Arc<CarrierAdapter>,
    catalog: CatalogServiceClient<Channel>,
    /// payments-svc: opens a door pickup's hosted payment.
    payments: PaymentsServiceClient<Channel>,
    identity: IdentityServiceClient<Channel>,
    /// Mints this service's tokens for outgoing calls (acting for the order's customer).
    tokens: TokenIssuer,
    lab_address: Arc<Address>,
    signing_key: Arc<Vec<u8>>,
    label_links: LabelLinks,
    mailer: Mailer,
    pickup: Arc<PickupRules>,
    idempotency: IdempotencyStore,
    /// Label PDFs (`files`).
    files: platform::blobs::BlobStore,
}

impl ShippingService {
    /// Builds the use cases with lazy channels to catalog-svc and the identity API.
    pub fn new(
        pool: PgPool,
        settings: &Settings,
        carrier: CarrierAdapter,
        tokens: TokenIssuer,
        signing_key: Vec<u8>,
        mailer: Mailer,
        files: platform::blobs::BlobStore,
    ) -> anyhow::Result<Self> {
        let tls = settings.common.grpc_tls.as_ref();
        Ok(Self {
            pool,
            carrier: Arc::new(carrier),
            catalog: CatalogServiceClient::new(platform::grpc::lazy_channel(&settings.catalog_addr, tls)?),
            payments: PaymentsServiceClient::new(platform::grpc::lazy_channel(&settings.payments_addr, tls)?),
            identity: IdentityServiceClient::new(platform::grpc::lazy_channel(&settings.identity_addr, tls)?),
            tokens,
            lab_address: Arc::new(settings.lab_address.clone()),
            label_links: LabelLinks::new(
                signing_key.clone(),
                &settings.public_base_url,
                settings.label_url_ttl,
            ),
            signing_key: Arc::new(signing_key),
            mailer,
            pickup: Arc::new(settings.pickup.clone()),
            idempotency: IdempotencyStore::new(crate::SCHEMA),
            files,
        })
    }

    /// The pool (tests inspect the schema through it).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The carrier of a shipment: the built-in sandbox carrier for a sandbox customer's order
    /// (docs/sandbox.md), the deployment's carrier otherwise. A shipment keeps it for its whole
    /// life: label, void, door pickup and scan scripts all go to the same one.
    fn carrier_for(&self, sandbox: bool) -> &CarrierAdapter {
        if sandbox { &SANDBOX_CARRIER } else { &self.carrier }
    }

    /// The customer's name and email, from identity-svc (acting for the customer).
    async fn customer_contact(&self, customer_id: Uuid) -> Result<(String, String), ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::IDENTITY_SVC, Some(customer_id));
        let request = proto::identity::GetCustomerRequest {
            customer_id: customer_id.to_string(),
        };
        let customer = self
            .identity
            .clone()
            .get_customer(platform::grpc::outgoing(request, &token))
            .await
            .map_err(|status| ApiError::from_status(&status))?
            .into_inner()
            .customer
            .ok_or_else(|| ApiError::internal("the identity API answered no customer"))?;
        Ok((customer.name, customer.email))
    }
}

/// The generic 404 of every shipment route (absent and another customer's alike).
pub fn shipment_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "shipment not found")
}

/// The 409 of a label voided because its order was cancelled.
pub fn label_voided(voided: &crate::domain::void::VoidedLabel) -> ApiError {
    ApiError::new(
        ErrorCode::LabelVoided,
        "the order was cancelled and its label voided with the carrier; it can no longer be used",
    )
    .with_details(serde_json::json!({
        "voidedAt": platform::time::rfc3339(voided.voided_at),
        "refundStatus": voided.refund_status.as_str(),
    }))
}

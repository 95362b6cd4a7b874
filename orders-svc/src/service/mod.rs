//! Use cases of orders-svc. Each owns its transactions: placing an order (with the idempotency
//! store, catalog-svc and payments-svc), reading orders, the lab's steps (samples, testing,
//! custody), and applying payments and results events.

mod addons;
mod cancellation;
mod create;
mod lab;
mod payment_events;
mod read;
mod shipment_events;
mod simulate;
pub mod support;
mod transition;

pub use addons::{AddonInvoiceNews, AddonRequest, OPERATION_ADDON};
pub use cancellation::{Decided, OPERATION_CANCEL_REQUEST};
pub use create::OPERATION_CREATE;
pub use lab::{CustodyView, Disposal, LabStep, PublishedCoa, RetractedCoa, SampleView};
pub use payment_events::EventTarget;
pub use read::{ORDERS, OrderView};
pub use shipment_events::ShipmentNews;
pub use simulate::LabScenario;
pub use support::SupportDesk;

use crate::config::Settings;
use platform::grpc::MeshChannel as Channel;
use platform::idempotency::IdempotencyStore;
use platform::label_links::LabelLinks;
use platform::tokens::TokenIssuer;
use proto::catalog::catalog_service_client::CatalogServiceClient;
use proto::payments::payments_service_client::PaymentsServiceClient;
use proto::shipping::shipping_service_client::ShippingServiceClient;
use sqlx::PgPool;
use std::time::Duration;

/// The orders use cases and what they need.
#[derive(Clone)]
pub struct OrdersService {
    pool: PgPool,
    idempotency: IdempotencyStore,
    catalog: CatalogServiceClient<Channel>,
    payments: PaymentsServiceClient<Channel>,
    /// Buys a ship-first order's label while it is placed (PrepareLabel).
    shipping: ShippingServiceClient<Channel>,
    /// How long placing an order waits for its label.
    label_wait: Duration,
    /// Mints this service's tokens for outgoing calls (acting for the order's customer).
    tokens: TokenIssuer,
    /// Signs the label URL of an order's shipping block (shipping-svc's key).
    label_links: LabelLinks,
}

impl OrdersService {
    /// Builds the use cases with lazy channels to catalog-svc, payments-svc and shipping-svc.
    pub fn new(
        pool: PgPool,
        settings: &Settings,
        tokens: TokenIssuer,
        label_links: LabelLinks,
    ) -> anyhow::Result<Self> {
        let idempotency = IdempotencyStore::new(crate::SCHEMA)
            .with_timing(settings.idempotency.lease, settings.idempotency.wait);
        let tls = settings.common.grpc_tls.as_ref();
        Ok(Self {
            pool,
            idempotency,
            catalog: CatalogServiceClient::new(platform::grpc::lazy_channel(&settings.catalog_addr, tls)?),
            payments: PaymentsServiceClient::new(platform::grpc::lazy_channel(&settings.payments_addr, tls)?),
            shipping: ShippingServiceClient::new(platform::grpc::lazy_channel(&settings.shipping_addr, tls)?),
            label_wait: settings.label_wait,
            tokens,
            label_links,
        })
    }
}

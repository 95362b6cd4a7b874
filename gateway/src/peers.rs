//! gRPC clients of the domain services the gateway calls, over lazy channels (a peer that is
//! down makes its calls fail with 503, not the gateway's start), and their health probes (for
//! the internal `CheckPeers` rpc, never for `/api/ready`).

use crate::config::PeerAddrs;
use platform::grpc::MeshChannel as Channel;
use proto::catalog::catalog_service_client::CatalogServiceClient;
use proto::identity::identity_service_client::IdentityServiceClient;
use proto::orders::orders_service_client::OrdersServiceClient;
use proto::orders::support_service_client::SupportServiceClient;
use proto::payments::payments_service_client::PaymentsServiceClient;
use proto::results::notification_service_client::NotificationServiceClient;
use proto::results::registry_service_client::RegistryServiceClient;
use proto::results::results_service_client::ResultsServiceClient;
use proto::shipping::shipping_service_client::ShippingServiceClient;
use proto::webhooks::webhooks_service_client::WebhooksServiceClient;
use std::time::{Duration, Instant};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Clients of every peer; cloning is one reference count (the gateway's state is cloned per
/// request).
#[derive(Clone, Debug)]
pub struct Peers {
    inner: std::sync::Arc<PeerChannels>,
}

#[derive(Debug)]
struct PeerChannels {
    addrs: PeerAddrs,
    identity: Channel,
    catalog: Channel,
    orders: Channel,
    payments: Channel,
    shipping: Channel,
    webhooks: Channel,
    results: Channel,
}

/// A peer's gRPC health as the gateway sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerHealth {
    pub name: &'static str,
    pub address: String,
    pub status: PeerStatus,
    pub latency: Duration,
    /// Why the peer is not serving; empty when it is.
    pub detail: String,
}

/// The answer of a peer's health service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerStatus {
    Serving,
    /// It answered, but not SERVING (its database or Redis is down, or it is draining).
    NotServing,
    /// No answer within the timeout, or no connection.
    Unreachable,
}

impl Peers {
    /// Prepares lazy channels to the peers (over `tls`, the process's own, when it has it); fails
    /// only on a malformed address or one whose scheme does not match `tls`.
    pub fn connect(addrs: &PeerAddrs, tls: Option<&platform::grpc::tls::MeshTls>) -> anyhow::Result<Self> {
        Ok(Self {
            inner: std::sync::Arc::new(PeerChannels {
                addrs: addrs.clone(),
                identity: platform::grpc::lazy_channel(&addrs.identity, tls)?,
                catalog: platform::grpc::lazy_channel(&addrs.catalog, tls)?,
                orders: platform::grpc::lazy_channel(&addrs.orders, tls)?,
                payments: platform::grpc::lazy_channel(&addrs.payments, tls)?,
                shipping: platform::grpc::lazy_channel(&addrs.shipping, tls)?,
                webhooks: platform::grpc::lazy_channel(&addrs.webhooks, tls)?,
                results: platform::grpc::lazy_channel(&addrs.results, tls)?,
            }),
        })
    }

    /// identity-svc, which verifies API keys (`crate::authenticator`).
    pub fn identity(&self) -> IdentityServiceClient<Channel> {
        IdentityServiceClient::new(self.inner.identity.clone())
    }

    pub fn catalog(&self) -> CatalogServiceClient<Channel> {
        CatalogServiceClient::new(self.inner.catalog.clone())
    }

    pub fn orders(&self) -> OrdersServiceClient<Channel> {
        OrdersServiceClient::new(self.inner.orders.clone())
    }

    pub fn payments(&self) -> PaymentsServiceClient<Channel> {
        PaymentsServiceClient::new(self.inner.payments.clone())
    }

    /// orders-svc's support tickets (same channel as [`Peers::orders`]).
    pub fn support(&self) -> SupportServiceClient<Channel> {
        SupportServiceClient::new(self.inner.orders.clone())
    }

    pub fn shipping(&self) -> ShippingServiceClient<Channel> {
        ShippingServiceClient::new(self.inner.shipping.clone())
    }

    pub fn webhooks(&self) -> WebhooksServiceClient<Channel> {
        WebhooksServiceClient::new(self.inner.webhooks.clone())
    }

    pub fn results(&self) -> ResultsServiceClient<Channel> {
        ResultsServiceClient::new(self.inner.results.clone())
    }

    /// results-svc's consents and COA emails (same channel as [`Peers::results`]).
    pub fn notifications(&self) -> NotificationServiceClient<Channel> {
        NotificationServiceClient::new(self.inner.results.clone())
    }

    /// results-svc's instrument and method registries (same channel as [`Peers::results`]).
    pub fn registry(&self) -> RegistryServiceClient<Channel> {
        RegistryServiceClient::new(self.inner.results.clone())
    }

    /// Asks every peer's gRPC health service (overall status) in parallel, each within `timeout`.
    pub async fn health(&self, timeout: Duration) -> Vec<PeerHealth> {
        let probes = [
            ("identity-svc", &self.inner.addrs.identity, &self.inner.identity),
            ("catalog-svc", &self.inner.addrs.catalog, &self.inner.catalog),
            ("orders-svc", &self.inner.addrs.orders, &self.inner.orders),
            ("payments-svc", &self.inner.addrs.payments, &self.inner.payments),
            ("shipping-svc", &self.inner.addrs.shipping, &self.inner.shipping),
            ("webhooks-svc", &self.inner.addrs.webhooks, &self.inner.webhooks),
            ("results-svc", &self.inner.addrs.results, &self.inner.results),
        ]
        .map(|(name, address, channel)| async move {
            let started = Instant::now();
            let (status, detail) = probe(channel.clone(), timeout).await;
            PeerHealth {
                name,
                address: address.clone(),
                status,
                latency: started.elapsed(),
                detail,
            }
        });
        futures::future::join_all(probes).await
    }
}

async fn probe(channel: Channel, timeout: Duration) -> (PeerStatus, String) {
    let mut client = HealthClient::new(channel);
    let check = client.check(HealthCheckRequest {
        service: String::new(),
    });
    match tokio::time::timeout(timeout, check).await {
        Ok(Ok(response)) => {
            let status = response.into_inner().status;
            if status == ServingStatus::Serving as i32 {
                (PeerStatus::Serving, String::new())
            } else {
                let name = ServingStatus::try_from(status).map_or("UNKNOWN", |status| status.as_str_name());
                (PeerStatus::NotServing, format!("health status {name}"))
            }
        }
        Ok(Err(status)) => (PeerStatus::Unreachable, status.message().to_owned()),
        Err(_) => (
            PeerStatus::Unreachable,
            format!("no answer within {} ms", timeout.as_millis()),
        ),
    }
}

//! gRPC clients of the domain services the gateway calls, over lazy channels (a peer that is
//! down makes its calls fail with 503, not the gateway's start), and their health probes.

use crate::config::PeerAddrs;
use proto::catalog::catalog_service_client::CatalogServiceClient;
use proto::orders::orders_service_client::OrdersServiceClient;
use proto::payments::payments_service_client::PaymentsServiceClient;
use proto::webhooks::webhooks_service_client::WebhooksServiceClient;
use std::time::Duration;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Clients of every peer; cloning is cheap (channels are shared).
#[derive(Clone, Debug)]
pub struct Peers {
    catalog: Channel,
    orders: Channel,
    payments: Channel,
    webhooks: Channel,
}

impl Peers {
    /// Prepares lazy channels to the peers; fails only on a malformed address.
    pub fn connect(addrs: &PeerAddrs) -> anyhow::Result<Self> {
        Ok(Self {
            catalog: platform::grpc::lazy_channel(&addrs.catalog)?,
            orders: platform::grpc::lazy_channel(&addrs.orders)?,
            payments: platform::grpc::lazy_channel(&addrs.payments)?,
            webhooks: platform::grpc::lazy_channel(&addrs.webhooks)?,
        })
    }

    pub fn catalog(&self) -> CatalogServiceClient<Channel> {
        CatalogServiceClient::new(self.catalog.clone())
    }

    pub fn orders(&self) -> OrdersServiceClient<Channel> {
        OrdersServiceClient::new(self.orders.clone())
    }

    pub fn payments(&self) -> PaymentsServiceClient<Channel> {
        PaymentsServiceClient::new(self.payments.clone())
    }

    pub fn webhooks(&self) -> WebhooksServiceClient<Channel> {
        WebhooksServiceClient::new(self.webhooks.clone())
    }

    /// Asks every peer's gRPC health service (overall status) in parallel; returns the names of
    /// the peers that did not answer SERVING within `timeout`.
    pub async fn unhealthy(&self, timeout: Duration) -> Vec<&'static str> {
        let probes = [
            ("catalog-svc", &self.catalog),
            ("orders-svc", &self.orders),
            ("payments-svc", &self.payments),
            ("webhooks-svc", &self.webhooks),
        ]
        .map(|(name, channel)| async move { (name, serving(channel.clone(), timeout).await) });
        futures::future::join_all(probes)
            .await
            .into_iter()
            .filter(|(_, serving)| !serving)
            .map(|(name, _)| name)
            .collect()
    }
}

async fn serving(channel: Channel, timeout: Duration) -> bool {
    let mut client = HealthClient::new(channel);
    let check = client.check(HealthCheckRequest {
        service: String::new(),
    });
    match tokio::time::timeout(timeout, check).await {
        Ok(Ok(response)) => response.into_inner().status == ServingStatus::Serving as i32,
        _ => false,
    }
}

//! `labctl health`: asks the gateway's internal `lab.gateway.v1.OperationsService/CheckPeers`
//! for its own database and Redis and every peer service's gRPC health, and prints one entry
//! per component plus `healthy` (true when every component serves).

use crate::Connection;
use crate::client::{request, status_error};
use anyhow::Context;
use proto::gateway::operations_service_client::OperationsServiceClient;
use proto::gateway::{CheckPeersRequest, HealthStatus};
use serde_json::{Value, json};

/// Runs `labctl health`.
pub async fn health(connection: &Connection, token: &str) -> anyhow::Result<Value> {
    let mut client = connection
        .channel(&connection.gateway_addr)
        .await
        .map(OperationsServiceClient::new)
        .with_context(|| {
            format!(
                "cannot reach the gateway's internal API at {}",
                connection.gateway_addr
            )
        })?;
    let response = client
        .check_peers(request(CheckPeersRequest {}, token))
        .await
        .map_err(status_error)?
        .into_inner();
    let mut healthy = true;
    let components: Vec<Value> = response
        .components
        .iter()
        .map(|component| {
            let status = match HealthStatus::try_from(component.status) {
                Ok(HealthStatus::Serving) => "serving",
                Ok(HealthStatus::NotServing) => "not_serving",
                Ok(HealthStatus::Unreachable) => "unreachable",
                _ => "unknown",
            };
            healthy &= status == "serving";
            json!({
                "name": component.name,
                "status": status,
                "address": component.address,
                "latencyMs": component.latency_ms,
                "detail": component.detail,
            })
        })
        .collect();
    Ok(json!({ "healthy": healthy, "components": components }))
}

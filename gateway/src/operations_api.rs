//! Internal gRPC adapter of `lab.gateway.v1.OperationsService` (any operator, [`ACCESS`], enforced
//! by the platform's access layer): the per-peer health that `/api/ready` deliberately leaves
//! out, for `labctl health`.

use crate::peers::{PeerStatus, Peers};
use platform::access::{self, AccessTable};
use proto::gateway as pb;
use proto::gateway::operations_service_server::OperationsService;
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};

/// Who may call each rpc: any operator, whatever their roles.
pub const ACCESS: AccessTable = &[("CheckPeers", access::ANY_OPERATOR)];

/// The tonic adapter.
pub struct OperationsAdapter {
    peers: Peers,
    redis: redis::Client,
    timeout: Duration,
}

impl OperationsAdapter {
    /// Probes `peers` (identity-svc among them) and the gateway's own `redis`, each within
    /// `timeout`.
    pub fn new(peers: Peers, redis: redis::Client, timeout: Duration) -> Self {
        Self {
            peers,
            redis,
            timeout,
        }
    }

    async fn own(&self, name: &str, probe: impl Future<Output = Result<(), String>>) -> pb::ComponentHealth {
        let started = Instant::now();
        let outcome = tokio::time::timeout(self.timeout, probe).await;
        let (status, detail) = match outcome {
            Ok(Ok(())) => (pb::HealthStatus::Serving, String::new()),
            Ok(Err(error)) => (pb::HealthStatus::Unreachable, error),
            Err(_) => (
                pb::HealthStatus::Unreachable,
                format!("no answer within {} ms", self.timeout.as_millis()),
            ),
        };
        component(name, String::new(), status, started.elapsed(), detail)
    }
}

fn component(
    name: &str,
    address: String,
    status: pb::HealthStatus,
    latency: Duration,
    detail: String,
) -> pb::ComponentHealth {
    pb::ComponentHealth {
        name: name.to_owned(),
        address,
        status: status as i32,
        latency_ms: u32::try_from(latency.as_millis()).unwrap_or(u32::MAX),
        detail,
    }
}

#[tonic::async_trait]
impl OperationsService for OperationsAdapter {
    async fn check_peers(
        &self,
        _request: Request<pb::CheckPeersRequest>,
    ) -> Result<Response<pb::CheckPeersResponse>, Status> {
        let redis = self.own("gateway-redis", async {
            let mut connection = self
                .redis
                .get_multiplexed_async_connection()
                .await
                .map_err(|error| error.to_string())?;
            redis::cmd("PING")
                .query_async::<String>(&mut connection)
                .await
                .map(drop)
                .map_err(|error| error.to_string())
        });
        let peers = self.peers.health(self.timeout);
        let (redis, peers) = tokio::join!(redis, peers);
        let mut components = vec![redis];
        components.extend(peers.into_iter().map(|peer| {
            let status = match peer.status {
                PeerStatus::Serving => pb::HealthStatus::Serving,
                PeerStatus::NotServing => pb::HealthStatus::NotServing,
                PeerStatus::Unreachable => pb::HealthStatus::Unreachable,
            };
            component(peer.name, peer.address, status, peer.latency, peer.detail)
        }));
        Ok(Response::new(pb::CheckPeersResponse { components }))
    }
}

//! Announcing revoked API keys to the gateway replicas: identity-svc publishes the public id of
//! every key it revokes on the Redis pub/sub channel
//! `platform::streams::key_revocation_channel` (`<stream prefix>:identity:key-revocations`); every
//! gateway replica subscribes and evicts the key from its cache at once. Pub/sub delivers only
//! to connected subscribers: a gateway whose subscription broke forgets every cached key when it
//! subscribes again, and while Redis is unreachable the gateway's key-cache TTL (at most 5 s)
//! bounds how long a revoked key keeps working.

use std::time::Duration;

/// How long publishing may take before it is given up (and logged).
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// Publishes key revocations.
#[derive(Clone)]
pub struct KeyRevocations {
    redis: redis::aio::ConnectionManager,
    channel: String,
}

impl KeyRevocations {
    pub fn new(redis: redis::aio::ConnectionManager, stream_prefix: &str) -> Self {
        Self {
            redis,
            channel: platform::streams::key_revocation_channel(stream_prefix),
        }
    }

    /// Tells every gateway replica that the key with `public_id` was revoked.
    pub async fn revoked(&self, public_id: &str) {
        let mut redis = self.redis.clone();
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(&self.channel).arg(public_id);
        match tokio::time::timeout(REDIS_TIMEOUT, publish.query_async::<i64>(&mut redis)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "could not publish a key revocation; gateways refuse the key when their cache expires (5 s)")
            }
            Err(_) => tracing::warn!(
                "publishing a key revocation timed out; gateways refuse the key when their cache expires (5 s)"
            ),
        }
    }
}

//! Key revocations reach every gateway replica within a second.
//!
//! identity-svc, which revokes keys (`RevokeApiKey`), publishes the public id of each on the
//! Redis pub/sub channel `<stream prefix>:identity:key-revocations`
//! (`platform::streams::key_revocation_channel`); every replica subscribes and evicts what it
//! hears. Pub/sub delivers only to connected subscribers, so a replica whose subscription broke
//! forgets every cached key when it subscribes again; and while Redis is unreachable the
//! key-cache TTL (at most 5 s) still bounds how long a revoked key keeps working.

use crate::authenticator::Authenticator;
use futures::StreamExt;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long subscribing may take before it is given up (and logged).
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause between subscription attempts while Redis is unreachable.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// A subscription to the revocation channel, opened before the gateway serves.
pub struct Subscriber {
    client: redis::Client,
    channel: String,
    authenticator: Authenticator,
    first: Option<redis::aio::PubSub>,
}

impl Subscriber {
    /// Subscribes now (so that no revocation published after the gateway starts serving is
    /// missed); when Redis is unreachable, [`run`](Self::run) keeps trying.
    pub async fn connect(client: redis::Client, stream_prefix: &str, authenticator: Authenticator) -> Self {
        let channel = platform::streams::key_revocation_channel(stream_prefix);
        let first = match subscribe(&client, &channel).await {
            Ok(pubsub) => Some(pubsub),
            Err(error) => {
                tracing::warn!(%error, "cannot subscribe to key revocations yet; retrying");
                None
            }
        };
        Self {
            client,
            channel,
            authenticator,
            first,
        }
    }

    /// Evicts every revoked key it hears of until `shutdown` fires, subscribing again after a
    /// broken connection (and then forgetting every cached key, as messages may have been lost).
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut warned = false;
        loop {
            let pubsub = match self.first.take() {
                Some(pubsub) => pubsub,
                None => match subscribe(&self.client, &self.channel).await {
                    Ok(pubsub) => {
                        self.authenticator.forget_all();
                        tracing::info!("subscribed to key revocations again; key cache cleared");
                        warned = false;
                        pubsub
                    }
                    Err(error) => {
                        if !warned {
                            tracing::warn!(%error, "cannot subscribe to key revocations; the key-cache TTL bounds revocation until Redis answers");
                            warned = true;
                        }
                        tokio::select! {
                            () = shutdown.cancelled() => return,
                            () = tokio::time::sleep(RETRY_EVERY) => continue,
                        }
                    }
                },
            };
            let mut messages = pubsub.into_on_message();
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    message = messages.next() => match message {
                        Some(message) => match message.get_payload::<String>() {
                            Ok(public_id) => self.authenticator.evict(&public_id),
                            Err(error) => tracing::warn!(%error, "unreadable key revocation message"),
                        },
                        None => {
                            tracing::warn!("key revocation subscription lost; subscribing again");
                            break;
                        }
                    },
                }
            }
        }
    }
}

async fn subscribe(client: &redis::Client, channel: &str) -> anyhow::Result<redis::aio::PubSub> {
    let attempt = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, redis::RedisError>(pubsub)
    };
    Ok(tokio::time::timeout(REDIS_TIMEOUT, attempt)
        .await
        .map_err(|_| anyhow::anyhow!("no answer from Redis within {REDIS_TIMEOUT:?}"))??)
}

//! How a consumer reads (group, streams, timing, batch size, dead-letter caps) and how it
//! connects to Redis.

use crate::streams;
use redis::aio::MultiplexedConnection;
use std::time::Duration;
use uuid::Uuid;

/// Connects to Redis with timeouts suited to blocking stream reads.
pub async fn connect_redis(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let client = crate::db::redis_client(url)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(10)));
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// How a consumer reads.
#[derive(Clone, Debug)]
pub struct ConsumerSettings {
    /// Consumer group (one per subscribing service).
    pub group: String,
    /// This process's name inside the group.
    pub consumer_name: String,
    /// Streams read by the group.
    pub streams: Vec<String>,
    /// How long one XREADGROUP blocks.
    pub block: Duration,
    /// Pending entries idle this long are claimed from their (presumably dead) consumer.
    pub reclaim_idle: Duration,
    /// Deliveries after which an entry is dead-lettered.
    pub max_deliveries: usize,
    /// Entries per read.
    pub batch: usize,
    /// Acknowledge after handling. Only tests turn this off, to act as a consumer that dies
    /// after its transaction committed but before `XACK`.
    pub acknowledge: bool,
    /// Caps of the dead-letter streams this consumer writes (and when to warn).
    pub caps: streams::StreamCaps,
}

impl ConsumerSettings {
    /// Defaults for `group` reading `streams`, with a unique consumer name.
    pub fn new(group: &str, streams: Vec<String>) -> Self {
        Self {
            group: group.to_owned(),
            consumer_name: format!("{group}-{}", Uuid::new_v4().simple()),
            streams,
            block: Duration::from_secs(2),
            reclaim_idle: Duration::from_secs(30),
            max_deliveries: 10,
            batch: 64,
            acknowledge: true,
            caps: streams::StreamCaps::from_env(),
        }
    }

    /// Sets how long pending entries idle before reclaim and how long a read blocks.
    pub fn with_timing(mut self, reclaim_idle: Duration, block: Duration) -> Self {
        self.reclaim_idle = reclaim_idle;
        self.block = block;
        self
    }
}

//! The operator revocation list: the staff tokens that stop working before they expire.
//!
//! identity-svc owns operators. Disabling one revokes its id; rotating a credential revokes the
//! old credential's public id. identity-svc records each revocation in its database, writes it
//! to the Redis hash `<prefix>:identity:staff-revocations` (field `operator:<uuid>` or
//! `credential:<public-id>`, value the unix second of the revocation) and publishes
//! `<field> <second>` on the channel of the same name. Every process that verifies staff tokens
//! keeps a copy ([`StaffRevocations`], attached to its `TokenVerifier`): in each process but
//! identity-svc, the gateway included, a [`Watcher`] fills it with the whole hash at start and
//! every [`REFRESH_EVERY`], and with each published entry as it arrives; identity-svc fills its
//! own from its database. A staff token is refused when its operator id or its credential is on
//! the list and it was issued no later than [`LEEWAY_SECONDS`] after the revocation (clock skew).
//!
//! The bound: a revoked token stops working at once at the identity-svc replica that revoked it,
//! within [`REFRESH_EVERY`] at the other identity-svc replicas, within about a second at the
//! other processes (pub/sub), within [`REFRESH_EVERY`] when a message was lost. identity-svc
//! writes every revocation of the last [`ENTRY_LIFETIME`] from its database to the hash again
//! every [`REFRESH_EVERY`], so one it could not write at the time (Redis down, Redis restarted
//! empty) arrives that long after Redis answers again. A process whose copy has not been read
//! from Redis for [`STALE_AFTER`] refuses every staff token (`service_unavailable`) until it reads
//! it again: a revoked operator never keeps working through a Redis outage.

use super::{LEEWAY_SECONDS, STAFF_TOKEN_TTL};
use crate::error::{ApiError, ErrorCode};
use crate::principal::Principal;
use futures::{Stream, StreamExt};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How often every process reads the whole list, and identity-svc writes it again.
pub const REFRESH_EVERY: Duration = Duration::from_secs(2);
/// Age of a process's copy beyond which it refuses every staff token.
pub const STALE_AFTER: Duration = Duration::from_secs(10);
/// How long an entry matters: a token issued up to the skew after the revocation has expired
/// (with the skew) by then.
pub const ENTRY_LIFETIME: Duration = Duration::from_secs(STAFF_TOKEN_TTL.as_secs() + 60);
/// How long one Redis command may take.
const REDIS_TIMEOUT: Duration = Duration::from_secs(1);

/// The Redis hash, and the pub/sub channel, of a deployment's staff revocations: under
/// `<prefix>:identity:`, the namespace of identity-svc, their only writer (the gateway's Redis
/// user may write its own `<prefix>:gateway:*` keys, and must not be able to edit this list).
pub fn key(stream_prefix: &str) -> String {
    format!("{stream_prefix}:identity:staff-revocations")
}

/// What a revocation names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Revoked {
    /// Every token of the operator (disabled).
    Operator(Uuid),
    /// Every token issued for the credential with this public id (rotated).
    Credential(String),
}

/// One revocation: what, and when (unix seconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revocation {
    pub revoked: Revoked,
    pub at: u64,
}

impl Revocation {
    /// The hash field: `operator:<uuid>` or `credential:<public-id>`.
    pub fn field(&self) -> String {
        match &self.revoked {
            Revoked::Operator(id) => format!("operator:{id}"),
            Revoked::Credential(public_id) => format!("credential:{public_id}"),
        }
    }

    /// Reads a hash field and its value.
    pub fn parse(field: &str, value: &str) -> Option<Self> {
        let at = value.trim().parse().ok()?;
        let revoked = match field.split_once(':')? {
            ("operator", id) => Revoked::Operator(Uuid::parse_str(id).ok()?),
            ("credential", public_id) if !public_id.is_empty() => Revoked::Credential(public_id.to_owned()),
            _ => return None,
        };
        Some(Self { revoked, at })
    }

    /// The pub/sub message: `<field> <second>`.
    pub fn message(&self) -> String {
        format!("{} {}", self.field(), self.at)
    }

    /// Reads a pub/sub message.
    pub fn parse_message(message: &str) -> Option<Self> {
        let (field, value) = message.split_once(' ')?;
        Self::parse(field, value)
    }
}

fn unix_now() -> u64 {
    super::unix_now()
}

#[derive(Debug, Default)]
struct State {
    /// Revoked entries and the second of their revocation (the latest, when repeated).
    entries: HashMap<Revoked, u64>,
    /// When the whole list was last read from Redis (never: refuse staff tokens).
    read_at: Option<Instant>,
}

/// A process's copy of the revocation list.
#[derive(Clone, Debug, Default)]
pub struct StaffRevocations {
    state: Arc<RwLock<State>>,
}

impl StaffRevocations {
    /// An empty list never read: staff tokens are refused until a [`Watcher`] reads it.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds one revocation (published, or announced by this process).
    pub fn insert(&self, revocation: Revocation) {
        let mut state = self.write();
        let at = state.entries.entry(revocation.revoked).or_insert(revocation.at);
        *at = (*at).max(revocation.at);
    }

    /// Merges the whole list as read from Redis, drops what no longer matters and notes that
    /// the list is current.
    pub fn merge_read(&self, revocations: impl IntoIterator<Item = Revocation>) {
        let oldest = unix_now().saturating_sub(ENTRY_LIFETIME.as_secs());
        let mut state = self.write();
        for revocation in revocations {
            let at = state.entries.entry(revocation.revoked).or_insert(revocation.at);
            *at = (*at).max(revocation.at);
        }
        state.entries.retain(|_, at| *at >= oldest);
        state.read_at = Some(Instant::now());
    }

    /// Refuses a staff token of `principal` issued at `issued_at` (unix seconds) when its
    /// operator or credential was revoked since, or when the list is out of date.
    pub fn check(&self, principal: &Principal, issued_at: u64) -> Result<(), ApiError> {
        let state = self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state
            .read_at
            .is_none_or(|read_at| read_at.elapsed() > STALE_AFTER)
        {
            return Err(ApiError::new(
                ErrorCode::ServiceUnavailable,
                "staff tokens are refused while the operator revocation list cannot be read; retry shortly",
            ));
        }
        let revoked_since = |revoked: Revoked| {
            state
                .entries
                .get(&revoked)
                .is_some_and(|at| issued_at <= at + LEEWAY_SECONDS)
        };
        let operator = principal
            .operator_id
            .is_some_and(|id| revoked_since(Revoked::Operator(id)));
        let credential = principal
            .credential_id
            .as_ref()
            .is_some_and(|public_id| revoked_since(Revoked::Credential(public_id.clone())));
        if operator || credential {
            tracing::info!(operator = %principal.subject, operator_id = ?principal.operator_id, "a revoked staff token was refused");
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "the staff token was revoked (operator disabled or credential rotated)",
            ));
        }
        Ok(())
    }
}

/// Writes `revocations` to the hash and publishes each one (identity-svc): HSET, then PUBLISH.
pub async fn publish(
    redis: &mut (impl redis::aio::ConnectionLike + Send),
    stream_prefix: &str,
    revocations: &[Revocation],
) -> anyhow::Result<()> {
    if revocations.is_empty() {
        return Ok(());
    }
    let key = key(stream_prefix);
    let mut pipe = redis::pipe();
    for revocation in revocations {
        pipe.cmd("HSET")
            .arg(&key)
            .arg(revocation.field())
            .arg(revocation.at)
            .ignore();
        pipe.cmd("PUBLISH").arg(&key).arg(revocation.message()).ignore();
    }
    tokio::time::timeout(REDIS_TIMEOUT, pipe.query_async::<()>(redis))
        .await
        .map_err(|_| anyhow::anyhow!("no answer from Redis within {REDIS_TIMEOUT:?}"))??;
    Ok(())
}

/// Writes the whole list again (identity-svc, from its database) and deletes the fields that no
/// longer matter.
pub async fn rewrite(
    redis: &mut (impl redis::aio::ConnectionLike + Send),
    stream_prefix: &str,
    revocations: &[Revocation],
) -> anyhow::Result<()> {
    let key = key(stream_prefix);
    let attempt = async {
        let stored: HashMap<String, String> = redis::cmd("HGETALL").arg(&key).query_async(redis).await?;
        let oldest = unix_now().saturating_sub(ENTRY_LIFETIME.as_secs());
        let mut pipe = redis::pipe();
        let mut changes = 0;
        for (field, value) in &stored {
            if Revocation::parse(field, value).is_none_or(|revocation| revocation.at < oldest) {
                pipe.cmd("HDEL").arg(&key).arg(field).ignore();
                changes += 1;
            }
        }
        for revocation in revocations.iter().filter(|revocation| revocation.at >= oldest) {
            let field = revocation.field();
            if stored
                .get(&field)
                .is_none_or(|value| value.parse::<u64>().ok() < Some(revocation.at))
            {
                pipe.cmd("HSET").arg(&key).arg(field).arg(revocation.at).ignore();
                changes += 1;
            }
        }
        // Nothing to change is nothing to send (Redis refuses an empty pipeline).
        if changes == 0 {
            return Ok(());
        }
        pipe.query_async::<()>(redis).await
    };
    tokio::time::timeout(REDIS_TIMEOUT, attempt)
        .await
        .map_err(|_| anyhow::anyhow!("no answer from Redis within {REDIS_TIMEOUT:?}"))??;
    Ok(())
}

type Messages = Pin<Box<dyn Stream<Item = redis::Msg> + Send>>;

/// Keeps one process's [`StaffRevocations`] current from Redis.
pub struct Watcher {
    client: redis::Client,
    key: String,
    list: StaffRevocations,
    connection: Option<redis::aio::MultiplexedConnection>,
    /// Whether the last read failed (to log an outage once, and its end).
    failing: bool,
}

impl Watcher {
    /// A watcher of the deployment `stream_prefix` filling `list`.
    pub fn new(client: redis::Client, stream_prefix: &str, list: StaffRevocations) -> Self {
        Self {
            client,
            key: key(stream_prefix),
            list,
            connection: None,
            failing: false,
        }
    }

    /// Reads the whole list once; false (logged once per outage) when Redis did not answer.
    pub async fn refresh(&mut self) -> bool {
        match self.read().await {
            Ok(revocations) => {
                self.list.merge_read(revocations);
                if std::mem::take(&mut self.failing) {
                    tracing::info!("the operator revocation list is readable again");
                }
                true
            }
            Err(error) => {
                self.connection = None;
                if !std::mem::replace(&mut self.failing, true) {
                    tracing::warn!(%error, "cannot read the operator revocation list; staff tokens are refused once it is {STALE_AFTER:?} old");
                }
                false
            }
        }
    }

    async fn read(&mut self) -> anyhow::Result<Vec<Revocation>> {
        let attempt = async {
            let mut connection = match self.connection.take() {
                Some(connection) => connection,
                None => self.client.get_multiplexed_async_connection().await?,
            };
            let stored = redis::cmd("HGETALL")
                .arg(&self.key)
                .query_async::<HashMap<String, String>>(&mut connection)
                .await?;
            self.connection = Some(connection);
            Ok::<_, redis::RedisError>(stored)
        };
        let stored = tokio::time::timeout(REDIS_TIMEOUT, attempt)
            .await
            .map_err(|_| anyhow::anyhow!("no answer from Redis within {REDIS_TIMEOUT:?}"))??;
        Ok(stored
            .iter()
            .filter_map(|(field, value)| Revocation::parse(field, value))
            .collect())
    }

    async fn subscribe(&self) -> anyhow::Result<Messages> {
        let attempt = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(&self.key).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = tokio::time::timeout(REDIS_TIMEOUT, attempt)
            .await
            .map_err(|_| anyhow::anyhow!("no answer from Redis within {REDIS_TIMEOUT:?}"))??;
        Ok(Box::pin(pubsub.into_on_message()))
    }

    /// Until `shutdown` fires: subscribes to the channel (again after a broken subscription,
    /// then reading the whole list, as messages may have been lost), applies each published
    /// revocation, and reads the whole list every [`REFRESH_EVERY`].
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut messages: Option<Messages> = None;
        let mut every = tokio::time::interval(REFRESH_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if messages.is_none() {
                match self.subscribe().await {
                    Ok(subscribed) => {
                        messages = Some(subscribed);
                        self.refresh().await;
                    }
                    Err(error) => tracing::debug!(%error, "cannot subscribe to operator revocations yet"),
                }
            }
            let next = async {
                match messages.as_mut() {
                    Some(stream) => stream.next().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => {
                    self.refresh().await;
                }
                message = next => match message {
                    Some(message) => match message.get_payload::<String>().ok().as_deref().and_then(Revocation::parse_message) {
                        Some(revocation) => self.list.insert(revocation),
                        None => tracing::warn!("unreadable operator revocation message"),
                    },
                    None => {
                        tracing::warn!("operator revocation subscription lost; subscribing again");
                        messages = None;
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staff(operator_id: Uuid, credential: &str) -> Principal {
        Principal::staff("alice", operator_id, Some(credential.into()), vec![])
    }

    #[tokio::test]
    async fn rewriting_the_list_into_redis_keeps_it_and_succeeds_when_nothing_changed() {
        let client = redis::Client::open(
            crate::config::env_var("TEST_REDIS_URL").unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned()),
        )
        .unwrap();
        let mut redis = client.get_multiplexed_async_connection().await.unwrap();
        let prefix = format!("test-{}", Uuid::new_v4().simple());
        // An empty list over an empty hash: nothing to send, and no error.
        rewrite(&mut redis, &prefix, &[]).await.unwrap();
        let revocation = Revocation {
            revoked: Revoked::Operator(Uuid::now_v7()),
            at: unix_now(),
        };
        rewrite(&mut redis, &prefix, std::slice::from_ref(&revocation))
            .await
            .unwrap();
        // The same list again changes nothing, and is no error either.
        rewrite(&mut redis, &prefix, std::slice::from_ref(&revocation))
            .await
            .unwrap();
        let stored: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(key(&prefix))
            .query_async(&mut redis)
            .await
            .unwrap();
        assert_eq!(stored.get(&revocation.field()), Some(&revocation.at.to_string()));
        let _: () = redis::cmd("DEL")
            .arg(key(&prefix))
            .query_async(&mut redis)
            .await
            .unwrap();
    }

    #[test]
    fn fields_and_messages_read_back() {
        let operator = Revocation {
            revoked: Revoked::Operator(Uuid::nil()),
            at: 42,
        };
        assert_eq!(Revocation::parse(&operator.field(), "42"), Some(operator.clone()));
        assert_eq!(Revocation::parse_message(&operator.message()), Some(operator));
        let credential = Revocation {
            revoked: Revoked::Credential("abc".into()),
            at: 7,
        };
        assert_eq!(Revocation::parse_message(&credential.message()), Some(credential));
        assert_eq!(Revocation::parse("operator:not-a-uuid", "1"), None);
        assert_eq!(Revocation::parse("credential:", "1"), None);
        assert_eq!(Revocation::parse("key:x", "1"), None);
    }

    #[test]
    fn a_list_never_read_or_out_of_date_refuses_every_staff_token() {
        let list = StaffRevocations::new();
        let error = list.check(&staff(Uuid::now_v7(), "c1"), unix_now()).unwrap_err();
        assert_eq!(error.code, ErrorCode::ServiceUnavailable);
        list.merge_read([]);
        assert!(list.check(&staff(Uuid::now_v7(), "c1"), unix_now()).is_ok());
        list.write().read_at = Instant::now().checked_sub(STALE_AFTER + Duration::from_secs(1));
        assert!(list.check(&staff(Uuid::now_v7(), "c1"), unix_now()).is_err());
    }

    #[test]
    fn tokens_of_a_revoked_operator_or_credential_issued_before_the_revocation_are_refused() {
        let list = StaffRevocations::new();
        list.merge_read([]);
        let now = unix_now();
        let (disabled, rotated, other) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        list.insert(Revocation {
            revoked: Revoked::Operator(disabled),
            at: now,
        });
        list.insert(Revocation {
            revoked: Revoked::Credential("old".into()),
            at: now,
        });
        let refused = list.check(&staff(disabled, "any"), now - 100).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Unauthenticated);
        assert!(list.check(&staff(rotated, "old"), now - 1).is_err());
        assert!(
            list.check(&staff(rotated, "new"), now).is_ok(),
            "the new credential works"
        );
        assert!(list.check(&staff(other, "x"), now - 1).is_ok());
        // Issued well after the revocation (an operator enabled again): accepted.
        let later = now + LEEWAY_SECONDS + 1;
        assert!(list.check(&staff(disabled, "any"), later).is_ok());
    }

    #[test]
    fn entries_that_no_longer_matter_are_dropped_when_the_list_is_read() {
        let list = StaffRevocations::new();
        let ancient = unix_now() - ENTRY_LIFETIME.as_secs() - 1;
        let id = Uuid::now_v7();
        list.insert(Revocation {
            revoked: Revoked::Operator(id),
            at: ancient,
        });
        list.merge_read([]);
        assert!(list.write().entries.is_empty());
    }
}

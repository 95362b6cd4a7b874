//! The per-key limit shared by every gateway replica: one GCRA bucket per key in Redis, from
//! which each replica *leases* small batches of tokens and spends them locally.
//!
//! * Request path: a mutex and a counter while the replica holds tokens of the key. The next
//!   lease is asked for in the background when a quarter of the current one is left (one
//!   `EVALSHA` under `<prefix>:gateway:ratelimit:<key id>`, on Redis's own clock when the ACL
//!   allows `TIME`, else the replicas' clocks), so a busy key's requests do not wait for Redis;
//!   only a key whose tokens ran out (or expired) waits for its one lease request in flight.
//! * Lease size: what the replica spent of the key in the last [`LEASE_LIFETIME`], between 1 and
//!   a quarter of the burst; a lease expires after [`LEASE_LIFETIME`] and unused tokens are
//!   dropped (a lease that arrives while tokens are left adds to them and renews the expiry). So,
//!   while Redis answers, the replicas together never admit more than the GCRA bound stretched by
//!   one lease lifetime (burst + rate × (window + 0.25 s)), and a key can be refused early by at
//!   most `burst / 2` tokens held idle per replica (a lease and the rest of the one before) for at
//!   most 0.25 s.
//! * A refusal is remembered until a token can exist again, so a key hammering past its limit
//!   costs no Redis traffic.
//! * Redis unavailable (error or no answer within [`REDIS_TIMEOUT`]): the gateway fails open to
//!   a per-process GCRA with the same policy for [`REDIS_RETRY_AFTER`], logging a warning; N
//!   replicas then admit up to N times the limit until Redis is back.

use super::local::LocalLimiter;
use super::{Decision, Policy};
use hashlink::LruCache;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use uuid::Uuid;

/// How long leased tokens stay valid in a replica.
pub const LEASE_LIFETIME: Duration = Duration::from_millis(250);
/// Longest wait for Redis before failing open.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(250);
/// How long the replica limits alone after Redis failed, before trying Redis again.
pub const REDIS_RETRY_AFTER: Duration = Duration::from_secs(1);
/// Keys whose lease state a replica remembers at most.
const KEY_CAPACITY: usize = 100_000;

/// The lease script (its arguments and answer are described at its top).
const LEASE_SCRIPT: &str = include_str!("lease.lua");
/// The next lease is asked for when this share of the current one is left (1/4).
const RENEW_AT_DIVISOR: u32 = 4;

/// What a replica knows of one key.
struct KeyState {
    tokens: u32,
    expires: Instant,
    /// Tokens the shared bucket had left after the last lease.
    shared_remaining: u32,
    /// When the shared bucket is full again, as of the last lease.
    full_at: Instant,
    refused_until: Option<Instant>,
    /// A lease request in flight; requests of the key wait for it.
    pending: Option<Arc<Notify>>,
    last_size: u32,
    last_at: Instant,
}

impl KeyState {
    fn new(now: Instant) -> Self {
        Self {
            tokens: 0,
            expires: now,
            shared_remaining: 0,
            full_at: now,
            refused_until: None,
            pending: None,
            last_size: 0,
            last_at: now,
        }
    }

    /// Tokens to ask for: what was spent of the last lease, scaled to one lease lifetime.
    fn wanted(&self, now: Instant, cap: u32) -> u32 {
        if self.last_size == 0 {
            return 1;
        }
        let spent = u64::from(self.last_size.saturating_sub(self.tokens));
        let elapsed = now
            .saturating_duration_since(self.last_at)
            .max(Duration::from_millis(1));
        let per_lifetime = u128::from(spent) * LEASE_LIFETIME.as_nanos() / elapsed.as_nanos();
        u32::try_from(per_lifetime).unwrap_or(u32::MAX).clamp(1, cap)
    }
}

/// Answer of one lease request.
enum Lease {
    Granted {
        tokens: u32,
        remaining: u32,
        full_in: Duration,
    },
    Refused {
        wait: Duration,
        full_in: Duration,
    },
    Unavailable,
}

/// The shared per-key limiter; cheap to clone.
#[derive(Clone)]
pub struct SharedLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Policy,
    /// The lease script, sent by its SHA-1 (`EVALSHA`, loaded on first use).
    script: redis::Script,
    redis: redis::aio::ConnectionManager,
    /// Redis key prefix: `<stream prefix>:gateway:ratelimit:` (the gateway's Redis user may touch
    /// only `<stream prefix>:gateway:*`).
    prefix: String,
    keys: Mutex<LruCache<Uuid, KeyState>>,
    /// Used while Redis is unavailable.
    fallback: LocalLimiter<Uuid>,
    /// Redis is not asked again before this instant.
    degraded_until: Mutex<Option<Instant>>,
    redis_calls: AtomicU64,
}

impl SharedLimiter {
    /// A limiter with `policy`, keeping its buckets in Redis under `<stream_prefix>:gateway:ratelimit:`.
    pub fn new(policy: Policy, redis: redis::aio::ConnectionManager, stream_prefix: &str) -> Self {
        let fallback = LocalLimiter::new(policy.clone(), KEY_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                policy,
                script: redis::Script::new(LEASE_SCRIPT),
                redis,
                prefix: format!("{stream_prefix}:gateway:ratelimit:"),
                keys: Mutex::new(LruCache::new(KEY_CAPACITY)),
                fallback,
                degraded_until: Mutex::new(None),
                redis_calls: AtomicU64::new(0),
            }),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// Lease requests sent to Redis so far (benchmarks report the amortization).
    pub fn redis_calls(&self) -> u64 {
        self.inner.redis_calls.load(Ordering::Relaxed)
    }

    /// Admits one request of `key`, or says how long to wait.
    pub async fn check(&self, key: Uuid) -> Decision {
        loop {
            let now = Instant::now();
            let notified = {
                let mut keys = lock(&self.inner.keys);
                if keys.get_mut(&key).is_none() {
                    keys.insert(key, KeyState::new(now));
                }
                let Some(state) = keys.get_mut(&key) else {
                    unreachable!("the state was just inserted")
                };
                if state.tokens > 0 && now < state.expires {
                    state.tokens -= 1;
                    let low = state.tokens <= state.last_size / RENEW_AT_DIVISOR;
                    if low && state.pending.is_none() && state.refused_until.is_none() {
                        // Ask for the next lease now, so that nobody waits when this one runs out.
                        let pending = Arc::new(Notify::new());
                        let wanted = state.wanted(now, self.lease_cap());
                        state.pending = Some(Arc::clone(&pending));
                        tokio::spawn(self.clone().lease(key, wanted, pending));
                    }
                    return Decision::Allowed {
                        remaining: state.tokens.saturating_add(state.shared_remaining),
                        reset: state.full_at.saturating_duration_since(now),
                    };
                }
                if let Some(until) = state.refused_until.filter(|until| now < *until) {
                    return Decision::Limited {
                        retry_after: until - now,
                        reset: state.full_at.saturating_duration_since(now),
                    };
                }
                if self.degraded(now) {
                    drop(keys);
                    return self.inner.fallback.check(key);
                }
                match &state.pending {
                    Some(pending) => Arc::clone(pending).notified_owned(),
                    None => {
                        let pending = Arc::new(Notify::new());
                        let notified = Arc::clone(&pending).notified_owned();
                        let wanted = state.wanted(now, self.lease_cap());
                        state.pending = Some(Arc::clone(&pending));
                        // A task of its own: a request that goes away cannot strand the others.
                        tokio::spawn(self.clone().lease(key, wanted, pending));
                        notified
                    }
                }
            };
            notified.await;
        }
    }

    /// The most tokens one lease asks for: a quarter of the burst.
    fn lease_cap(&self) -> u32 {
        (self.inner.policy.settings.burst / 4).max(1)
    }

    /// Leases tokens from Redis and publishes the outcome to the waiting requests.
    async fn lease(self, key: Uuid, wanted: u32, pending: Arc<Notify>) {
        let answer = self.ask_redis(key, wanted).await;
        let now = Instant::now();
        {
            let mut keys = lock(&self.inner.keys);
            if let Some(state) = keys.get_mut(&key) {
                if state.pending.as_ref().is_some_and(|p| Arc::ptr_eq(p, &pending)) {
                    state.pending = None;
                }
                match answer {
                    Lease::Granted {
                        tokens,
                        remaining,
                        full_in,
                    } => {
                        // Tokens left of the previous lease (a renewal asked for early) stay.
                        let left = if now < state.expires { state.tokens } else { 0 };
                        state.tokens = left.saturating_add(tokens);
                        state.expires = now + LEASE_LIFETIME;
                        state.shared_remaining = remaining;
                        state.full_at = now + full_in;
                        state.refused_until = None;
                        state.last_size = tokens;
                        state.last_at = now;
                    }
                    Lease::Refused { wait, full_in } => {
                        // Tokens already leased stay usable; none come after them until `wait`.
                        state.shared_remaining = 0;
                        state.full_at = now + full_in;
                        state.refused_until = Some(now + wait);
                    }
                    Lease::Unavailable => {}
                }
            }
        }
        pending.notify_waiters();
    }

    async fn ask_redis(&self, key: Uuid, wanted: u32) -> Lease {
        self.inner.redis_calls.fetch_add(1, Ordering::Relaxed);
        let micros = |duration: Duration| u64::try_from(duration.as_micros()).unwrap_or(u64::MAX).max(1);
        let wall_clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut invocation = self.inner.script.key(format!("{}{key}", self.inner.prefix));
        invocation
            .arg(micros(self.inner.policy.interval))
            .arg(micros(self.inner.policy.tolerance))
            .arg(wanted)
            .arg(micros(wall_clock));
        let mut redis = self.inner.redis.clone();
        let answer = tokio::time::timeout(
            REDIS_TIMEOUT,
            invocation.invoke_async::<(u64, u64, u64)>(&mut redis),
        )
        .await;
        let (granted, second, full_in) = match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return self.degrade(&error.to_string()),
            Err(_) => return self.degrade("no answer in time"),
        };
        self.recover();
        let full_in = Duration::from_micros(full_in);
        if granted == 0 {
            Lease::Refused {
                wait: Duration::from_micros(second.max(1)),
                full_in,
            }
        } else {
            Lease::Granted {
                tokens: u32::try_from(granted).unwrap_or(u32::MAX),
                remaining: u32::try_from(second).unwrap_or(u32::MAX),
                full_in,
            }
        }
    }

    fn degraded(&self, now: Instant) -> bool {
        lock(&self.inner.degraded_until).is_some_and(|until| now < until)
    }

    fn degrade(&self, cause: &str) -> Lease {
        let mut until = lock(&self.inner.degraded_until);
        if until.is_none() {
            tracing::warn!(
                error = cause,
                "shared rate limiter unavailable (Redis): limiting each key per replica until it answers"
            );
        }
        *until = Some(Instant::now() + REDIS_RETRY_AFTER);
        Lease::Unavailable
    }

    fn recover(&self) {
        if lock(&self.inner.degraded_until).take().is_some() {
            tracing::info!("shared rate limiter available again");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_what_was_spent_in_the_last_lifetime_between_one_and_the_cap() {
        let now = Instant::now();
        let mut state = KeyState::new(now);
        assert_eq!(state.wanted(now, 10), 1);
        // 4 tokens spent in 100 ms: 10 per 250 ms, within the cap.
        state.last_size = 5;
        state.tokens = 1;
        state.last_at = now;
        assert_eq!(state.wanted(now + Duration::from_millis(100), 20), 10);
        assert_eq!(state.wanted(now + Duration::from_millis(100), 6), 6);
        // Nothing spent for a long time: one token at a time.
        state.tokens = 5;
        assert_eq!(state.wanted(now + Duration::from_secs(5), 20), 1);
    }
}

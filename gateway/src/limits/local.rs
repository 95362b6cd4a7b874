//! An in-process GCRA limiter keyed by anything hashable (client addresses, key ids), with a
//! bounded number of keys: the least recently seen key is forgotten first, so a flood from
//! ever-new addresses costs bounded memory (a forgotten key merely starts with a full bucket).

use super::{Decision, Policy};
use hashlink::LruCache;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A keyed GCRA limiter in memory.
pub struct LocalLimiter<K: Hash + Eq> {
    policy: Policy,
    start: Instant,
    /// Theoretical arrival time per key, in nanoseconds since `start`.
    arrivals: Mutex<LruCache<K, u64>>,
}

impl<K: Hash + Eq> LocalLimiter<K> {
    /// A limiter remembering at most `capacity` keys.
    pub fn new(policy: Policy, capacity: usize) -> Self {
        Self {
            policy,
            start: Instant::now(),
            arrivals: Mutex::new(LruCache::new(capacity.max(1))),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Admits one request of `key` now, or says how long to wait.
    pub fn check(&self, key: K) -> Decision {
        self.check_at(key, Instant::now())
    }

    /// Number of keys remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn check_at(&self, key: K, at: Instant) -> Decision {
        let now = nanos(at.saturating_duration_since(self.start));
        let interval = nanos(self.policy.interval);
        let tolerance = nanos(self.policy.tolerance);
        let mut arrivals = self.lock();
        let arrival = arrivals.get(&key).copied().unwrap_or(now).max(now);
        let charged = arrival + interval;
        if charged - now > tolerance {
            return Decision::Limited {
                retry_after: Duration::from_nanos(charged - now - tolerance),
                reset: Duration::from_nanos(arrival - now),
            };
        }
        arrivals.insert(key, charged);
        let remaining = (tolerance - (charged - now)) / interval;
        Decision::Allowed {
            remaining: u32::try_from(remaining).unwrap_or(u32::MAX),
            reset: Duration::from_nanos(charged - now),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<K, u64>> {
        self.arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RateLimitSettings;

    fn limiter(per_second: u32, burst: u32, capacity: usize) -> LocalLimiter<&'static str> {
        LocalLimiter::new(
            Policy::new("test", RateLimitSettings { per_second, burst }),
            capacity,
        )
    }

    #[test]
    fn a_burst_is_admitted_then_requests_wait_for_the_refill() {
        let limiter = limiter(2, 3, 10);
        let start = limiter.start + Duration::from_secs(1);
        let remaining: Vec<Decision> = (0..3).map(|_| limiter.check_at("k", start)).collect();
        assert_eq!(
            remaining[0],
            Decision::Allowed {
                remaining: 2,
                reset: Duration::from_millis(500)
            }
        );
        assert_eq!(
            remaining[2],
            Decision::Allowed {
                remaining: 0,
                reset: Duration::from_millis(1500)
            }
        );
        assert_eq!(
            limiter.check_at("k", start),
            Decision::Limited {
                retry_after: Duration::from_millis(500),
                reset: Duration::from_millis(1500)
            }
        );
        assert!(limiter.check_at("other", start).is_allowed());
        let later = start + Duration::from_millis(500);
        assert!(limiter.check_at("k", later).is_allowed());
        assert!(!limiter.check_at("k", later).is_allowed());
    }

    #[test]
    fn memory_is_bounded_by_forgetting_the_least_recently_seen_key() {
        let limiter = limiter(1, 1, 2);
        let now = Instant::now();
        assert!(limiter.check_at("a", now).is_allowed());
        assert!(limiter.check_at("b", now).is_allowed());
        assert!(limiter.check_at("c", now).is_allowed());
        assert_eq!(limiter.len(), 2);
        // "a" was forgotten, so it starts again with a full bucket; "c" was not.
        assert!(limiter.check_at("a", now).is_allowed());
        assert!(!limiter.check_at("a", now).is_allowed());
    }
}

//! A per-key token bucket in memory: each key gets `burst` tokens that refill at `per_second`;
//! a request without a token is refused with 429 `rate_limited`, `details.retryAfterSeconds`
//! and `Retry-After`. Per process: behind N replicas a key gets N times the rate.

use crate::config::RateLimitSettings;
use platform::error::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bucket count beyond which full (idle) buckets are dropped.
const SWEEP_ABOVE: usize = 10_000;

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// The shared limiter.
#[derive(Clone)]
pub struct RateLimiter {
    settings: RateLimitSettings,
    buckets: Arc<Mutex<HashMap<String, Bucket>>>,
}

impl RateLimiter {
    pub fn new(settings: RateLimitSettings) -> Self {
        Self {
            settings,
            buckets: Arc::default(),
        }
    }

    /// Takes a token for `key`, or returns how long until one is available.
    pub fn acquire(&self, key: &str) -> Result<(), Duration> {
        self.acquire_at(key, Instant::now())
    }

    fn acquire_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let rate = f64::from(self.settings.per_second.max(1));
        let burst = f64::from(self.settings.burst.max(1));
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() > SWEEP_ABOVE {
            buckets.retain(|_, bucket| {
                bucket.tokens + now.duration_since(bucket.updated).as_secs_f64() * rate < burst
            });
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        let refilled = bucket.tokens + now.saturating_duration_since(bucket.updated).as_secs_f64() * rate;
        bucket.tokens = refilled.min(burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }

    /// [`acquire`](Self::acquire) as an API error.
    pub fn check(&self, key: &str) -> Result<(), ApiError> {
        self.acquire(key).map_err(|wait| {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            ApiError::new(ErrorCode::RateLimited, "too many requests for this API key")
                .with_details(serde_json::json!({ "retryAfterSeconds": seconds.max(1) }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_allowed_then_requests_wait_for_the_refill() {
        let limiter = RateLimiter::new(RateLimitSettings {
            per_second: 2,
            burst: 3,
        });
        let start = Instant::now();
        for _ in 0..3 {
            assert!(limiter.acquire_at("k", start).is_ok());
        }
        let wait = limiter.acquire_at("k", start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(limiter.acquire_at("other", start).is_ok());
        assert!(
            limiter
                .acquire_at("k", start + Duration::from_millis(500))
                .is_ok()
        );
        assert!(
            limiter
                .acquire_at("k", start + Duration::from_millis(500))
                .is_err()
        );
    }

    #[test]
    fn a_refusal_carries_retry_after_seconds() {
        let limiter = RateLimiter::new(RateLimitSettings {
            per_second: 1,
            burst: 1,
        });
        limiter.check("k").unwrap();
        let error = limiter.check("k").unwrap_err();
        assert_eq!(error.code, ErrorCode::RateLimited);
        assert_eq!(error.retry_after_seconds(), Some(1));
    }
}

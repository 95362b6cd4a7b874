//! Rate limits of the front door, all GCRA (generic cell rate algorithm: a bucket of `burst`
//! requests refilled at `per_second`, kept as one "theoretical arrival time" per client):
//!
//! * [`local::LocalLimiter`]: in this process, keyed by client address (every request, and
//!   key-store lookups) before authentication, bounded in memory (least recently used out);
//! * [`shared::SharedLimiter`]: per API key, shared by every gateway replica through Redis with
//!   leased token batches, so the request path rarely waits on Redis (see its module);
//! * [`ceiling::LookupCeiling`]: one shared bucket for every public verification lookup, from
//!   any client (a global ceiling on reading the register).
//!
//! A [`Decision`] becomes the IETF `RateLimit-Policy` / `RateLimit` headers
//! (draft-ietf-httpapi-ratelimit-headers) in `http::rate_limit`.

pub mod ceiling;
pub mod local;
pub mod shared;

use crate::config::RateLimitSettings;
use http::HeaderValue;
use std::time::Duration;

/// A named limit as clients see it: `q` requests per `w` seconds.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Policy name in the headers (`per-key`, `per-address`, `key-lookups`).
    pub name: &'static str,
    pub settings: RateLimitSettings,
    /// Time one request "costs": 1 s / per_second.
    pub interval: Duration,
    /// How far ahead of now the bucket may be charged: burst × interval.
    pub tolerance: Duration,
    header: HeaderValue,
}

impl Policy {
    pub fn new(name: &'static str, settings: RateLimitSettings) -> Self {
        let per_second = settings.per_second.max(1);
        let burst = settings.burst.max(1);
        let interval =
            Duration::from_nanos(1_000_000_000 / u64::from(per_second)).max(Duration::from_nanos(1));
        let window = u64::from(burst).div_ceil(u64::from(per_second)).max(1);
        let header = HeaderValue::from_str(&format!("\"{name}\";q={burst};w={window}"))
            .unwrap_or_else(|_| HeaderValue::from_static("\"limit\""));
        Self {
            name,
            settings: RateLimitSettings { per_second, burst },
            interval,
            tolerance: interval * burst,
            header,
        }
    }

    /// The `RateLimit-Policy` value, e.g. `"per-key";q=40;w=2`.
    pub fn header(&self) -> HeaderValue {
        self.header.clone()
    }
}

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Admitted; `remaining` more requests would be admitted now, and the bucket is full
    /// again after `reset`.
    Allowed { remaining: u32, reset: Duration },
    /// Refused; one request will be admitted after `retry_after`, the bucket is full after `reset`.
    Limited { retry_after: Duration, reset: Duration },
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed { .. })
    }
}

/// Whole seconds, rounded up (a header never says 0 when there is something to wait for).
pub fn ceil_seconds(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_advertised_as_its_burst_over_the_time_to_refill_it() {
        let policy = Policy::new(
            "per-key",
            RateLimitSettings {
                per_second: 20,
                burst: 40,
            },
        );
        assert_eq!(policy.header(), "\"per-key\";q=40;w=2");
        assert_eq!(policy.interval, Duration::from_millis(50));
        assert_eq!(policy.tolerance, Duration::from_secs(2));
        let policy = Policy::new(
            "per-address",
            RateLimitSettings {
                per_second: 3,
                burst: 4,
            },
        );
        assert_eq!(policy.header(), "\"per-address\";q=4;w=2");
        assert_eq!(ceil_seconds(Duration::from_millis(1)), 1);
        assert_eq!(ceil_seconds(Duration::ZERO), 0);
    }
}

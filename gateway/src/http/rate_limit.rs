//! Rate-limit decisions on the wire (draft-ietf-httpapi-ratelimit-headers, structured fields):
//!
//! * `RateLimit-Policy: "per-key";q=40;w=2` — the limit: `q` requests per `w` seconds;
//! * `RateLimit: "per-key";r=12;t=1` — `r` requests left now, the quota is whole again in `t` s.
//!
//! Every answer to an authenticated request carries both for its key. A refusal is 429
//! `rate_limited` with `details.retryAfterSeconds` and `details.policy`, `Retry-After`, and the
//! two headers of the limit that refused it (`per-address`, `key-lookups` or `per-key`).

use crate::http::error::ErrorResponse;
use crate::limits::{Decision, Policy, ceil_seconds};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue};
use platform::error::{ApiError, ErrorCode};

/// `RateLimit-Policy`.
pub static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Sets `RateLimit-Policy` and `RateLimit` for `decision` under `policy`.
pub fn set_headers(headers: &mut HeaderMap, policy: &Policy, decision: Decision) {
    let (remaining, reset) = match decision {
        Decision::Allowed { remaining, reset } => (remaining, reset),
        Decision::Limited { reset, .. } => (0, reset),
    };
    let value = format!("\"{}\";r={remaining};t={}", policy.name, ceil_seconds(reset));
    headers.insert(RATELIMIT_POLICY.clone(), policy.header());
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(RATELIMIT.clone(), value);
    }
}

/// The 429 answer of a refusal by `policy`.
pub fn limited(policy: &Policy, decision: Decision, message: &str) -> Response {
    let retry_after = match decision {
        Decision::Limited { retry_after, .. } => ceil_seconds(retry_after).max(1),
        Decision::Allowed { .. } => 1,
    };
    let error = ApiError::new(ErrorCode::RateLimited, message).with_details(serde_json::json!({
        "retryAfterSeconds": retry_after,
        "policy": policy.name,
    }));
    let mut response = ErrorResponse(error).into_response();
    set_headers(response.headers_mut(), policy, decision);
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RateLimitSettings;
    use std::time::Duration;

    #[test]
    fn a_refusal_carries_retry_after_and_both_rate_limit_headers() {
        let policy = Policy::new(
            "per-key",
            RateLimitSettings {
                per_second: 20,
                burst: 40,
            },
        );
        let decision = Decision::Limited {
            retry_after: Duration::from_millis(50),
            reset: Duration::from_millis(1_950),
        };
        let response = limited(&policy, decision, "too many requests for this API key");
        assert_eq!(response.status(), 429);
        let headers = response.headers();
        assert_eq!(headers["retry-after"], "1");
        assert_eq!(headers["ratelimit-policy"], "\"per-key\";q=40;w=2");
        assert_eq!(headers["ratelimit"], "\"per-key\";r=0;t=2");
    }
}

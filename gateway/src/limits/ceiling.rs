//! The global ceiling of the public verification register: every accession that `/verify` and
//! `/verify/batch` (and their MCP tools) look up takes one token of one GCRA bucket shared by
//! every client and every replica (a [`SharedLimiter`] under one fixed key). The per-address
//! limit of the front door bounds one client; this bounds all of them together, so a distributed
//! enumeration of the (sequential, guessable) accession numbers cannot read the register faster
//! than the ceiling, whatever number of addresses it uses.
//!
//! Besides it, each client address (per replica, behind the trusted proxies) has a budget of its
//! own ([`PER_ADDRESS_POLICY`]), charged first: one client cannot spend the whole ceiling and
//! lock everyone else out of verification.
//!
//! A refusal is 429 `rate_limited` with `Retry-After` and `details.policy = "verify-lookups"` (or
//! `"verify-lookups-per-address"`); a batch is charged one token per accession before
//! results-svc is asked, and a batch refused part-way keeps the tokens it took (the ceiling errs
//! on the side of refusing).

use super::local::LocalLimiter;
use super::shared::SharedLimiter;
use super::{Decision, ceil_seconds};
use platform::error::{ApiError, ErrorCode};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Name of the ceiling in refusals.
pub const POLICY: &str = "verify-lookups";
/// Name of the per-address budget in refusals.
pub const PER_ADDRESS_POLICY: &str = "verify-lookups-per-address";
/// The one bucket of the ceiling (no API key has this id: keys are random v4/v7 UUIDs).
const BUCKET: Uuid = Uuid::from_u128(0x7665_7269_6679_0000_8000_0000_0000_0001);

/// The global lookup ceiling of public verification; cheap to clone.
#[derive(Clone)]
pub struct LookupCeiling {
    limiter: SharedLimiter,
    per_address: Arc<LocalLimiter<IpAddr>>,
}

fn limited(message: &str, retry_after: Duration, policy: &str) -> ApiError {
    ApiError::new(ErrorCode::RateLimited, message).with_details(serde_json::json!({
        "retryAfterSeconds": ceil_seconds(retry_after).max(1),
        "policy": policy,
    }))
}

impl LookupCeiling {
    /// The global ceiling `limiter` with the per-address budget `per_address`.
    pub fn new(limiter: SharedLimiter, per_address: LocalLimiter<IpAddr>) -> Self {
        Self {
            limiter,
            per_address: Arc::new(per_address),
        }
    }

    /// Charges `lookups` accessions of `client` to its address's budget, then to the ceiling,
    /// or refuses with 429 `rate_limited`.
    pub async fn charge(&self, client: IpAddr, lookups: usize) -> Result<(), ApiError> {
        let address = crate::client_addr::limit_key(client);
        for _ in 0..lookups {
            if let Decision::Limited { retry_after, .. } = self.per_address.check(address) {
                return Err(limited(
                    "this address verifies too many accessions; retry after Retry-After seconds",
                    retry_after,
                    PER_ADDRESS_POLICY,
                ));
            }
        }
        for _ in 0..lookups {
            if let Decision::Limited { retry_after, .. } = self.limiter.check(BUCKET).await {
                return Err(limited(
                    "public verification is at its global ceiling; retry after Retry-After seconds",
                    retry_after,
                    POLICY,
                ));
            }
        }
        Ok(())
    }
}

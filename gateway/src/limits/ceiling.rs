//! The global ceiling of the public verification register: every accession that `/verify` and
//! `/verify/batch` (and their MCP tools) look up takes one token of one GCRA bucket shared by
//! every client and every replica (a [`SharedLimiter`] under one fixed key). The per-address
//! limit of the front door bounds one client; this bounds all of them together, so a distributed
//! enumeration of the (sequential, guessable) accession numbers cannot read the register faster
//! than the ceiling, whatever number of addresses it uses.
//!
//! A refusal is 429 `rate_limited` with `Retry-After` and `details.policy = "verify-lookups"`;
//! a batch is charged one token per accession before results-svc is asked, and a batch refused
//! part-way keeps the tokens it took (the ceiling errs on the side of refusing).

use super::shared::SharedLimiter;
use super::{Decision, ceil_seconds};
use platform::error::{ApiError, ErrorCode};
use uuid::Uuid;

/// Name of the ceiling in refusals.
pub const POLICY: &str = "verify-lookups";
/// The one bucket of the ceiling (no API key has this id: keys are random v4/v7 UUIDs).
const BUCKET: Uuid = Uuid::from_u128(0x7665_7269_6679_0000_8000_0000_0000_0001);

/// The global lookup ceiling of public verification; cheap to clone.
#[derive(Clone)]
pub struct LookupCeiling {
    limiter: SharedLimiter,
}

impl LookupCeiling {
    pub fn new(limiter: SharedLimiter) -> Self {
        Self { limiter }
    }

    /// Charges `lookups` accessions to the ceiling, or refuses with 429 `rate_limited`.
    pub async fn charge(&self, lookups: usize) -> Result<(), ApiError> {
        for _ in 0..lookups {
            if let Decision::Limited { retry_after, .. } = self.limiter.check(BUCKET).await {
                return Err(ApiError::new(
                    ErrorCode::RateLimited,
                    "public verification is at its global ceiling; retry after Retry-After seconds",
                )
                .with_details(serde_json::json!({
                    "retryAfterSeconds": ceil_seconds(retry_after).max(1),
                    "policy": POLICY,
                })));
            }
        }
        Ok(())
    }
}

//! Deliveries (one event for one endpoint) and their attempts.

use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// State of a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Waiting for its next attempt (or being attempted).
    Pending,
    Succeeded,
    /// Retries exhausted; staff can redeliver.
    Dead,
    /// The endpoint was disabled or deleted.
    Abandoned,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Succeeded => "succeeded",
            Self::Dead => "dead",
            Self::Abandoned => "abandoned",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "succeeded" => Some(Self::Succeeded),
            "dead" => Some(Self::Dead),
            "abandoned" => Some(Self::Abandoned),
            _ => None,
        }
    }

    /// Parses the optional status filter of a listing (400 `invalid_request` on `status`).
    pub fn parse_filter(text: Option<&str>) -> Result<Option<Self>, ApiError> {
        match text.map(str::trim).filter(|text| !text.is_empty()) {
            None => Ok(None),
            Some(text) => Self::parse(text).map(Some).ok_or_else(|| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "status",
                    "status must be one of pending, succeeded, dead, abandoned",
                )
            }),
        }
    }
}

/// Whether an attempt succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    Succeeded,
    Failed,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }
}

/// One recorded attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub attempt_number: i32,
    pub attempted_at: DateTime<Utc>,
    pub status_code: Option<i32>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub outcome: String,
}

/// One event for one endpoint, with its attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: String,
    pub attempt_count: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub attempts: Vec<Attempt>,
}

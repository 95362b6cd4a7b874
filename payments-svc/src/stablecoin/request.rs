//! The stablecoin payment request and its states, modelled on BTCPay Server's invoice states:
//!
//! | Status | BTCPay | Meaning |
//! |---|---|---|
//! | `awaiting_transfer` | New | payable: the exact amount from the expected payer is awaited |
//! | `confirming` | Processing | a matching transfer was observed; its block is not yet finalized, or the providers and the scanner have not yet all seen it there |
//! | `confirmed` | Settled | both providers and the scanner saw it at or below `finalized` with the same block hash |
//! | `expired` | Expired | unpaid when the finalized chain passed the expiry |
//!
//! Wrong amounts, wrong senders, wrong tokens and late or duplicate transfers never change a
//! request: submissions answer them as errors, and the scanner records them for staff
//! (`chain_transfers.disposition`). A reorg returns a `confirming` request to `awaiting_transfer`.

use crate::chain::{ChainAddress, StablecoinAmount};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Status of a payment request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestStatus {
    AwaitingTransfer,
    Confirming,
    Confirmed,
    Expired,
}

impl RequestStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::AwaitingTransfer => "awaiting_transfer",
            RequestStatus::Confirming => "confirming",
            RequestStatus::Confirmed => "confirmed",
            RequestStatus::Expired => "expired",
        }
    }

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "awaiting_transfer" => Some(RequestStatus::AwaitingTransfer),
            "confirming" => Some(RequestStatus::Confirming),
            "confirmed" => Some(RequestStatus::Confirmed),
            "expired" => Some(RequestStatus::Expired),
            _ => None,
        }
    }
}

/// The transfer that pays (or is confirming) a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedTransfer {
    pub id: i64,
    pub tx_hash: String,
    pub log_index: i64,
    pub block_number: i64,
    pub block_hash: String,
    /// The block hash the finalized-log scanner read, once it has seen the log.
    pub scanner_block_hash: Option<String>,
}

/// A stablecoin payment request: pay `amount` of `token` from `payer` to `target` before
/// `expires_at`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaymentRequest {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub invoice_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub chain_id: u64,
    pub token: ChainAddress,
    pub target: ChainAddress,
    pub payer: ChainAddress,
    pub amount: StablecoinAmount,
    pub status: RequestStatus,
    pub expires_at: DateTime<Utc>,
    pub transfer: Option<ObservedTransfer>,
    /// The settlement proof (JSON), once confirmed.
    pub proof: Option<serde_json::Value>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

//! Stablecoin rail shapes: the order's `amount` block (SPEC Order: `amount.atomic`,
//! `amount.decimal`, `amount.referenceAtomic` and the no-rounding notice), the payment request
//! with its state and settlement proof, and the body of `POST /payments/stablecoin/submit`.
//!
//! The service never asks for or accepts a private key and never signs or broadcasts: the payer
//! sends the transfer from their own wallet and submits only the transaction hash.

use super::common::{optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::{orders, payments as pb};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The stablecoin payment request of an order, as issued with it (chain_stablecoin rail):
/// send exactly `decimal` (= `atomic` atomic units) of the token at `tokenAddress` from
/// `payerAddress` to `targetAddress` before `expiresAt`. `POST /payments/prepare` renews an
/// expired request; `GET /payments/stablecoin/{reference}` reads its live state.
#[derive(Serialize, ToSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StablecoinAmount {
    /// The exact amount in atomic units of the six-decimal token: `totalCents × 10^4 +
    /// referenceAtomic`. An integer, never rounded.
    #[schema(example = 123450042)]
    pub atomic: i64,
    /// The same amount with exactly six decimals (a string, so that nothing rounds it).
    #[schema(example = "123.450042")]
    pub decimal: String,
    /// The permanent sub-cent reference (1..9999) that identifies this payment.
    #[schema(example = 42)]
    pub reference_atomic: i64,
    /// The no-rounding notice: send exactly this amount, no fee deducted, from the named wallet.
    pub notice: String,
    /// The chain (1 = the main Ethereum network).
    pub chain_id: u64,
    /// The ERC-20 contract (EIP-55).
    pub token_address: String,
    /// The lab's treasury (EIP-55): the transfer's recipient.
    pub target_address: String,
    /// The self-custodied sender named at order time (EIP-55).
    pub payer_address: String,
    /// Until when the request is payable (15 minutes, like the quote).
    #[serde(serialize_with = "rfc3339_opt")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<orders::StablecoinAmount> for StablecoinAmount {
    fn from(amount: orders::StablecoinAmount) -> Self {
        Self {
            expires_at: optional_time(amount.expires_at.as_ref()),
            atomic: amount.atomic,
            decimal: amount.decimal,
            reference_atomic: amount.reference_atomic,
            notice: amount.notice,
            chain_id: amount.chain_id,
            token_address: amount.token_address,
            target_address: amount.target_address,
            payer_address: amount.payer_address,
        }
    }
}

/// Body of `POST /payments/stablecoin/submit`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitStablecoinRequest {
    /// The order paid: its UUID, order number (`ORD-…`) or invoice number (`INV-…`).
    #[schema(example = "ORD-2026-000042")]
    pub reference: String,
    /// The hash of the transaction the payer broadcast: `0x` and 64 hexadecimal digits.
    #[schema(example = "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060")]
    pub transaction_hash: String,
}

/// The transfer paying (or confirming) a request.
#[derive(Serialize, ToSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StablecoinTransfer {
    pub transaction_hash: String,
    pub log_index: i64,
    pub block_number: i64,
    pub block_hash: String,
}

/// A stablecoin payment request and its state.
#[derive(Serialize, ToSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StablecoinPayment {
    pub id: String,
    pub order_id: String,
    pub order_number: String,
    pub invoice_id: String,
    /// `awaiting_transfer` (send the transfer), `confirming` (a matching transfer was seen;
    /// waiting for the finalized block and for both providers and the scanner to agree),
    /// `confirmed` (settled: the invoice and order are paid) or `expired` (unpaid past
    /// `expiresAt`; `POST /payments/prepare` renews it).
    pub status: String,
    pub amount_cents: i64,
    /// The exact amount to send: `atomic`, `decimal` (six decimals), `referenceAtomic`, the
    /// notice, token, target, payer and expiry.
    pub amount: StablecoinAmount,
    /// The matching transfer once one was observed, else `null`.
    pub transfer: Option<StablecoinTransfer>,
    /// Settlement proof once confirmed, else `null`: `transactionHash`, `logIndex`,
    /// `blockHash`, `blockNumber`, `finalizedBlock`, `tokenAddress`, `fromAddress`, `toAddress`,
    /// `valueAtomic`, `scannerBlockHash`, `confirmedAt` and what each provider answered
    /// (`providers`).
    #[schema(value_type = Option<Object>)]
    pub proof: Option<serde_json::Value>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub confirmed_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
}

single_envelope!(StablecoinPaymentEnvelope, StablecoinPaymentData, stablecoin_payment: StablecoinPayment);

impl TryFrom<pb::StablecoinPayment> for StablecoinPayment {
    type Error = ApiError;

    fn try_from(payment: pb::StablecoinPayment) -> Result<Self, ApiError> {
        let proof = match payment.proof_json.as_deref() {
            Some(json) => Some(
                serde_json::from_str(json)
                    .map_err(|error| ApiError::internal(format!("stablecoin proof is not JSON: {error}")))?,
            ),
            None => None,
        };
        Ok(Self {
            created_at: required_time(payment.created_at.as_ref(), "stablecoin request createdAt")?,
            confirmed_at: optional_time(payment.confirmed_at.as_ref()),
            amount: StablecoinAmount {
                atomic: payment.amount_atomic,
                decimal: payment.amount_decimal,
                reference_atomic: payment.reference_atomic,
                notice: payment.notice,
                chain_id: payment.chain_id,
                token_address: payment.token_address,
                target_address: payment.target_address,
                payer_address: payment.payer_address,
                expires_at: optional_time(payment.expires_at.as_ref()),
            },
            transfer: payment.transfer.map(|transfer| StablecoinTransfer {
                transaction_hash: transfer.transaction_hash,
                log_index: transfer.log_index,
                block_number: transfer.block_number,
                block_hash: transfer.block_hash,
            }),
            proof,
            id: payment.id,
            order_id: payment.order_id,
            order_number: payment.order_number,
            invoice_id: payment.invoice_id,
            status: payment.status,
            amount_cents: payment.amount_cents,
        })
    }
}

//! Payment requests and submissions.
//!
//! Request: invoice of the order (chain_stablecoin rail) → the request it already has, renewed
//! when expired, or a new one with a free reference (the partial unique index settles races) →
//! `payment.requested`. Submit: parse the hash → both providers' chain id (`super::chain_guard`:
//! another chain halts the rail) → read the receipt from both providers (outside any
//! transaction; disagreement, a dead provider or another chain is 503) → examine every log →
//! lock the request → record the log once → `confirming` with `payment.observed` and
//! `payment.confirming`. Confirmation is the scanner's (`super::scanner`).

use super::chain_guard::ChainGuard;
use super::events;
use super::repo::{self, TransferRecord};
use super::request::{PaymentRequest, RequestStatus};
use super::settings::StablecoinSettings;
use crate::OUTBOX;
use crate::chain::amount::{MAX_REFERENCE, MIN_REFERENCE};
use crate::chain::rpc::{ChainReader, ProviderPair};
use crate::chain::transfer::{ExpectedTransfer, Mismatch, TransferLog, examine};
use crate::chain::{ChainAddress, StablecoinAmount};
use crate::domain::{InvoiceReference, InvoiceStatus, PaymentMethod};
use alloy::primitives::{B256, U256};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Attempt, Json};
use rand::Rng;
use sqlx::{PgConnection, PgPool};
use std::sync::Arc;
use uuid::Uuid;

/// How often a new request retries when a concurrent request took its reference.
const REFERENCE_ATTEMPTS: usize = 8;

/// The stablecoin rail over the database and the two providers.
#[derive(Clone, Debug)]
pub struct StablecoinRail {
    pub(super) pool: PgPool,
    pub(super) settings: Arc<StablecoinSettings>,
    pub(super) providers: ProviderPair,
    /// Whether both providers serve the configured chain (shared by the scanner and submissions).
    pub(super) chain_guard: Arc<ChainGuard>,
}

impl StablecoinRail {
    /// The rail with its two providers (nothing is called yet; the chain-mismatch gauge is
    /// exported at 0).
    pub fn new(pool: PgPool, settings: StablecoinSettings) -> anyhow::Result<Self> {
        let [a, b] = &settings.providers;
        let providers = ProviderPair {
            a: ChainReader::connect(&a.name, &a.url, settings.rpc_timeout)?,
            b: ChainReader::connect(&b.name, &b.url, settings.rpc_timeout)?,
        };
        Ok(Self {
            pool,
            chain_guard: Arc::new(ChainGuard::new(settings.chain_id)),
            settings: Arc::new(settings),
            providers,
        })
    }

    /// The rail's settings.
    pub fn settings(&self) -> &StablecoinSettings {
        &self.settings
    }

    /// Issues (or returns) the payment request of the customer's order `order`: the existing
    /// request unless it expired; an expired one is renewed, keeping its reference when free.
    /// `payer` is required for a new request and replaces the payer of a renewed one.
    pub async fn request_payment(
        &self,
        customer_id: Uuid,
        order: &InvoiceReference,
        payer: Option<ChainAddress>,
    ) -> Result<PaymentRequest, ApiError> {
        self.request_payment_on(customer_id, order, payer, false).await
    }

    /// [`Self::request_payment`]; with `from_checkout` the invoice may also be a card checkout
    /// invoice whose hosted page's payer chose "settled stablecoin" (SPEC: the hosted URL is
    /// where the account owner pays by card, saved card, or settled stablecoin).
    pub async fn request_payment_on(
        &self,
        customer_id: Uuid,
        order: &InvoiceReference,
        payer: Option<ChainAddress>,
        from_checkout: bool,
    ) -> Result<PaymentRequest, ApiError> {
        if let Some(payer) = &payer {
            self.check_payer(payer)?;
        }
        let mut conn = self.pool.acquire().await?;
        let invoice = crate::repo::invoices::by_order_reference(&mut conn, customer_id, order)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "order not found"))?;
        drop(conn);
        let card_page = from_checkout && invoice.payment_method == PaymentMethod::CardCheckout;
        if invoice.payment_method != PaymentMethod::ChainStablecoin && !card_page {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "the order is not paid on the stablecoin rail",
            )
            .with_details(serde_json::json!({ "paymentMethod": invoice.payment_method.as_str() })));
        }
        for _ in 0..REFERENCE_ATTEMPTS {
            let mut tx = self.pool.begin().await?;
            let existing = repo::by_invoice(&mut tx, customer_id, invoice.id, true).await?;
            let now = platform::time::now();
            let expires_at = now + chrono::Duration::from_std(self.settings.request_ttl).unwrap_or_default();
            let request = match existing {
                Some(request) if request.status != RequestStatus::Expired => return Ok(request),
                Some(expired) if invoice.status != InvoiceStatus::Open => return Ok(expired),
                Some(expired) => {
                    let payer = payer.unwrap_or(expired.payer);
                    let mut amount = expired.amount;
                    if !repo::renew(&mut tx, expired.id, &payer, &amount, expires_at).await? {
                        amount = self.free_amount(&mut tx, invoice.total).await?;
                        if !repo::renew(&mut tx, expired.id, &payer, &amount, expires_at).await? {
                            continue;
                        }
                    }
                    PaymentRequest {
                        payer,
                        amount,
                        expires_at,
                        status: RequestStatus::AwaitingTransfer,
                        transfer: None,
                        ..expired
                    }
                }
                None => {
                    let payer = payer.ok_or_else(|| {
                        ApiError::field(
                            ErrorCode::InvalidRequest,
                            "expectedPayerAddress",
                            "expectedPayerAddress is required for the stablecoin rail",
                        )
                    })?;
                    if invoice.status != InvoiceStatus::Open {
                        return Err(ApiError::new(ErrorCode::Conflict, "the invoice is not open"));
                    }
                    let request = PaymentRequest {
                        id: Uuid::now_v7(),
                        customer_id,
                        invoice_id: invoice.id,
                        order_id: invoice.order_id,
                        order_number: invoice.order_number.clone(),
                        chain_id: self.settings.chain_id,
                        token: self.settings.token,
                        target: self.settings.treasury,
                        payer,
                        amount: self.free_amount(&mut tx, invoice.total).await?,
                        status: RequestStatus::AwaitingTransfer,
                        expires_at,
                        transfer: None,
                        proof: None,
                        confirmed_at: None,
                        created_at: now,
                    };
                    if !repo::insert_request(&mut tx, &request).await? {
                        // A concurrent call created it, or took the reference: look again.
                        continue;
                    }
                    request
                }
            };
            OUTBOX.enqueue(&mut tx, events::requested(&request)).await?;
            tx.commit().await?;
            return Ok(request);
        }
        Err(ApiError::unavailable(
            "a free payment reference",
            "references kept colliding",
        ))
    }

    /// Refuses a payer that is the lab's own treasury.
    pub fn check_payer(&self, payer: &ChainAddress) -> Result<(), ApiError> {
        if *payer == self.settings.treasury {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "expectedPayerAddress",
                "the payer cannot be the lab's own treasury address",
            ));
        }
        Ok(())
    }

    /// A random free reference for `total` (none held by an open request to the same target).
    async fn free_amount(
        &self,
        conn: &mut PgConnection,
        total: platform::money::Cents,
    ) -> Result<StablecoinAmount, ApiError> {
        let held = repo::held_references(
            conn,
            self.settings.chain_id,
            &self.settings.token,
            &self.settings.treasury,
        )
        .await?;
        let free: Vec<i64> = (MIN_REFERENCE..=MAX_REFERENCE)
            .filter(|reference| !held.contains(reference))
            .collect();
        if free.is_empty() {
            return Err(ApiError::unavailable(
                "a free payment reference",
                "all 9999 references are held",
            ));
        }
        let reference = free[rand::rng().random_range(0..free.len())];
        StablecoinAmount::for_total(total, reference)
    }

    /// The customer's payment request of an order or invoice.
    pub async fn get_request(
        &self,
        customer_id: Uuid,
        reference: &InvoiceReference,
    ) -> Result<PaymentRequest, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let invoice = crate::repo::invoices::by_order_reference(&mut conn, customer_id, reference)
            .await?
            .ok_or_else(request_not_found)?;
        repo::by_invoice(&mut conn, customer_id, invoice.id, false)
            .await?
            .ok_or_else(request_not_found)
    }

    /// Verifies a submitted transaction for the customer's request of `reference` and records the
    /// matching transfer (the request moves to `confirming`). See the module comment.
    pub async fn submit(
        &self,
        customer_id: Uuid,
        reference: &InvoiceReference,
        tx_hash: B256,
        attempt: Option<&Attempt<'_, Json>>,
    ) -> Result<PaymentRequest, ApiError> {
        let request = self.get_request(customer_id, reference).await?;
        let hash_text = format!("{tx_hash:#x}");
        if let Some(transfer) = &request.transfer
            && transfer.tx_hash == hash_text
        {
            return finish(self.pool.begin().await?, attempt, request).await;
        }
        if request.status == RequestStatus::Confirmed {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "the payment request is already paid by another transaction",
            ));
        }
        // Nothing is verified against a provider that serves another chain.
        self.chain_guard.verify(&self.providers).await?;
        let agreed = self.providers.receipt(tx_hash).await?.ok_or_else(|| {
            ApiError::new(
                ErrorCode::TransactionNotFound,
                "neither provider knows a mined transaction with this hash",
            )
        })?;
        let mut conn = self.pool.acquire().await?;
        let applied = repo::applied_log_indexes(&mut conn, request.chain_id, &hash_text, request.id).await?;
        drop(conn);
        let found = examine(
            agreed.receipt.succeeded,
            &agreed.receipt.logs,
            &expected(&request),
            &applied,
        )
        .map_err(|mismatch| mismatch_error(&request, mismatch))?;
        let block = self
            .providers
            .canonical(found.block_number)
            .await?
            .filter(|head| head.hash == found.block_hash)
            .ok_or_else(|| {
                ApiError::from(crate::chain::rpc::ChainError::Disagree {
                    what: "the transaction's block".to_owned(),
                })
            })?;
        let block_time = timestamp(block.timestamp);
        let mut tx = self.pool.begin().await?;
        let locked = repo::lock_by_id(&mut tx, request.id)
            .await?
            .ok_or_else(request_not_found)?;
        let record = TransferRecord {
            chain_id: locked.chain_id,
            log: &found,
            block_timestamp: Some(block_time),
            submitted: true,
            scanner_block_hash: None,
        };
        if block_time > locked.expires_at {
            repo::upsert_transfer(&mut tx, &record, "late", Some(locked.id)).await?;
            tx.commit().await?;
            platform::metrics::record_settlements("stablecoin", "late", 1);
            tracing::warn!(request = %locked.id, tx = %hash_text, "a late stablecoin transfer was recorded for staff");
            return Err(ApiError::new(ErrorCode::PaymentRequestExpired, "the transfer arrived after the payment request expired; it was recorded for staff and not applied")
                .with_details(serde_json::json!({ "expiresAt": platform::time::rfc3339(locked.expires_at), "late": true })));
        }
        if locked
            .transfer
            .as_ref()
            .is_some_and(|transfer| same_log(&found, &transfer.tx_hash, transfer.log_index))
        {
            // The scanner recorded this very log meanwhile.
            return finish(tx, attempt, locked).await;
        }
        match locked.status {
            RequestStatus::Confirming | RequestStatus::Confirmed => {
                repo::upsert_transfer(&mut tx, &record, "duplicate", Some(locked.id)).await?;
                tx.commit().await?;
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    "another transfer already pays this request; this one was recorded for staff",
                ));
            }
            RequestStatus::AwaitingTransfer | RequestStatus::Expired => {}
        }
        let confirmed_by_finalized = self
            .providers
            .finalized()
            .await
            .map(|head| head.number)
            .unwrap_or(0);
        let applied = apply_transfer(&mut tx, &locked, &record, confirmed_by_finalized).await?;
        let answer = finish(tx, attempt, applied).await?;
        platform::metrics::record_settlements("stablecoin", "observed", 1);
        Ok(answer)
    }
}

/// Stores the answer under the key (when there is one) and commits.
async fn finish(
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    attempt: Option<&Attempt<'_, Json>>,
    answer: PaymentRequest,
) -> Result<PaymentRequest, ApiError> {
    if let Some(attempt) = attempt {
        attempt.complete(&mut tx, &answer).await?;
    }
    tx.commit().await?;
    Ok(answer)
}

/// Records `record` as the transfer paying `request` (within the caller's transaction): the
/// request moves to `confirming`; `payment.observed` and `payment.confirming` are emitted.
pub(super) async fn apply_transfer(
    tx: &mut PgConnection,
    request: &PaymentRequest,
    record: &TransferRecord<'_>,
    finalized: u64,
) -> Result<PaymentRequest, ApiError> {
    let stored = repo::upsert_transfer(tx, record, "applied", Some(request.id)).await?;
    if stored.disposition == "applied" && stored.request_id != Some(request.id) {
        return Err(ApiError::new(
            ErrorCode::TransferAlreadyApplied,
            "this transfer log already pays another payment request",
        ));
    }
    if stored.disposition != "applied" || stored.request_id != Some(request.id) {
        repo::set_disposition(tx, stored.id, "applied", Some(request.id)).await?;
    }
    repo::set_status(tx, request.id, RequestStatus::Confirming, Some(stored.id)).await?;
    let now = platform::time::now();
    let hash = format!("{:#x}", record.log.transaction_hash);
    OUTBOX
        .enqueue(tx, events::observed(request, &hash, record.log.block_number, now))
        .await?;
    let confirmations = finalized.saturating_sub(record.log.block_number);
    OUTBOX
        .enqueue(tx, events::confirming(request, &hash, confirmations, now))
        .await?;
    repo::lock_by_id(tx, request.id)
        .await?
        .ok_or_else(request_not_found)
}

/// What `request` expects on chain.
pub(super) fn expected(request: &PaymentRequest) -> ExpectedTransfer {
    ExpectedTransfer {
        token: request.token.0,
        target: request.target.0,
        payer: request.payer.0,
        amount: U256::from(request.amount.atomic.unsigned_abs()),
    }
}

/// A block time as a UTC instant.
pub(super) fn timestamp(seconds: u64) -> DateTime<Utc> {
    DateTime::from_timestamp(i64::try_from(seconds).unwrap_or(i64::MAX), 0)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn request_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "stablecoin payment request not found")
}

/// The documented error of each mismatch.
fn mismatch_error(request: &PaymentRequest, mismatch: Mismatch) -> ApiError {
    let expected = serde_json::json!({ "reason": mismatch.reason(), "expectedAtomic": request.amount.atomic.to_string() });
    let (code, message, extra) = match mismatch {
        Mismatch::Reverted => (
            ErrorCode::TransactionReverted,
            "the transaction reverted: nothing was transferred",
            serde_json::json!({}),
        ),
        Mismatch::Underpaid { received } | Mismatch::Overpaid { received } => (
            ErrorCode::TransferAmountMismatch,
            "the transfer is not the exact amount; it was not applied",
            serde_json::json!({ "receivedAtomic": received.to_string() }),
        ),
        Mismatch::WrongSender { sender } => (
            ErrorCode::TransferWrongSender,
            "the transfer did not come from the expected payer address",
            serde_json::json!({ "sender": sender.to_checksum(None), "expectedPayerAddress": request.payer.checksummed() }),
        ),
        Mismatch::WrongToken { token } => (
            ErrorCode::TransferWrongToken,
            "the transfer is of another token than the requested one",
            serde_json::json!({ "tokenAddress": token.to_checksum(None), "expectedTokenAddress": request.token.checksummed() }),
        ),
        Mismatch::AlreadyApplied { log_index } => (
            ErrorCode::TransferAlreadyApplied,
            "the matching transfer log already pays another payment request",
            serde_json::json!({ "logIndex": log_index }),
        ),
        Mismatch::NoTransfer => (
            ErrorCode::TransferNotFound,
            "the transaction carries no transfer to the payment request's address",
            serde_json::json!({}),
        ),
    };
    ApiError::new(code, message)
        .with_details(expected)
        .with_details(extra)
}

/// Parses a transaction hash: `0x` and 64 hexadecimal digits.
pub fn parse_tx_hash(value: &str) -> Result<B256, ApiError> {
    let value = value.trim();
    let valid = value.len() == 66
        && value.starts_with("0x")
        && value[2..].bytes().all(|byte| byte.is_ascii_hexdigit());
    if !valid {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "transactionHash",
            "transactionHash must be 0x followed by 64 hexadecimal digits",
        ));
    }
    value.parse::<B256>().map_err(|_| {
        ApiError::field(
            ErrorCode::InvalidRequest,
            "transactionHash",
            "transactionHash is malformed",
        )
    })
}

/// Decodes a stored transfer's log back (for the scanner's cross-check).
pub(super) fn same_log(log: &TransferLog, tx_hash: &str, log_index: i64) -> bool {
    format!("{:#x}", log.transaction_hash) == tx_hash && log.log_index as i64 == log_index
}

//! The finalized-log scanner. One pass:
//! 0. both providers' chain id (`super::chain_guard`): another chain than the configured one
//!    skips the whole pass, so nothing below happens until both serve it again;
//! 1. the finalized block both providers agree on;
//! 2. reorgs: every `confirming` transfer's stored block hash against the canonical hash at its
//!    height (anvil's `eth_getLogs` never says `removed: true`); a vanished one emits
//!    `payment.reorged` and the request awaits a transfer again;
//! 3. `eth_getLogs` for Transfer of the token to the treasury from the checkpoint to finalized,
//!    each log recorded once with block hash, number and index and matched by exact amount
//!    (payments nobody submitted are observed here; strangers, wrong senders, late and duplicate
//!    transfers are recorded for staff); the checkpoint moves in the same transaction;
//! 4. confirmation of `confirming` requests at or below finalized that the scanner saw with the
//!    stored hash, after both providers return the same receipt and canonical hash: invoice paid,
//!    payment recorded, `invoice.updated` and `payment.confirmed`, settlement proof;
//! 5. expiry of awaiting requests whose expiry the finalized chain has passed.

use super::repo::{self, TransferRecord};
use super::request::{PaymentRequest, RequestStatus};
use super::service::{apply_transfer, expected, same_log, timestamp};
use super::{StablecoinRail, events};
use crate::OUTBOX;
use crate::chain::rpc::{BlockHead, ChainError};
use crate::chain::transfer::{TransferLog, examine};
use crate::domain::payment::{Balance, STATUS_SUCCEEDED};
use crate::domain::{InvoiceReference, InvoiceStatus, Payment, PaymentMethod};
use platform::error::ApiError;
use serde_json::json;
use sqlx::PgConnection;
use std::collections::HashMap;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The rail's name in `platform::metrics`' settlement counter.
const RAIL: &str = "stablecoin";

/// What one scanner pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    pub finalized: u64,
    pub blocks_scanned: u64,
    pub logs_read: u64,
    pub observed: u64,
    pub confirmed: u64,
    pub reorged: u64,
    pub expired: u64,
}

impl StablecoinRail {
    /// Asks both providers for their chain id at start, then runs scanner passes every
    /// `scan_interval` until `shutdown` fires; a failed pass (a provider down, the providers
    /// disagreeing or serving another chain) changes nothing and is retried on the next tick.
    pub async fn run_scanner(self, shutdown: CancellationToken) {
        let chain_id = self.settings.chain_id;
        match self.chain_guard.verify(&self.providers).await {
            Ok(()) => tracing::info!(chain_id, "both stablecoin providers serve the configured chain"),
            // Logged as an error by the guard: the rail starts halted.
            Err(ChainError::WrongChain { .. }) => {}
            Err(error) => tracing::warn!(
                chain_id,
                error = %error,
                "the stablecoin providers' chain id could not be checked at start; it is asked again before every pass"
            ),
        }
        let mut ticker = tokio::time::interval(self.settings.scan_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = ticker.tick() => {}
            }
            if let Err(error) = self.scan_once().await {
                tracing::warn!(code = error.code.as_str(), error = %error.message, "a stablecoin scanner pass failed");
            }
        }
    }

    /// One scanner pass (see the module comment).
    pub async fn scan_once(&self) -> Result<ScanReport, ApiError> {
        self.chain_guard.verify(&self.providers).await?;
        let finalized = self.providers.finalized().await?;
        let mut report = ScanReport {
            finalized: finalized.number,
            ..ScanReport::default()
        };
        // Each step commits on its own; its count is recorded once it did.
        report.reorged = self.detect_reorgs().await?;
        platform::metrics::record_settlements(RAIL, "reorged", report.reorged);
        self.read_logs(&finalized, &mut report).await?;
        report.confirmed = self.confirm_finalized(&finalized).await?;
        platform::metrics::record_settlements(RAIL, "confirmed", report.confirmed);
        report.expired = self.expire(&finalized).await?;
        platform::metrics::record_settlements(RAIL, "expired", report.expired);
        Ok(report)
    }

    async fn detect_reorgs(&self) -> Result<u64, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let confirming = repo::confirming(&mut conn, self.settings.chain_id).await?;
        drop(conn);
        let mut reorged = 0;
        let mut canonical: HashMap<i64, Option<BlockHead>> = HashMap::new();
        for request in confirming {
            let Some(transfer) = &request.transfer else {
                continue;
            };
            let head = match canonical.get(&transfer.block_number) {
                Some(head) => *head,
                None => {
                    let head = self
                        .providers
                        .canonical(transfer.block_number.unsigned_abs())
                        .await?;
                    canonical.insert(transfer.block_number, head);
                    head
                }
            };
            if head.is_some_and(|head| format!("{:#x}", head.hash) == transfer.block_hash) {
                continue;
            }
            let mut tx = self.pool.begin().await?;
            let Some(locked) = repo::lock_by_id(&mut tx, request.id).await? else {
                continue;
            };
            if locked.status != RequestStatus::Confirming
                || locked.transfer.as_ref().map(|t| t.id) != Some(transfer.id)
            {
                continue;
            }
            reorg(&mut tx, &locked, transfer).await?;
            tx.commit().await?;
            tracing::warn!(request = %locked.id, tx = %transfer.tx_hash, "an observed stablecoin transfer left the canonical chain");
            reorged += 1;
        }
        Ok(reorged)
    }

    async fn read_logs(&self, finalized: &BlockHead, report: &mut ScanReport) -> Result<(), ApiError> {
        let chain_id = self.settings.chain_id;
        let mut conn = self.pool.acquire().await?;
        let checkpoint = repo::checkpoint(&mut conn, chain_id).await?;
        drop(conn);
        let mut from = checkpoint.map_or(self.settings.start_block, |(number, _)| number + 1);
        while from <= finalized.number {
            let to = finalized.number.min(from + self.settings.max_block_range - 1);
            let logs = self
                .providers
                .a
                .transfer_logs(&[self.settings.token.0], &[self.settings.treasury.0], from, to)
                .await?;
            let mut times: HashMap<u64, chrono::DateTime<chrono::Utc>> = HashMap::new();
            let mut tx = self.pool.begin().await?;
            let mut observed = 0;
            for log in logs.iter().filter_map(TransferLog::decode) {
                report.logs_read += 1;
                if self.record_scanned(&mut tx, &log, finalized, &mut times).await? {
                    observed += 1;
                }
            }
            let head = if to == finalized.number {
                *finalized
            } else {
                self.providers.canonical(to).await?.ok_or_else(|| {
                    ApiError::from(ChainError::Disagree {
                        what: format!("block {to}"),
                    })
                })?
            };
            repo::set_checkpoint(&mut tx, chain_id, to, &format!("{:#x}", head.hash)).await?;
            tx.commit().await?;
            report.observed += observed;
            platform::metrics::record_settlements(RAIL, "observed", observed);
            report.blocks_scanned += to - from + 1;
            from = to + 1;
        }
        Ok(())
    }

    /// Records one finalized log; true when it newly pays a request.
    async fn record_scanned(
        &self,
        tx: &mut PgConnection,
        log: &TransferLog,
        finalized: &BlockHead,
        times: &mut HashMap<u64, chrono::DateTime<chrono::Utc>>,
    ) -> Result<bool, ApiError> {
        let mut record = TransferRecord {
            chain_id: self.settings.chain_id,
            log,
            block_timestamp: None,
            submitted: false,
            scanner_block_hash: Some(format!("{:#x}", log.block_hash)),
        };
        let candidate = match i64::try_from(log.value) {
            Ok(value) => {
                repo::matching_amount(
                    tx,
                    record.chain_id,
                    &self.settings.token,
                    &self.settings.treasury,
                    value,
                )
                .await?
            }
            Err(_) => None,
        };
        let Some(request) = candidate else {
            repo::upsert_transfer(tx, &record, "unmatched", None).await?;
            return Ok(false);
        };
        if request.payer.0 != log.from {
            repo::upsert_transfer(tx, &record, "wrong_sender", Some(request.id)).await?;
            tracing::warn!(request = %request.id, "the exact amount arrived from another sender; recorded for staff");
            return Ok(false);
        }
        match request.status {
            RequestStatus::Confirming | RequestStatus::Confirmed => {
                let ours = request
                    .transfer
                    .as_ref()
                    .is_some_and(|transfer| same_log(log, &transfer.tx_hash, transfer.log_index));
                repo::upsert_transfer(
                    tx,
                    &record,
                    if ours { "applied" } else { "duplicate" },
                    Some(request.id),
                )
                .await?;
                Ok(false)
            }
            RequestStatus::AwaitingTransfer | RequestStatus::Expired => {
                let time = match times.get(&log.block_number) {
                    Some(time) => *time,
                    None => {
                        let head = self.providers.canonical(log.block_number).await?.ok_or_else(|| {
                            ApiError::from(ChainError::Disagree {
                                what: format!("block {}", log.block_number),
                            })
                        })?;
                        let time = timestamp(head.timestamp);
                        times.insert(log.block_number, time);
                        time
                    }
                };
                record.block_timestamp = Some(time);
                if time > request.expires_at {
                    repo::upsert_transfer(tx, &record, "late", Some(request.id)).await?;
                    tracing::warn!(request = %request.id, "a late stablecoin transfer was recorded for staff");
                    return Ok(false);
                }
                apply_transfer(tx, &request, &record, finalized.number).await?;
                Ok(true)
            }
        }
    }

    async fn confirm_finalized(&self, finalized: &BlockHead) -> Result<u64, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let confirming = repo::confirming(&mut conn, self.settings.chain_id).await?;
        drop(conn);
        let mut confirmed = 0;
        for request in confirming {
            let Some(transfer) = &request.transfer else {
                continue;
            };
            let seen_by_scanner =
                transfer.scanner_block_hash.as_deref() == Some(transfer.block_hash.as_str());
            if transfer.block_number.unsigned_abs() > finalized.number || !seen_by_scanner {
                continue;
            }
            let Some(proof) = self.cross_check(&request, finalized).await? else {
                continue;
            };
            if self.settle(&request, transfer.id, proof).await? {
                confirmed += 1;
            }
        }
        Ok(confirmed)
    }

    /// Both providers' receipt and canonical block for the request's transfer; the proof when
    /// they agree with what is stored, `None` when they do not (the request keeps confirming).
    async fn cross_check(
        &self,
        request: &PaymentRequest,
        finalized: &BlockHead,
    ) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(transfer) = &request.transfer else {
            return Ok(None);
        };
        let hash = crate::stablecoin::service::parse_tx_hash(&transfer.tx_hash)?;
        let blocked = |why: &str| {
            tracing::warn!(request = %request.id, why, "a stablecoin confirmation is held back");
            Ok(None)
        };
        let agreed = match self.providers.receipt(hash).await {
            Ok(Some(agreed)) => agreed,
            Ok(None) => return blocked("no provider knows the transaction"),
            Err(error) => return blocked(&error.to_string()),
        };
        let mut conn = self.pool.acquire().await?;
        let applied =
            repo::applied_log_indexes(&mut conn, request.chain_id, &transfer.tx_hash, request.id).await?;
        drop(conn);
        let found = match examine(
            agreed.receipt.succeeded,
            &agreed.receipt.logs,
            &expected(request),
            &applied,
        ) {
            Ok(found) if same_log(&found, &transfer.tx_hash, transfer.log_index) => found,
            _ => return blocked("the receipt no longer carries the stored transfer"),
        };
        let canonical = match self.providers.canonical(found.block_number).await {
            Ok(Some(head)) => head,
            Ok(None) => return blocked("the block is gone"),
            Err(error) => return blocked(&error.to_string()),
        };
        if format!("{:#x}", found.block_hash) != transfer.block_hash || canonical.hash != found.block_hash {
            return blocked("the block hash changed");
        }
        let answer = |name: &str| {
            json!({
                "provider": name,
                "receiptStatus": "success",
                "blockHash": format!("{:#x}", found.block_hash),
                "blockNumber": found.block_number,
                "logIndex": found.log_index,
                "canonicalBlockHash": format!("{:#x}", canonical.hash),
            })
        };
        Ok(Some(json!({
            "transactionHash": transfer.tx_hash,
            "logIndex": transfer.log_index,
            "blockHash": transfer.block_hash,
            "blockNumber": transfer.block_number,
            "finalizedBlock": { "number": finalized.number, "hash": format!("{:#x}", finalized.hash) },
            "tokenAddress": request.token.checksummed(),
            "fromAddress": found.from.to_checksum(None),
            "toAddress": found.to.to_checksum(None),
            "valueAtomic": found.value.to_string(),
            "scannerBlockHash": transfer.scanner_block_hash,
            "providers": [answer(&agreed.providers[0]), answer(&agreed.providers[1])],
        })))
    }

    /// Confirms within one transaction: the payment, the paid invoice, the events and the proof.
    async fn settle(
        &self,
        request: &PaymentRequest,
        transfer_id: i64,
        mut proof: serde_json::Value,
    ) -> Result<bool, ApiError> {
        let mut tx = self.pool.begin().await?;
        let Some(locked) = repo::lock_by_id(&mut tx, request.id).await? else {
            return Ok(false);
        };
        let Some(transfer) = locked.transfer.clone().filter(|t| t.id == transfer_id) else {
            return Ok(false);
        };
        if locked.status != RequestStatus::Confirming {
            return Ok(false);
        }
        let invoice =
            crate::repo::invoices::lock_for_payment(&mut tx, &InvoiceReference::Id(locked.invoice_id))
                .await?
                .ok_or_else(|| ApiError::internal("a payment request's invoice is missing"))?;
        if !matches!(invoice.status, InvoiceStatus::Open | InvoiceStatus::Overdue) {
            // Paid meanwhile on another rail (a card on the pay page, a bank transfer): the
            // transfer is recorded for staff, never applied, and the pass goes on.
            repo::set_disposition(&mut tx, transfer.id, "duplicate", Some(locked.id)).await?;
            repo::set_status(&mut tx, locked.id, RequestStatus::AwaitingTransfer, None).await?;
            tx.commit().await?;
            tracing::warn!(request = %locked.id, tx = %transfer.tx_hash, "a stablecoin transfer arrived for an invoice settled otherwise; recorded for staff");
            return Ok(false);
        }
        let balance = Balance {
            status: invoice.status,
            total: invoice.total,
            paid: invoice.amount_paid,
            due: invoice.amount_due,
        };
        let settlement = balance.settle(&invoice.invoice_number, locked.amount.cents)?;
        let now = platform::time::now();
        proof["confirmedAt"] = json!(platform::time::rfc3339(now));
        let payment = Payment {
            id: Uuid::now_v7(),
            customer_id: locked.customer_id,
            invoice_id: invoice.id,
            invoice_number: invoice.invoice_number.clone(),
            order_id: invoice.order_id,
            order_number: invoice.order_number.clone(),
            rail: PaymentMethod::ChainStablecoin,
            status: STATUS_SUCCEEDED.to_owned(),
            amount: locked.amount.cents,
            currency: invoice.currency.clone(),
            external_reference: format!("{}:{}", transfer.tx_hash, transfer.log_index),
            received_at: now,
            created_at: now,
            recorded_by: None,
        };
        if !crate::repo::payments::insert(&mut tx, &payment).await? {
            return Ok(false);
        }
        crate::repo::invoices::apply_settlement(&mut tx, locked.customer_id, invoice.id, &settlement, now)
            .await?;
        if settlement.completes {
            // A card invoice paid through its pay page's stablecoin option: its card sessions
            // are done, so no card is charged after it.
            crate::repo::checkout::complete_open_of_invoice(&mut tx, invoice.id, payment.id, now).await?;
        }
        let invoice = crate::repo::invoices::by_reference(
            &mut tx,
            locked.customer_id,
            &InvoiceReference::Id(invoice.id),
        )
        .await?
        .ok_or_else(|| ApiError::internal("a payment request's invoice is missing"))?;
        repo::confirm(&mut tx, locked.id, &proof, now).await?;
        if settlement.completes {
            OUTBOX
                .enqueue(&mut tx, crate::events::invoice_updated(&invoice, now))
                .await?;
            let mut confirmed = crate::events::payment_confirmed(&payment, &invoice, now);
            if let proto::events::event_envelope::Data::PaymentConfirmed(data) = &mut confirmed.data {
                data.transaction_hash = Some(transfer.tx_hash.clone());
            }
            OUTBOX.enqueue(&mut tx, confirmed).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn expire(&self, finalized: &BlockHead) -> Result<u64, ApiError> {
        let mut tx = self.pool.begin().await?;
        let expired =
            repo::expire_due(&mut tx, self.settings.chain_id, timestamp(finalized.timestamp)).await?;
        let now = platform::time::now();
        for id in &expired {
            if let Some(request) = repo::lock_by_id(&mut tx, *id).await? {
                OUTBOX.enqueue(&mut tx, events::expired(&request, now)).await?;
            }
        }
        let window = chrono::Duration::from_std(self.settings.late_window).unwrap_or_default();
        repo::release_expired_references(&mut tx, now - window).await?;
        tx.commit().await?;
        Ok(expired.len() as u64)
    }
}

/// Takes the locked `request`'s observed `transfer` off it, in the caller's transaction: the
/// transfer is `reorged`, the request awaits a transfer again and `payment.reorged` is enqueued.
/// The scanner's reorg detection and the sandbox simulation (`super::simulate`) share it.
pub(super) async fn reorg(
    tx: &mut sqlx::PgConnection,
    request: &super::request::PaymentRequest,
    transfer: &super::request::ObservedTransfer,
) -> Result<(), ApiError> {
    repo::set_disposition(&mut *tx, transfer.id, "reorged", Some(request.id)).await?;
    repo::set_status(&mut *tx, request.id, RequestStatus::AwaitingTransfer, None).await?;
    OUTBOX
        .enqueue(
            &mut *tx,
            events::reorged(request, &transfer.tx_hash, platform::time::now()),
        )
        .await?;
    Ok(())
}

//! SQL of the stablecoin rail: payment requests, observed transfers and the scanner checkpoint.
//! Customer-facing reads filter by customer id; the scanner's reads span customers by design (it
//! matches the chain against every open request) and are named as such.

use super::request::{ObservedTransfer, PaymentRequest, RequestStatus};
use crate::chain::transfer::TransferLog;
use crate::chain::{ChainAddress, StablecoinAmount};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

macro_rules! select_requests {
    () => {
        "SELECT r.id, r.customer_id, r.invoice_id, r.order_id, r.order_number, r.chain_id, r.token_address, \
           r.target_address, r.payer_address, r.amount_cents, r.reference_atomic, r.status, r.expires_at, \
           r.proof, r.confirmed_at, r.created_at, \
           t.id AS t_id, t.tx_hash, t.log_index, t.block_number, t.block_hash, t.scanner_block_hash \
         FROM payments.stablecoin_requests r LEFT JOIN payments.chain_transfers t ON t.id = r.transfer_id "
    };
}

fn request_from_row(row: &PgRow) -> Result<PaymentRequest, sqlx::Error> {
    let address = |column: &str| -> Result<ChainAddress, sqlx::Error> {
        let value: String = row.try_get(column)?;
        ChainAddress::from_stored(&value).map_err(|_| sqlx::Error::Decode(format!("bad {column}").into()))
    };
    let status: String = row.try_get("status")?;
    let amount = StablecoinAmount::new(
        Cents(row.try_get("amount_cents")?),
        row.try_get("reference_atomic")?,
    )
    .ok_or_else(|| sqlx::Error::Decode("bad stablecoin amount".into()))?;
    let transfer = match row.try_get::<Option<i64>, _>("t_id")? {
        Some(id) => Some(ObservedTransfer {
            id,
            tx_hash: row.try_get("tx_hash")?,
            log_index: row.try_get("log_index")?,
            block_number: row.try_get("block_number")?,
            block_hash: row.try_get("block_hash")?,
            scanner_block_hash: row.try_get("scanner_block_hash")?,
        }),
        None => None,
    };
    Ok(PaymentRequest {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        invoice_id: row.try_get("invoice_id")?,
        order_id: row.try_get("order_id")?,
        order_number: row.try_get("order_number")?,
        chain_id: row.try_get::<i64, _>("chain_id")?.unsigned_abs(),
        token: address("token_address")?,
        target: address("target_address")?,
        payer: address("payer_address")?,
        amount,
        status: RequestStatus::parse(&status)
            .ok_or_else(|| sqlx::Error::Decode(format!("unexpected status value {status:?}").into()))?,
        expires_at: row.try_get("expires_at")?,
        transfer,
        proof: row.try_get("proof")?,
        confirmed_at: row.try_get("confirmed_at")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Inserts a request; false (nothing written) when its invoice already has one or its reference
/// is held by another request to the same target (both unique constraints).
pub async fn insert_request(conn: &mut PgConnection, request: &PaymentRequest) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.stablecoin_requests (id, customer_id, invoice_id, order_id, order_number, chain_id, \
           token_address, target_address, payer_address, amount_cents, reference_atomic, amount_atomic, status, \
           expires_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15) \
         ON CONFLICT DO NOTHING",
    )
    .bind(request.id)
    .bind(request.customer_id)
    .bind(request.invoice_id)
    .bind(request.order_id)
    .bind(&request.order_number)
    .bind(request.chain_id as i64)
    .bind(request.token.stored())
    .bind(request.target.stored())
    .bind(request.payer.stored())
    .bind(request.amount.cents.0)
    .bind(request.amount.reference)
    .bind(request.amount.atomic)
    .bind(request.status.as_str())
    .bind(request.expires_at)
    .bind(request.created_at)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Gives an expired request a new expiry (and payer, and reference when its own was released);
/// false when the reference is now held by another request.
pub async fn renew(
    conn: &mut PgConnection,
    id: Uuid,
    payer: &ChainAddress,
    amount: &StablecoinAmount,
    expires_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE payments.stablecoin_requests SET status = 'awaiting_transfer', payer_address = $2, \
           reference_atomic = $3, amount_atomic = $4, expires_at = $5, reference_released_at = NULL, \
           transfer_id = NULL, updated_at = now() \
         WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM payments.stablecoin_requests o \
           WHERE o.id <> $1 AND o.reference_released_at IS NULL AND o.chain_id = stablecoin_requests.chain_id \
             AND o.token_address = stablecoin_requests.token_address \
             AND o.target_address = stablecoin_requests.target_address AND o.reference_atomic = $3)",
    )
    .bind(id)
    .bind(payer.stored())
    .bind(amount.reference)
    .bind(amount.atomic)
    .bind(expires_at)
    .execute(conn)
    .await;
    match result {
        Ok(done) => Ok(done.rows_affected() == 1),
        Err(error) if platform::error::unique_violation(&error).is_some() => Ok(false),
        Err(error) => Err(error),
    }
}

/// The references held for one token and target (to choose a free one).
pub async fn held_references(
    conn: &mut PgConnection,
    chain_id: u64,
    token: &ChainAddress,
    target: &ChainAddress,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT reference_atomic FROM payments.stablecoin_requests \
         WHERE chain_id = $1 AND token_address = $2 AND target_address = $3 AND reference_released_at IS NULL",
    )
    .bind(chain_id as i64)
    .bind(token.stored())
    .bind(target.stored())
    .fetch_all(conn)
    .await
}

/// The customer's request of an invoice, optionally locked for update (see [`lock_by_id`] for
/// why the lock and the read are two statements).
pub async fn by_invoice(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
    lock: bool,
) -> Result<Option<PaymentRequest>, sqlx::Error> {
    if lock {
        let id: Option<Uuid> = sqlx::query_scalar(
            "SELECT id FROM payments.stablecoin_requests WHERE customer_id = $1 AND invoice_id = $2 FOR UPDATE",
        )
        .bind(customer_id)
        .bind(invoice_id)
        .fetch_optional(&mut *conn)
        .await?;
        return match id {
            Some(id) => read_by_id(conn, id).await,
            None => Ok(None),
        };
    }
    let query = concat!(
        select_requests!(),
        "WHERE r.customer_id = $1 AND r.invoice_id = $2"
    );
    let row = sqlx::query(query)
        .bind(customer_id)
        .bind(invoice_id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| request_from_row(&row)).transpose()
}

/// Scanner: the request holding the exact amount to this token and target, locked.
pub async fn matching_amount(
    conn: &mut PgConnection,
    chain_id: u64,
    token: &ChainAddress,
    target: &ChainAddress,
    amount_atomic: i64,
) -> Result<Option<PaymentRequest>, sqlx::Error> {
    let id: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM payments.stablecoin_requests \
         WHERE chain_id = $1 AND token_address = $2 AND target_address = $3 AND amount_atomic = $4 \
         AND reference_released_at IS NULL FOR UPDATE",
    )
    .bind(chain_id as i64)
    .bind(token.stored())
    .bind(target.stored())
    .bind(amount_atomic)
    .fetch_optional(&mut *conn)
    .await?;
    match id {
        Some(id) => read_by_id(conn, id).await,
        None => Ok(None),
    }
}

/// One request by id, as a fresh statement sees it.
async fn read_by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<PaymentRequest>, sqlx::Error> {
    let query = concat!(select_requests!(), "WHERE r.id = $1");
    let row = sqlx::query(query).bind(id).fetch_optional(conn).await?;
    row.map(|row| request_from_row(&row)).transpose()
}

/// Scanner: every request in `confirming` on the chain, oldest first.
pub async fn confirming(conn: &mut PgConnection, chain_id: u64) -> Result<Vec<PaymentRequest>, sqlx::Error> {
    let query = concat!(
        select_requests!(),
        "WHERE r.chain_id = $1 AND r.status = 'confirming' ORDER BY r.created_at"
    );
    let rows = sqlx::query(query).bind(chain_id as i64).fetch_all(conn).await?;
    rows.iter().map(request_from_row).collect()
}

/// Scanner: one request by id, locked.
///
/// The row is locked first and read by a second statement: a `FOR UPDATE` over the join would,
/// after waiting for a concurrent writer (the scanner applying a transfer), re-check the new
/// request row but keep the transfer row of its older snapshot, so a request just moved to
/// `confirming` would come back without its transfer.
pub async fn lock_by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<PaymentRequest>, sqlx::Error> {
    let locked = sqlx::query("SELECT id FROM payments.stablecoin_requests WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    if locked.is_none() {
        return Ok(None);
    }
    read_by_id(conn, id).await
}

/// Moves a request to `status` with its current transfer.
pub async fn set_status(
    conn: &mut PgConnection,
    id: Uuid,
    status: RequestStatus,
    transfer_id: Option<i64>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.stablecoin_requests SET status = $2, transfer_id = $3, updated_at = now() WHERE id = $1",
    )
    .bind(id)
    .bind(status.as_str())
    .bind(transfer_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a request confirmed with its proof and frees its reference.
pub async fn confirm(
    conn: &mut PgConnection,
    id: Uuid,
    proof: &serde_json::Value,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.stablecoin_requests SET status = 'confirmed', proof = $2, confirmed_at = $3, \
           reference_released_at = $3, updated_at = $3 WHERE id = $1",
    )
    .bind(id)
    .bind(proof)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Scanner: expires the awaiting requests of the chain whose expiry is before `chain_time` (the
/// finalized block's time: a transfer made before expiry may still be unfinalized), returning them.
pub async fn expire_due(
    conn: &mut PgConnection,
    chain_id: u64,
    chain_time: DateTime<Utc>,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE payments.stablecoin_requests SET status = 'expired', updated_at = now() \
         WHERE chain_id = $1 AND status = 'awaiting_transfer' AND expires_at < $2 \
         RETURNING id",
    )
    .bind(chain_id as i64)
    .bind(chain_time)
    .fetch_all(conn)
    .await
}

/// A cancelled order's invoice: its request still awaiting a transfer expires now, returning its
/// id. The expiry is set before the second of the cancellation (block times are whole seconds),
/// so a transfer in any block from that second on is recorded `late` for staff, never applied.
pub async fn expire_for_cancelled_invoice(
    conn: &mut PgConnection,
    invoice_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE payments.stablecoin_requests SET status = 'expired', \
           expires_at = LEAST(expires_at, date_trunc('second', $2::timestamptz) - interval '1 second'), \
           updated_at = now() WHERE invoice_id = $1 AND status = 'awaiting_transfer' RETURNING id",
    )
    .bind(invoice_id)
    .bind(now)
    .fetch_optional(conn)
    .await
}

/// Frees the references of requests expired before `before`.
pub async fn release_expired_references(
    conn: &mut PgConnection,
    before: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE payments.stablecoin_requests SET reference_released_at = now() \
         WHERE status = 'expired' AND reference_released_at IS NULL AND expires_at < $1",
    )
    .bind(before)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// A recorded transfer as stored after an upsert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTransfer {
    pub id: i64,
    pub request_id: Option<Uuid>,
    pub disposition: String,
}

/// How a transfer is being recorded.
pub struct TransferRecord<'a> {
    pub chain_id: u64,
    pub log: &'a TransferLog,
    pub block_timestamp: Option<DateTime<Utc>>,
    pub submitted: bool,
    /// Set when the scanner read the log (the hash it read).
    pub scanner_block_hash: Option<String>,
}

/// Records a transfer log once (`chain_transfers_log_key`); a later sighting refreshes its block
/// position, adds the scanner's hash or the submission flag, and keeps its disposition.
pub async fn upsert_transfer(
    conn: &mut PgConnection,
    record: &TransferRecord<'_>,
    disposition: &str,
    request_id: Option<Uuid>,
) -> Result<StoredTransfer, sqlx::Error> {
    let log = record.log;
    let row = sqlx::query(
        "INSERT INTO payments.chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, \
           block_timestamp, token_address, from_address, to_address, value_atomic, request_id, disposition, \
           submitted, scanner_block_hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT ON CONSTRAINT chain_transfers_log_key DO UPDATE SET \
           block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, \
           block_timestamp = COALESCE(EXCLUDED.block_timestamp, chain_transfers.block_timestamp), \
           submitted = chain_transfers.submitted OR EXCLUDED.submitted, \
           scanner_block_hash = COALESCE(EXCLUDED.scanner_block_hash, chain_transfers.scanner_block_hash), \
           updated_at = now() \
         RETURNING id, request_id, disposition",
    )
    .bind(record.chain_id as i64)
    .bind(format!("{:#x}", log.transaction_hash))
    .bind(log.log_index as i64)
    .bind(log.block_number as i64)
    .bind(format!("{:#x}", log.block_hash))
    .bind(record.block_timestamp)
    .bind(format!("{:#x}", log.token))
    .bind(format!("{:#x}", log.from))
    .bind(format!("{:#x}", log.to))
    .bind(log.value.to_string())
    .bind(request_id)
    .bind(disposition)
    .bind(record.submitted)
    .bind(&record.scanner_block_hash)
    .fetch_one(conn)
    .await?;
    Ok(StoredTransfer {
        id: row.try_get("id")?,
        request_id: row.try_get("request_id")?,
        disposition: row.try_get("disposition")?,
    })
}

/// Sets a transfer's disposition and request.
pub async fn set_disposition(
    conn: &mut PgConnection,
    id: i64,
    disposition: &str,
    request_id: Option<Uuid>,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE payments.chain_transfers SET disposition = $2, request_id = $3, updated_at = now() WHERE id = $1")
        .bind(id)
        .bind(disposition)
        .bind(request_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Log indexes of a transaction that already pay a request other than `except`.
pub async fn applied_log_indexes(
    conn: &mut PgConnection,
    chain_id: u64,
    tx_hash: &str,
    except: Uuid,
) -> Result<Vec<u64>, sqlx::Error> {
    let rows: Vec<i64> = sqlx::query_scalar(
        "SELECT log_index FROM payments.chain_transfers WHERE chain_id = $1 AND tx_hash = $2 \
         AND disposition = 'applied' AND request_id IS DISTINCT FROM $3",
    )
    .bind(chain_id as i64)
    .bind(tx_hash)
    .bind(except)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(i64::unsigned_abs).collect())
}

/// The scanner's checkpoint: the last block read, with its hash.
pub async fn checkpoint(
    conn: &mut PgConnection,
    chain_id: u64,
) -> Result<Option<(u64, String)>, sqlx::Error> {
    let row =
        sqlx::query("SELECT block_number, block_hash FROM payments.chain_checkpoints WHERE chain_id = $1")
            .bind(chain_id as i64)
            .fetch_optional(conn)
            .await?;
    row.map(|row| {
        Ok((
            row.try_get::<i64, _>("block_number")?.unsigned_abs(),
            row.try_get("block_hash")?,
        ))
    })
    .transpose()
}

/// Moves the checkpoint to `number` (hash `hash`).
pub async fn set_checkpoint(
    conn: &mut PgConnection,
    chain_id: u64,
    number: u64,
    hash: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO payments.chain_checkpoints (chain_id, block_number, block_hash, updated_at) \
         VALUES ($1, $2, $3, now()) ON CONFLICT (chain_id) DO UPDATE SET block_number = EXCLUDED.block_number, \
         block_hash = EXCLUDED.block_hash, updated_at = now()",
    )
    .bind(chain_id as i64)
    .bind(number as i64)
    .bind(hash)
    .execute(conn)
    .await?;
    Ok(())
}

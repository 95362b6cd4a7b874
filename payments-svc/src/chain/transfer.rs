//! ERC-20 `Transfer` logs and the examination of one transaction receipt against the transfer a
//! payment request expects. Every log is looked at (never the first decodable one): a log counts
//! only when its emitting contract is the token, its sender the expected payer, its recipient the
//! treasury and its value the exact atomic amount. A receipt may carry several transfers (smart
//! wallets, batchers); logs already applied to another request are skipped, so one log never
//! pays two requests. When nothing matches, the closest explanation is reported.

use alloy::primitives::{Address, B256, U256};
use alloy::rpc::types::Log;
use alloy::sol_types::SolEvent;

alloy::sol! {
    /// The ERC-20 Transfer event.
    event Transfer(address indexed from, address indexed to, uint256 value);
}

/// The topic of `Transfer(address,address,uint256)`.
pub const TRANSFER_TOPIC: B256 = Transfer::SIGNATURE_HASH;

/// One decoded Transfer log with its position on chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferLog {
    pub token: Address,
    pub from: Address,
    pub to: Address,
    pub value: U256,
    pub transaction_hash: B256,
    pub log_index: u64,
    pub block_hash: B256,
    pub block_number: u64,
}

impl TransferLog {
    /// Decodes a log that is an ERC-20 Transfer (three topics, 32 bytes of data) with its
    /// position; `None` for any other log, or one without a block position (pending).
    pub fn decode(log: &Log) -> Option<Self> {
        let topics = log.topics();
        if topics.len() != 3 || topics[0] != TRANSFER_TOPIC || log.data().data.len() != 32 {
            return None;
        }
        let decoded = Transfer::decode_log_data(log.data()).ok()?;
        Some(Self {
            token: log.address(),
            from: decoded.from,
            to: decoded.to,
            value: decoded.value,
            transaction_hash: log.transaction_hash?,
            log_index: log.log_index?,
            block_hash: log.block_hash?,
            block_number: log.block_number?,
        })
    }
}

/// What a payment request expects on chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpectedTransfer {
    pub token: Address,
    pub target: Address,
    pub payer: Address,
    pub amount: U256,
}

/// Why a transaction does not pay the request (the documented error table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The transaction reverted: nothing moved.
    Reverted,
    /// The payer sent the token to the treasury, but less than the exact amount.
    Underpaid { received: U256 },
    /// The payer sent the token to the treasury, but more than the exact amount.
    Overpaid { received: U256 },
    /// The token reached the treasury from another sender (an exchange or pooled wallet).
    WrongSender { sender: Address },
    /// Another contract's Transfer reached the treasury (not the configured token).
    WrongToken { token: Address },
    /// The matching log already pays another request.
    AlreadyApplied { log_index: u64 },
    /// No Transfer in the transaction reaches the treasury.
    NoTransfer,
}

impl Mismatch {
    /// The snake_case name used in error details and the documentation.
    pub fn reason(&self) -> &'static str {
        match self {
            Mismatch::Reverted => "reverted",
            Mismatch::Underpaid { .. } => "underpaid",
            Mismatch::Overpaid { .. } => "overpaid",
            Mismatch::WrongSender { .. } => "wrong_sender",
            Mismatch::WrongToken { .. } => "wrong_token",
            Mismatch::AlreadyApplied { .. } => "log_already_applied",
            Mismatch::NoTransfer => "no_transfer",
        }
    }
}

/// Examines a receipt's status and logs: the first log that matches `expected` exactly and is
/// not in `applied_elsewhere` (log indexes of this transaction paying other requests), or the
/// mismatch that explains best why none does.
pub fn examine(
    succeeded: bool,
    logs: &[Log],
    expected: &ExpectedTransfer,
    applied_elsewhere: &[u64],
) -> Result<TransferLog, Mismatch> {
    if !succeeded {
        return Err(Mismatch::Reverted);
    }
    let transfers: Vec<TransferLog> = logs.iter().filter_map(TransferLog::decode).collect();
    let to_target = || transfers.iter().filter(|transfer| transfer.to == expected.target);
    let exact = |transfer: &&TransferLog| {
        transfer.token == expected.token
            && transfer.from == expected.payer
            && transfer.value == expected.amount
    };
    if let Some(found) = to_target()
        .filter(exact)
        .find(|transfer| !applied_elsewhere.contains(&transfer.log_index))
    {
        return Ok(found.clone());
    }
    if let Some(used) = to_target().find(exact) {
        return Err(Mismatch::AlreadyApplied {
            log_index: used.log_index,
        });
    }
    let of_token = || to_target().filter(|transfer| transfer.token == expected.token);
    if let Some(paid) = of_token().find(|transfer| transfer.from == expected.payer) {
        return Err(if paid.value < expected.amount {
            Mismatch::Underpaid { received: paid.value }
        } else {
            Mismatch::Overpaid { received: paid.value }
        });
    }
    if let Some(other) = of_token().next() {
        return Err(Mismatch::WrongSender { sender: other.from });
    }
    if let Some(other) = to_target().next() {
        return Err(Mismatch::WrongToken { token: other.token });
    }
    Err(Mismatch::NoTransfer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{Bytes, LogData, address};

    const TOKEN: Address = address!("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48");
    const OTHER_TOKEN: Address = address!("0xdAC17F958D2ee523a2206206994597C13D831ec7");
    const TARGET: Address = address!("0x1111111111111111111111111111111111111111");
    const PAYER: Address = address!("0x2222222222222222222222222222222222222222");
    const EXCHANGE: Address = address!("0x3333333333333333333333333333333333333333");

    fn log(token: Address, from: Address, to: Address, value: u64, index: u64) -> Log {
        let data = LogData::new_unchecked(
            vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            Bytes::from(U256::from(value).to_be_bytes::<32>().to_vec()),
        );
        Log {
            inner: alloy::primitives::Log { address: token, data },
            block_hash: Some(B256::repeat_byte(7)),
            block_number: Some(10),
            block_timestamp: None,
            transaction_hash: Some(B256::repeat_byte(9)),
            transaction_index: Some(0),
            log_index: Some(index),
            removed: false,
        }
    }

    fn expected() -> ExpectedTransfer {
        ExpectedTransfer {
            token: TOKEN,
            target: TARGET,
            payer: PAYER,
            amount: U256::from(1_000_042_u64),
        }
    }

    #[test]
    fn the_exact_log_is_found_behind_a_decoy_of_another_contract() {
        let logs = [
            log(OTHER_TOKEN, PAYER, TARGET, 1_000_042, 0),
            log(TOKEN, PAYER, TARGET, 1_000_042, 1),
        ];
        let found = examine(true, &logs, &expected(), &[]).unwrap();
        assert_eq!(found.log_index, 1);
        assert_eq!(found.token, TOKEN);
    }

    #[test]
    fn a_log_applied_to_another_request_is_skipped_and_a_second_one_is_taken() {
        let logs = [
            log(TOKEN, PAYER, TARGET, 1_000_042, 3),
            log(TOKEN, PAYER, TARGET, 1_000_042, 4),
        ];
        assert_eq!(examine(true, &logs, &expected(), &[3]).unwrap().log_index, 4);
        assert_eq!(
            examine(true, &logs, &expected(), &[3, 4]).unwrap_err(),
            Mismatch::AlreadyApplied { log_index: 3 }
        );
    }

    #[test]
    fn each_wrong_transfer_gets_its_own_reason() {
        let reason = |logs: &[Log]| examine(true, logs, &expected(), &[]).unwrap_err().reason();
        assert_eq!(reason(&[log(TOKEN, PAYER, TARGET, 1_000_041, 0)]), "underpaid");
        assert_eq!(reason(&[log(TOKEN, PAYER, TARGET, 1_000_043, 0)]), "overpaid");
        assert_eq!(
            reason(&[log(TOKEN, EXCHANGE, TARGET, 1_000_042, 0)]),
            "wrong_sender"
        );
        assert_eq!(
            reason(&[log(OTHER_TOKEN, PAYER, TARGET, 1_000_042, 0)]),
            "wrong_token"
        );
        assert_eq!(
            reason(&[log(TOKEN, PAYER, EXCHANGE, 1_000_042, 0)]),
            "no_transfer"
        );
        assert_eq!(reason(&[]), "no_transfer");
        assert_eq!(
            examine(
                false,
                &[log(TOKEN, PAYER, TARGET, 1_000_042, 0)],
                &expected(),
                &[]
            )
            .unwrap_err(),
            Mismatch::Reverted
        );
    }
}

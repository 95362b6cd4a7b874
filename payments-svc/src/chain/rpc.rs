//! Read-only JSON-RPC access to the chain: one provider ([`ChainReader`]) and the pair of
//! independent providers ([`ProviderPair`]) whose answers must agree before anything is
//! recorded. Only reading methods are called (`eth_getTransactionReceipt`,
//! `eth_getBlockByNumber`, `eth_getLogs`, `eth_chainId`); there is no wallet, no signer and no
//! sending method anywhere in this crate.

use alloy::eips::BlockNumberOrTag;
use alloy::primitives::{Address, B256};
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::client::RpcClient;
use alloy::rpc::types::{Filter, Log};
use alloy::transports::http::Http;
use platform::error::{ApiError, ErrorCode};
use serde::Serialize;
use std::time::Duration;

use super::transfer::TRANSFER_TOPIC;

/// A chain read that could not be answered with certainty.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// A provider did not answer (down, timed out, malformed answer).
    #[error("provider {provider} is unavailable: {cause}")]
    Unavailable { provider: String, cause: String },
    /// The two providers answered differently.
    #[error("the providers disagree about {what}")]
    Disagree { what: String },
    /// A provider serves another chain than the configured one (`eth_chainId`): nothing it
    /// says about blocks, receipts or logs is about our chain.
    #[error("provider {provider} serves chain id {served}, not the configured chain id {configured}")]
    WrongChain {
        provider: String,
        served: u64,
        configured: u64,
    },
}

impl From<ChainError> for ApiError {
    /// Whichever the cause, the rail answers "cannot verify now" (503), never a verdict.
    fn from(error: ChainError) -> Self {
        let reason = match &error {
            ChainError::Unavailable { .. } => "provider_unavailable",
            ChainError::Disagree { .. } => "providers_disagree",
            ChainError::WrongChain { .. } => "chain_mismatch",
        };
        tracing::warn!(error = %error, "the chain cannot be verified now");
        ApiError::new(
            ErrorCode::ChainUnavailable,
            "the transaction cannot be verified now; retry later with the same Idempotency-Key",
        )
        .with_details(serde_json::json!({ "reason": reason, "retryAfterSeconds": 15 }))
    }
}

/// One block's identity and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockHead {
    pub number: u64,
    pub hash: B256,
    /// Seconds since the epoch.
    pub timestamp: u64,
}

/// One log as two providers must report it: contract, topics, data and index.
type LogKey = (Address, Vec<B256>, Vec<u8>, Option<u64>);

/// What one provider answered for a transaction receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptView {
    pub succeeded: bool,
    pub block_hash: B256,
    pub block_number: u64,
    pub logs: Vec<Log>,
}

impl ReceiptView {
    /// The parts two honest providers must agree on: status, block and every log's contract,
    /// topics, data and index.
    fn agreement_key(&self) -> (bool, B256, u64, Vec<LogKey>) {
        let logs = self
            .logs
            .iter()
            .map(|log| {
                (
                    log.address(),
                    log.topics().to_vec(),
                    log.data().data.to_vec(),
                    log.log_index,
                )
            })
            .collect();
        (self.succeeded, self.block_hash, self.block_number, logs)
    }
}

/// One JSON-RPC provider, read-only.
#[derive(Clone, Debug)]
pub struct ChainReader {
    name: String,
    provider: RootProvider,
}

impl ChainReader {
    /// A reader of `url` named `name` (the name appears in proofs and logs, never the URL, which
    /// may carry an API key); every call is bounded by `timeout`.
    pub fn connect(name: &str, url: &str, timeout: Duration) -> anyhow::Result<Self> {
        let url = url
            .parse()
            .map_err(|_| anyhow::anyhow!("the RPC URL of provider {name} is malformed"))?;
        let http_client = reqwest_alloy::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()?;
        let transport = Http::with_client(http_client, url);
        let client = RpcClient::new(transport, false);
        Ok(Self {
            name: name.to_owned(),
            provider: RootProvider::new(client),
        })
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn unavailable(&self, cause: impl std::fmt::Display) -> ChainError {
        ChainError::Unavailable {
            provider: self.name.clone(),
            cause: cause.to_string(),
        }
    }

    /// The chain id the provider serves.
    pub async fn chain_id(&self) -> Result<u64, ChainError> {
        self.provider
            .get_chain_id()
            .await
            .map_err(|error| self.unavailable(error))
    }

    /// The receipt of `hash`, or `None` when the provider does not know a mined transaction.
    pub async fn receipt(&self, hash: B256) -> Result<Option<ReceiptView>, ChainError> {
        let Some(receipt) = self
            .provider
            .get_transaction_receipt(hash)
            .await
            .map_err(|error| self.unavailable(error))?
        else {
            return Ok(None);
        };
        let (Some(block_hash), Some(block_number)) = (receipt.block_hash, receipt.block_number) else {
            return Ok(None);
        };
        Ok(Some(ReceiptView {
            succeeded: receipt.status(),
            block_hash,
            block_number,
            logs: receipt.logs().to_vec(),
        }))
    }

    /// The block at `tag` (a number, `finalized`, `latest`), or `None` when there is none.
    pub async fn block(&self, tag: BlockNumberOrTag) -> Result<Option<BlockHead>, ChainError> {
        let block = self
            .provider
            .get_block_by_number(tag)
            .await
            .map_err(|error| self.unavailable(error))?;
        Ok(block.map(|block| BlockHead {
            number: block.header.number,
            hash: block.header.hash,
            timestamp: block.header.timestamp,
        }))
    }

    /// Transfer logs of `tokens` to `targets` in blocks `from..=to`.
    pub async fn transfer_logs(
        &self,
        tokens: &[Address],
        targets: &[Address],
        from: u64,
        to: u64,
    ) -> Result<Vec<Log>, ChainError> {
        let filter = Filter::new()
            .address(tokens.to_vec())
            .event_signature(TRANSFER_TOPIC)
            .topic2(
                targets
                    .iter()
                    .map(|target| target.into_word())
                    .collect::<Vec<B256>>(),
            )
            .from_block(from)
            .to_block(to);
        self.provider
            .get_logs(&filter)
            .await
            .map_err(|error| self.unavailable(error))
    }
}

/// A receipt both providers know and agree on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgreedReceipt {
    /// The agreed answer (provider A's copy).
    pub receipt: ReceiptView,
    /// Names of the two providers, in order.
    pub providers: [String; 2],
}

/// Two independent providers; every answer the rail acts on is read from both and compared.
#[derive(Clone, Debug)]
pub struct ProviderPair {
    pub a: ChainReader,
    pub b: ChainReader,
}

impl ProviderPair {
    /// The receipt of `hash` when both providers return the same one; `None` when neither knows
    /// it; `Disagree` when only one knows it or their answers differ.
    pub async fn receipt(&self, hash: B256) -> Result<Option<AgreedReceipt>, ChainError> {
        let (a, b) = tokio::join!(self.a.receipt(hash), self.b.receipt(hash));
        match (a?, b?) {
            (None, None) => Ok(None),
            (Some(a), Some(b)) if a.agreement_key() == b.agreement_key() => Ok(Some(AgreedReceipt {
                receipt: a,
                providers: [self.a.name.clone(), self.b.name.clone()],
            })),
            _ => Err(ChainError::Disagree {
                what: format!("the receipt of {hash}"),
            }),
        }
    }

    /// The canonical block at `number` when both providers agree on its hash.
    pub async fn canonical(&self, number: u64) -> Result<Option<BlockHead>, ChainError> {
        let tag = BlockNumberOrTag::Number(number);
        let (a, b) = tokio::join!(self.a.block(tag), self.b.block(tag));
        let (a, b) = (a?, b?);
        if a.map(|head| head.hash) != b.map(|head| head.hash) {
            return Err(ChainError::Disagree {
                what: format!("the block at height {number}"),
            });
        }
        Ok(a)
    }

    /// The finalized block both providers have reached: the lower of their `finalized` heights,
    /// with the hash both give at that height.
    pub async fn finalized(&self) -> Result<BlockHead, ChainError> {
        let tag = BlockNumberOrTag::Finalized;
        let (a, b) = tokio::join!(self.a.block(tag), self.b.block(tag));
        let (a, b) = (a?, b?);
        let (Some(a), Some(b)) = (a, b) else {
            return Err(ChainError::Disagree {
                what: "the finalized block (a provider has none)".to_owned(),
            });
        };
        if a.number == b.number {
            if a.hash != b.hash {
                return Err(ChainError::Disagree {
                    what: format!("the finalized block at height {}", a.number),
                });
            }
            return Ok(a);
        }
        self.canonical(a.number.min(b.number))
            .await?
            .ok_or_else(|| ChainError::Disagree {
                what: "the lower finalized block".to_owned(),
            })
    }
}

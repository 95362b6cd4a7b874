//! The stablecoin rail's chain core: read-only and non-custodial. It holds no key, signs nothing
//! and broadcasts nothing (SPEC core rule 6); it only reads receipts, blocks and logs.
//!
//! - [`amount`]: the exact amount `cents × 10^4 + reference` in atomic units and its six-decimal
//!   string (never rounded);
//! - [`address`]: EIP-55 checksummed addresses (the payer's and the treasury's);
//! - [`transfer`]: ERC-20 `Transfer` logs decoded, and the examination of one receipt against
//!   the expected transfer (every log, the token's address, several transfers per transaction);
//! - [`rpc`]: one JSON-RPC provider ([`rpc::ChainReader`]) and the pair of independent providers
//!   that must agree ([`rpc::ProviderPair`]): alloy's `FallbackLayer` compares nothing, so the
//!   cross-check is ours.

pub mod address;
pub mod amount;
pub mod rpc;
pub mod transfer;

pub use address::ChainAddress;
pub use amount::StablecoinAmount;

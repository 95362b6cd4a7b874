//! The stablecoin rail's use cases: issuing a payment request with its exact amount, verifying a
//! submitted transaction hash against two providers, and the finalized-log scanner that observes,
//! confirms, detects reorgs and expires requests; the chain-id guard that halts all of it while a
//! provider serves another chain. Read-only on chain (see `crate::chain`).

pub mod chain_guard;
pub mod events;
pub mod grpc;
pub mod repo;
pub mod request;
pub mod scanner;
pub mod service;
pub mod settings;
mod simulate;

pub use request::{PaymentRequest, RequestStatus};
pub use service::StablecoinRail;
pub use settings::StablecoinSettings;

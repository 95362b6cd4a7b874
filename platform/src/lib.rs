//! Runtime glue shared by the gateway and every domain service.
//!
//! Nothing here knows about orders, quotes or invoices: it holds settings loading, telemetry,
//! the shutdown token, database connection and migration, the closed error-code table, the
//! signed principal tokens and the access layer in front of every gRPC service, the gRPC
//! plumbing, the transactional outbox and its relay, the Redis stream consumer, the idempotency
//! store, and the input rules (which characters a request may carry) that the gateway and every
//! gRPC server apply.

#![forbid(unsafe_code)]

pub mod access;
#[cfg(feature = "blobs")]
pub mod blobs;
pub mod config;
pub mod consumer;
pub mod db;
pub mod delegation;
pub mod env;
pub mod error;
pub mod event_signing;
pub mod grpc;
pub mod health;
pub mod housekeeping;
pub mod idempotency;
pub mod ids;
pub mod input;
pub mod lab;
pub mod label_links;
#[cfg(feature = "mail")]
pub mod mail;
pub mod mesh;
pub mod metrics;
pub mod money;
pub mod outbox;
pub mod pagination;
pub mod principal;
pub mod production;
pub mod service;
pub mod shutdown;
pub mod streams;
pub mod telemetry;
pub mod time;
pub mod tokens;

#[cfg(feature = "testing")]
pub mod test_receiver;
#[cfg(feature = "testing")]
pub mod testing;

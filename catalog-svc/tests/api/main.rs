//! Integration tests of catalog-svc over gRPC, against the real PostgreSQL and Redis.

mod consumer;
mod helpers;
mod import;
mod input;
mod listing;
mod quotes;

//! Integration tests of payments-svc against a real PostgreSQL and Redis.

mod addons;
mod bank_reference;
mod cancellation;
mod chain;
mod consumer;
mod cursors;
mod helpers;
mod housekeeping;
mod input;
mod invoices;
mod listing;
mod payments;
mod pickup_checkout;
mod relay;
mod spend;

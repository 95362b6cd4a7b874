//! End-to-end tests: one module per business flow or cross-cutting guarantee.

mod bank_invoice_flow;
mod errors;
mod forged_events;
mod idempotency;
mod input_sweep;
mod redis_acl;
mod staff_identity;
mod support;
mod tenant_isolation;
mod webhook_operations;
mod webhooks_flow;

//! End-to-end tests: one module per business flow or cross-cutting guarantee.

mod bank_invoice_flow;
mod errors;
mod events_caps;
mod events_reclaim;
mod events_resilience;
mod events_support;
mod events_trust;
mod idempotency;
mod input_sweep;
mod redis_acl;
mod staff_identity;
mod support;
mod tenant_isolation;
mod webhook_operations;
mod webhooks_flow;

//! End-to-end tests: one module per business flow or cross-cutting guarantee.

mod bank_invoice_flow;
mod events_resilience;
mod support;

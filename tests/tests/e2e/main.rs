//! End-to-end tests: one module per business flow or cross-cutting guarantee.

mod events_resilience;

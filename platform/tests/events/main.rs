//! The event guarantees of `platform`, one module per guarantee, exercised against real
//! PostgreSQL and Redis (and, for an outage, a Redis process of the test's own): the outbox
//! relay, the consumer's at-least-once delivery without double effects, reclaiming, dead letters,
//! trust in an event's source, and trimming. Business flows built on them (a forged payment that
//! must not pay an order) are end-to-end tests in `tests/`.

mod consumer;
mod dead_letters;
mod reclaim;
mod relay;
mod support;
mod trimming;
mod trust;

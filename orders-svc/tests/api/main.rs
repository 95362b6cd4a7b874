//! Integration tests of orders-svc against real PostgreSQL and Redis, with in-test doubles of
//! catalog-svc and payments-svc.

mod cancellation;
mod concurrency;
mod consumers;
mod create_order;
mod data;
mod fakes;
mod helpers;
mod idempotency;
mod input;
mod migrations;
mod quotes;
mod reads;
mod ship_first;
mod support;
mod validation;
mod views;

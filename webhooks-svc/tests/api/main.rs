//! Integration tests of webhooks-svc against a real PostgreSQL, Redis and HTTPS receiver.

mod endpoints;
mod envelopes;
mod fanout;
mod helpers;
mod idempotency;
mod input;
mod limits;
mod restart;
mod retries;
mod rotation;
mod ssrf;
mod staff;
mod verify;

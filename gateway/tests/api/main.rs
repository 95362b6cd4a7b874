//! Integration tests of the gateway: one binary, a fresh database per test, fake peers.

mod authentication;
mod documents;
mod errors;
mod fakes;
mod fixtures;
mod helpers;
mod identity;
mod input;
mod operators;
mod orders;
mod reads;
mod webhook_endpoints;
mod webhook_fake;
mod webhooks;

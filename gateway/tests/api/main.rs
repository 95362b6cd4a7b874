//! Integration tests of the gateway: one binary, a real identity-svc on a fresh database per test, fake
//! peers (the registries' tests run a real results-svc).

mod authentication;
mod documents;
mod errors;
mod fakes;
mod fixtures;
mod front_door;
mod helpers;
mod identity;
mod input;
mod orders;
mod readiness;
mod reads;
mod registries;
mod replicas;
mod webhook_endpoints;
mod webhook_fake;
mod webhooks;

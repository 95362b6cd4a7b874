//! Integration tests of identity-svc on its own: a fresh database per test, real Redis. (The
//! identity API as the gateway's customers meet it, keys created and refused at the front door,
//! is in gateway/tests/api, which runs identity-svc beside a gateway.)

mod helpers;
mod migration;
mod operator_controls;
mod operators;
mod verify;

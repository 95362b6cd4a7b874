//! SQL of webhooks-svc, schema-qualified; functions take a connection (the use case owns the
//! transaction) or the pool.

pub mod deliveries;
pub mod dispatch;
pub mod endpoints;
pub mod events;

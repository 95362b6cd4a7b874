//! Names of the Redis streams and consumer groups of the mesh, in one place.
//!
//! Each domain service relays its outbox to one stream, `<prefix>:events:<domain>`. A service
//! that reacts to another domain's events reads that stream through its own consumer group,
//! named after the service. Entries that keep failing move to `<stream>:dead`.

/// Domain of catalog-svc.
pub const CATALOG: &str = "catalog";
/// Domain of orders-svc.
pub const ORDERS: &str = "orders";
/// Domain of payments-svc.
pub const PAYMENTS: &str = "payments";
/// Domain of shipping-svc.
pub const SHIPPING: &str = "shipping";
/// Domain of results-svc.
pub const RESULTS: &str = "results";
/// Domain of webhooks-svc (it emits no lifecycle events of its own today).
pub const WEBHOOKS: &str = "webhooks";

/// Every domain that publishes events; webhooks-svc subscribes to all of them.
pub const EVENT_DOMAINS: [&str; 5] = [CATALOG, ORDERS, PAYMENTS, SHIPPING, RESULTS];

/// Field of a stream entry that holds the protobuf-encoded `EventEnvelope`.
pub const ENVELOPE_FIELD: &str = "envelope";
/// Field of a stream entry that repeats the event type, for cheap inspection with redis-cli.
pub const TYPE_FIELD: &str = "type";

/// Returns the stream name of a domain.
pub fn stream_name(prefix: &str, domain: &str) -> String {
    format!("{prefix}:events:{domain}")
}

/// Returns the dead-letter stream of a stream.
pub fn dead_letter_stream(stream: &str) -> String {
    format!("{stream}:dead")
}

/// Consumer group of orders-svc.
pub const GROUP_ORDERS: &str = "orders-svc";
/// Consumer group of payments-svc.
pub const GROUP_PAYMENTS: &str = "payments-svc";
/// Consumer group of catalog-svc.
pub const GROUP_CATALOG: &str = "catalog-svc";
/// Consumer group of webhooks-svc.
pub const GROUP_WEBHOOKS: &str = "webhooks-svc";

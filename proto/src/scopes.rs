//! The one table of API-key scope names, used by every crate: the gateway's operation table,
//! the services' access tables, the event kinds' read scopes and labctl's key creation.

/// Browse tests, matrices, bundles, pricing and requirements.
pub const CATALOG_READ: &str = "catalog:read";
/// Create immutable, expiring server quotes.
pub const QUOTES_WRITE: &str = "quotes:write";
/// Read customer-owned orders.
pub const ORDERS_READ: &str = "orders:read";
/// Place customer-owned orders.
pub const ORDERS_WRITE: &str = "orders:write";
/// Read invoice state.
pub const INVOICES_READ: &str = "invoices:read";
/// Read payment state.
pub const PAYMENTS_READ: &str = "payments:read";
/// Retry payment preparation; submit a stablecoin transaction for verification.
pub const PAYMENTS_WRITE: &str = "payments:write";
/// Read labels, tracking, carrier history, ship-to address, packing steps, pickup options.
pub const SHIPMENTS_READ: &str = "shipments:read";
/// Read QA-published COAs and structured results.
pub const RESULTS_READ: &str = "results:read";
/// Read released instrument-file manifests after publication.
pub const RAW_DATA_READ: &str = "raw_data:read";
/// Read structured measurements, run metadata and integrity checks; bulk export.
pub const INSTRUMENTS_READ: &str = "instruments:read";
/// List signed webhook endpoints.
pub const WEBHOOKS_READ: &str = "webhooks:read";
/// Manage signed webhook endpoints.
pub const WEBHOOKS_WRITE: &str = "webhooks:write";

/// Every scope a key can hold, in the spec's (canonical) order.
pub const ALL_SCOPES: [&str; 13] = [
    CATALOG_READ,
    QUOTES_WRITE,
    ORDERS_READ,
    ORDERS_WRITE,
    INVOICES_READ,
    PAYMENTS_READ,
    PAYMENTS_WRITE,
    SHIPMENTS_READ,
    RESULTS_READ,
    RAW_DATA_READ,
    INSTRUMENTS_READ,
    WEBHOOKS_READ,
    WEBHOOKS_WRITE,
];

/// True when `name` is a scope of [`ALL_SCOPES`].
pub fn is_known(name: &str) -> bool {
    ALL_SCOPES.contains(&name)
}

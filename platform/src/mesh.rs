//! The processes of the mesh by name: each signs its own tokens under this name, is the audience
//! of the tokens addressed to it, and stamps it as the `source` of the events it publishes.

/// The gateway (REST and MCP front door: API keys verified through identity-svc, scopes, limits).
pub const GATEWAY: &str = "gateway";
/// Customers, API keys, lab operators and their staff tokens.
pub const IDENTITY_SVC: &str = "identity-svc";
/// Catalog revisions and quotes.
pub const CATALOG_SVC: &str = "catalog-svc";
/// Orders.
pub const ORDERS_SVC: &str = "orders-svc";
/// Invoices and payments.
pub const PAYMENTS_SVC: &str = "payments-svc";
/// Labels, tracking and pickups.
pub const SHIPPING_SVC: &str = "shipping-svc";
/// COAs and results.
pub const RESULTS_SVC: &str = "results-svc";
/// Webhook endpoints and deliveries.
pub const WEBHOOKS_SVC: &str = "webhooks-svc";

/// Every process of the mesh.
pub const ALL: [&str; 8] = [
    GATEWAY,
    IDENTITY_SVC,
    CATALOG_SVC,
    ORDERS_SVC,
    PAYMENTS_SVC,
    SHIPPING_SVC,
    RESULTS_SVC,
    WEBHOOKS_SVC,
];

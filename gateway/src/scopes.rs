//! The scopes of API keys and the one table that says what every REST operation of the spec
//! needs: its scopes (or that it is public) and whether it requires `Idempotency-Key`.
//!
//! The table covers every operation of the spec's REST table, including the ones that are not
//! routed yet and the ones whose scope the spec leaves open ("see Authentication"); the
//! decisions for those are marked `decided` below and explained in `docs/scopes.md`. The auth
//! layer looks every routed request up here (an unlisted route is refused), and the OpenAPI
//! document takes each operation's scope and idempotency header from here. The webhook
//! subscription rule (`webhooks:write` plus the read scope of every selected event) is
//! `proto::event_data`'s, checked through `platform::access::require_subscription`.

use http::Method;
use platform::error::{ApiError, ErrorCode};

pub use proto::scopes::{
    ALL_SCOPES, CATALOG_READ, INSTRUMENTS_READ, INVOICES_READ, ORDERS_READ, ORDERS_WRITE, PAYMENTS_READ,
    PAYMENTS_WRITE, QUOTES_WRITE, RAW_DATA_READ, RESULTS_READ, SHIPMENTS_READ, WEBHOOKS_READ, WEBHOOKS_WRITE,
};

/// The value that stands for every scope when a key is created.
pub const ALL: &str = "all";

/// Expands and validates requested scopes: `all` means every scope; an unknown name is
/// `invalid_request` on field `scopes`; the result is deduplicated in canonical order.
pub fn expand(requested: &[String]) -> Result<Vec<String>, ApiError> {
    if requested.is_empty() {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "scopes",
            "at least one scope is required",
        ));
    }
    let mut wanted = [false; ALL_SCOPES.len()];
    for name in requested {
        let name = name.trim();
        if name == ALL {
            wanted = [true; ALL_SCOPES.len()];
            continue;
        }
        let Some(index) = ALL_SCOPES.iter().position(|scope| *scope == name) else {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "scopes",
                format!("unknown scope {name:?}"),
            )
            .with_details(serde_json::json!({ "allowed": ALL_SCOPES })));
        };
        wanted[index] = true;
    }
    Ok(ALL_SCOPES
        .iter()
        .zip(wanted)
        .filter(|(_, on)| *on)
        .map(|(scope, _)| (*scope).to_owned())
        .collect())
}

/// Who may call an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// An API key holding every listed scope.
    Scopes(&'static [&'static str]),
    /// Anyone, without a key; rate-limited per client IP (the verify operations also by the
    /// global `verify-lookups` ceiling).
    Public,
}

/// One REST operation of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    /// HTTP method in upper case.
    pub method: &'static str,
    /// Path template relative to `/api/v1/agent`, in axum/OpenAPI syntax.
    pub path: &'static str,
    pub access: Access,
    /// The spec requires the `Idempotency-Key` header.
    pub idempotent: bool,
    /// The scope is the team's decision (see docs/scopes.md): the spec says "see Authentication",
    /// or the operation is our addition ([`Operation::addition`]).
    pub decided: bool,
    /// Not in the spec's REST table: an operation we added.
    pub addition: bool,
}

const fn op(method: &'static str, path: &'static str, scopes: &'static [&'static str]) -> Operation {
    Operation {
        method,
        path,
        access: Access::Scopes(scopes),
        idempotent: false,
        decided: false,
        addition: false,
    }
}

const fn idempotent(operation: Operation) -> Operation {
    Operation {
        idempotent: true,
        ..operation
    }
}

const fn decided(operation: Operation) -> Operation {
    Operation {
        decided: true,
        ..operation
    }
}

const fn addition(operation: Operation) -> Operation {
    Operation {
        decided: true,
        addition: true,
        ..operation
    }
}

const fn public(method: &'static str, path: &'static str) -> Operation {
    Operation {
        method,
        path,
        access: Access::Public,
        idempotent: false,
        decided: true,
        addition: false,
    }
}

/// Every operation of the spec's REST table, in the spec's order, then our additions.
pub const OPERATIONS: &[Operation] = &[
    op("GET", "/catalog", &[CATALOG_READ]),
    op("POST", "/quotes", &[QUOTES_WRITE]),
    op("GET", "/orders", &[ORDERS_READ]),
    idempotent(op("POST", "/orders", &[ORDERS_WRITE])),
    op("GET", "/orders/{reference}", &[ORDERS_READ]),
    op("GET", "/orders/{reference}/raw-data", &[RAW_DATA_READ]),
    op("GET", "/orders/{reference}/pickup", &[SHIPMENTS_READ]),
    op("POST", "/orders/{reference}/pickup", &[ORDERS_WRITE]),
    decided(op("GET", "/orders/{reference}/eta", &[ORDERS_READ])),
    decided(op("GET", "/orders/{reference}/custody", &[ORDERS_READ])),
    decided(op("POST", "/orders/{reference}/addons", &[ORDERS_WRITE])),
    decided(op("POST", "/orders/{reference}/cancel-request", &[ORDERS_WRITE])),
    decided(op("GET", "/orders/{reference}/samples", &[ORDERS_READ])),
    op("GET", "/orders/{reference}/instrument-data", &[INSTRUMENTS_READ]),
    op("GET", "/invoices", &[INVOICES_READ]),
    op("GET", "/invoices/{reference}", &[INVOICES_READ]),
    op("GET", "/payments", &[PAYMENTS_READ]),
    op("GET", "/payments/{reference}", &[PAYMENTS_READ]),
    idempotent(op("POST", "/payments/prepare", &[PAYMENTS_WRITE])),
    idempotent(op("POST", "/payments/stablecoin/submit", &[PAYMENTS_WRITE])),
    addition(op("GET", "/payments/stablecoin/{reference}", &[PAYMENTS_READ])),
    addition(op("GET", "/spend-envelope", &[PAYMENTS_READ])),
    op("GET", "/shipments", &[SHIPMENTS_READ]),
    op("GET", "/shipments/{reference}", &[SHIPMENTS_READ]),
    op("GET", "/shipments/{reference}/label", &[SHIPMENTS_READ]),
    op("GET", "/results", &[RESULTS_READ]),
    op("GET", "/results/{reference}", &[RESULTS_READ]),
    decided(op("GET", "/results/{reference}/analytes", &[RESULTS_READ])),
    op("GET", "/results/{reference}/instrument-data", &[INSTRUMENTS_READ]),
    decided(op("GET", "/instruments", &[CATALOG_READ])),
    decided(op("GET", "/methods", &[CATALOG_READ])),
    decided(op("GET", "/export/coas", &[RESULTS_READ])),
    op("GET", "/export/instrument-results", &[INSTRUMENTS_READ]),
    decided(op("GET", "/support/tickets", &[ORDERS_READ])),
    decided(op("POST", "/support/tickets", &[ORDERS_WRITE])),
    decided(op(
        "POST",
        "/notifications/customer-coa",
        &[RESULTS_READ, ORDERS_WRITE],
    )),
    public("GET", "/verify"),
    public("POST", "/verify"),
    public("GET", "/verify/batch"),
    public("POST", "/verify/batch"),
    op("GET", "/webhooks", &[WEBHOOKS_READ]),
    idempotent(op("POST", "/webhooks", &[WEBHOOKS_WRITE])),
    idempotent(op("DELETE", "/webhooks/{endpointId}", &[WEBHOOKS_WRITE])),
    idempotent(op(
        "POST",
        "/webhooks/{endpointId}/rotate-secret",
        &[WEBHOOKS_WRITE],
    )),
    idempotent(op("POST", "/webhooks/{endpointId}/test", &[WEBHOOKS_WRITE])),
    addition(op("GET", "/webhooks/{endpointId}/deliveries", &[WEBHOOKS_READ])),
];

/// Looks up the operation of `method` on the path template `path` (relative to
/// `/api/v1/agent`). HEAD is answered by the GET route, so it needs what GET needs.
pub fn operation(method: &Method, path: &str) -> Option<&'static Operation> {
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    OPERATIONS
        .iter()
        .find(|operation| operation.method == method && operation.path == path)
}

/// Returns `insufficient_scope` (403, details.required = every scope of the operation, and
/// details.missing) unless `held` contains all scopes `required`: the platform's one scope check.
pub use platform::access::require_scopes as check;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_expands_to_every_scope_and_unknown_scopes_are_refused() {
        assert_eq!(expand(&["all".into()]).unwrap().len(), 13);
        let expanded = expand(&[
            "orders:write".into(),
            "catalog:read".into(),
            "orders:write".into(),
        ])
        .unwrap();
        assert_eq!(expanded, vec!["catalog:read", "orders:write"]);
        let error = expand(&["orders:delete".into()]).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert_eq!(error.details.unwrap()["field"], "scopes");
        assert!(expand(&[]).is_err());
    }

    #[test]
    fn the_table_lists_each_operation_once_with_known_scopes() {
        // The spec's one row "GET, POST /verify and /verify/batch" is four operations here.
        assert_eq!(OPERATIONS.len(), 46);
        assert_eq!(OPERATIONS.iter().filter(|o| o.addition).count(), 3);
        for (index, operation) in OPERATIONS.iter().enumerate() {
            let duplicate = OPERATIONS[..index]
                .iter()
                .any(|o| o.method == operation.method && o.path == operation.path);
            assert!(
                !duplicate,
                "{} {} is listed twice",
                operation.method, operation.path
            );
            if let Access::Scopes(scopes) = operation.access {
                assert!(!scopes.is_empty());
                assert!(
                    scopes.iter().all(|scope| ALL_SCOPES.contains(scope)),
                    "{}",
                    operation.path
                );
            }
        }
        for (_, scope) in proto::event_data::EVENT_KINDS {
            assert!(ALL_SCOPES.contains(&scope));
        }
    }

    #[test]
    fn head_needs_what_get_needs_and_missing_scopes_are_reported() {
        let catalog = operation(&Method::HEAD, "/catalog").unwrap();
        assert_eq!(catalog.access, Access::Scopes(&[CATALOG_READ]));
        assert!(operation(&Method::PATCH, "/catalog").is_none());
        let error = check(&[RESULTS_READ, ORDERS_WRITE], &["results:read".into()]).unwrap_err();
        assert_eq!(error.code, ErrorCode::InsufficientScope);
        assert_eq!(
            error.details.unwrap()["required"],
            serde_json::json!(["results:read", "orders:write"])
        );
    }
}

//! The scope table: what every REST operation of the spec needs, its
//! scopes (or that it is public) and whether it takes `Idempotency-Key`.
//!
//! The table covers every operation of the spec's REST table and our additions: the built ones
//! ([`BUILT`]) come from their one declaration in `crate::operation_table`; the ones not routed
//! yet are listed in [`NOT_BUILT`]. The scopes the spec leaves open ("see Authentication") are
//! marked `decided` and explained in `docs/scopes.md`. The auth layer looks every routed request
//! up here (an unlisted route is refused; an unrouted operation is 404 after authentication),
//! and the OpenAPI document takes each operation's scope and idempotency header from here. The
//! webhook subscription rule (`webhooks:write` plus the read scope of every selected event) is
//! `proto::event_data`'s, checked through `platform::access::require_subscription`.

use http::Method;

pub use proto::scopes::{
    ALL_SCOPES, CATALOG_READ, INSTRUMENTS_READ, INVOICES_READ, ORDERS_READ, ORDERS_WRITE, PAYMENTS_READ,
    PAYMENTS_WRITE, QUOTES_WRITE, RAW_DATA_READ, RESULTS_READ, SHIPMENTS_READ, WEBHOOKS_READ, WEBHOOKS_WRITE,
};

/// Who may call an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// An API key holding every listed scope.
    Scopes(&'static [&'static str]),
    /// Anyone, without a key; rate-limited per client IP (the verify operations also by the
    /// global `verify-lookups` ceiling).
    Public,
}

/// Whether an operation takes the `Idempotency-Key` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idempotency {
    /// It does not take one.
    None,
    /// It takes one and works without (`POST /orders/{reference}/pickup`: the spec does not
    /// require the header there).
    Optional,
    /// The spec requires it.
    Required,
}

/// One REST operation of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    /// HTTP method in upper case.
    pub method: &'static str,
    /// Path template relative to `/api/v1/agent`, in axum/OpenAPI syntax.
    pub path: &'static str,
    pub access: Access,
    /// Whether it takes `Idempotency-Key`.
    pub idempotency: Idempotency,
    /// The scope is the team's decision (see docs/scopes.md): the spec says "see Authentication",
    /// or the operation is our addition ([`Operation::addition`]).
    pub decided: bool,
    /// Not in the spec's REST table: an operation we added.
    pub addition: bool,
}

impl Operation {
    /// True when the operation requires `Idempotency-Key`.
    pub fn requires_idempotency_key(&self) -> bool {
        self.idempotency == Idempotency::Required
    }
}

/// The scope-table entries of the declarations of `crate::operation_table`.
macro_rules! built {
    ($({ route: $method:ident $path:literal, tool: $tool:tt, scope: $scope:tt, rest: $rest:tt, call: $call:tt, })*) => {
        /// Every built (routed) operation, from its one declaration in `crate::operation_table`.
        pub const BUILT: &[Operation] = &[$(built!(@entry $method $path $scope)),*];
    };
    (@entry $method:ident $path:literal { access: $access:tt, origin: $origin:ident, idempotency: $idempotency:ident }) => {
        Operation {
            method: crate::operation_table::method_name!($method),
            path: $path,
            access: built!(@access $access),
            idempotency: built!(@idempotency $idempotency),
            decided: built!(@decided $origin),
            addition: built!(@addition $origin),
        }
    };
    (@access public) => { Access::Public };
    (@access [$($scope:ident),+]) => { Access::Scopes(&[$($scope),+]) };
    (@idempotency none) => { Idempotency::None };
    (@idempotency optional) => { Idempotency::Optional };
    (@idempotency required) => { Idempotency::Required };
    (@decided spec) => { false };
    (@decided decided) => { true };
    (@decided addition) => { true };
    (@addition addition) => { true };
    (@addition $other:ident) => { false };
}

crate::operation_table::operation_table!(built);

/// The operations of the spec's REST table that are not built yet, in the spec's order: not
/// routed (a call with a key is authenticated, then 404; a public one is 404 without a key), no
/// tool. Building one moves it from here to a declaration of `crate::operation_table` (a test
/// holds the two lists apart). Empty since every operation of the spec is built.
pub const NOT_BUILT: &[Operation] = &[];

/// Operations (method, path) that only sandbox customers' keys reach (docs/sandbox.md): any
/// other key gets 404 `not_found` before its scopes are checked, as for a path that does not
/// exist, and MCP lists and calls their tools for sandbox keys only. The services refuse the
/// same calls on their own (`platform::access::Rule::sandbox_only`).
pub const SANDBOX_ONLY: &[(&str, &str)] = &[("POST", "/orders/{reference}/simulate")];

/// Whether `method` on the path template `path` (relative to `/api/v1/agent`) is sandbox-only.
pub fn sandbox_only(method: &str, path: &str) -> bool {
    SANDBOX_ONLY
        .iter()
        .any(|(only_method, only_path)| *only_method == method && *only_path == path)
}

/// Every operation of the spec's REST table and our additions: the built ones, then the others.
pub fn all() -> impl Iterator<Item = &'static Operation> {
    BUILT.iter().chain(NOT_BUILT)
}

/// Looks up the operation of `method` on the path template `path` (relative to
/// `/api/v1/agent`). HEAD is answered by the GET route, so it needs what GET needs.
pub fn operation(method: &Method, path: &str) -> Option<&'static Operation> {
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    all().find(|operation| operation.method == method && operation.path == path)
}

/// Returns `insufficient_scope` (403, details.required = every scope of the operation, and
/// details.missing) unless `held` contains all scopes `required`: the platform's one scope check.
pub use platform::access::require_scopes as check;

#[cfg(test)]
mod tests {
    use super::*;
    use platform::error::ErrorCode;

    #[test]
    fn the_table_lists_each_operation_once_with_known_scopes() {
        // The spec's one row "GET, POST /verify and /verify/batch" is four operations here.
        let operations: Vec<&Operation> = all().collect();
        assert_eq!((BUILT.len(), NOT_BUILT.len(), operations.len()), (52, 0, 52));
        assert_eq!(operations.iter().filter(|o| o.addition).count(), 9);
        for (method, path) in SANDBOX_ONLY {
            assert!(
                BUILT
                    .iter()
                    .any(|o| o.method == *method && o.path == *path && o.addition)
            );
        }
        assert!(
            NOT_BUILT.iter().all(|o| !o.addition),
            "an addition is built with its declaration"
        );
        for (index, operation) in operations.iter().enumerate() {
            // A built operation listed again as not built would be both routed and not.
            let duplicate = operations[..index]
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

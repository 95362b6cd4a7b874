//! The authenticated caller as services see it: a customer's API key (authenticated by the
//! gateway), a lab operator (authenticated by the gateway's identity service) or a service of the
//! mesh acting for a customer. It travels in a signed token (`crate::tokens`); which principal
//! may call which operation is each service's access table (`crate::access`).

use crate::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What kind of caller a principal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// A customer's API key, authenticated by the gateway.
    Customer,
    /// A service of the mesh acting for a customer (or for none).
    Service,
    /// A lab operator using labctl, acting as themselves with the roles of one command.
    Staff,
}

/// Staff roles.
pub mod roles {
    /// Import catalog revisions.
    pub const CATALOG_ADMIN: &str = "catalog.admin";
    /// Record received payments.
    pub const PAYMENTS_ADMIN: &str = "payments.admin";
    /// Manage customers and API keys.
    pub const IDENTITY_ADMIN: &str = "identity.admin";
    /// Inspect deliveries, redeliver dead letters and replay events of any endpoint.
    pub const WEBHOOKS_ADMIN: &str = "webhooks.admin";
    /// Every role an operator can hold.
    pub const ALL: [&str; 4] = [CATALOG_ADMIN, PAYMENTS_ADMIN, IDENTITY_ADMIN, WEBHOOKS_ADMIN];
}

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    pub kind: PrincipalKind,
    /// API key id, service name or operator name.
    pub subject: String,
    /// The customer the caller acts for (customer and service principals).
    pub customer_id: Option<Uuid>,
    /// Scopes of the API key (customer principals).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Roles (staff principals).
    #[serde(default)]
    pub roles: Vec<String>,
    /// Largest order total the key may commit, in cents (customer principals).
    #[serde(default)]
    pub spend_limit_cents: Option<i64>,
}

impl Principal {
    /// A service acting for `customer_id`.
    pub fn service(name: &str, customer_id: Option<Uuid>) -> Self {
        Self {
            kind: PrincipalKind::Service,
            subject: name.to_owned(),
            customer_id,
            scopes: Vec::new(),
            roles: Vec::new(),
            spend_limit_cents: None,
        }
    }

    /// The customer a customer or service principal acts for; staff get `forbidden`.
    pub fn customer(&self) -> Result<Uuid, ApiError> {
        match (self.kind, self.customer_id) {
            (PrincipalKind::Customer | PrincipalKind::Service, Some(id)) => Ok(id),
            _ => Err(ApiError::new(
                ErrorCode::Forbidden,
                "this operation acts for a customer",
            )),
        }
    }

    /// Checks that a customer principal holds `scope`; no other kind of caller holds scopes.
    pub fn require_scope(&self, scope: &str) -> Result<(), ApiError> {
        match self.kind {
            PrincipalKind::Customer if self.scopes.iter().any(|held| held == scope) => Ok(()),
            PrincipalKind::Customer => Err(ApiError::new(
                ErrorCode::InsufficientScope,
                format!("the API key lacks the {scope} scope"),
            )
            .with_details(serde_json::json!({ "required": [scope] }))),
            PrincipalKind::Service | PrincipalKind::Staff => Err(ApiError::new(
                ErrorCode::Forbidden,
                "this operation is for API keys",
            )),
        }
    }

    /// Checks that a staff principal holds `role`.
    pub fn require_role(&self, role: &str) -> Result<(), ApiError> {
        if self.kind == PrincipalKind::Staff && self.roles.iter().any(|held| held == role) {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("this operation needs the staff role {role}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn customer() -> Principal {
        Principal {
            kind: PrincipalKind::Customer,
            subject: "key-1".into(),
            customer_id: Some(Uuid::nil()),
            scopes: vec!["orders:read".into()],
            roles: vec![],
            spend_limit_cents: Some(10_000),
        }
    }

    #[test]
    fn scopes_and_roles_are_enforced() {
        let principal = customer();
        assert!(principal.require_scope("orders:read").is_ok());
        assert_eq!(
            principal.require_scope("orders:write").unwrap_err().code,
            ErrorCode::InsufficientScope
        );
        assert_eq!(
            principal.require_role(roles::CATALOG_ADMIN).unwrap_err().code,
            ErrorCode::Forbidden
        );
    }

    #[test]
    fn a_service_principal_passes_no_scope_check() {
        let service = Principal::service("orders-svc", Some(Uuid::nil()));
        assert_eq!(
            service.require_scope("orders:read").unwrap_err().code,
            ErrorCode::Forbidden
        );
    }
}

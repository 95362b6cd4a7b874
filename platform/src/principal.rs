//! The authenticated caller as services see it: a customer's API key (authenticated by the
//! gateway), a lab operator (authenticated by the gateway's identity service) or a service of the
//! mesh acting for a customer. It travels in a signed token (`crate::tokens`); which principal
//! may call which operation is each service's access table (`crate::access`), the one place
//! scopes and roles are checked.

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
    /// Record carrier scans and play the sandbox carrier's scan scripts.
    pub const SHIPPING_ADMIN: &str = "shipping.admin";
    /// Receive samples and start testing (orders-svc).
    pub const LAB_TECHNICIAN: &str = "lab.technician";
    /// Record and submit results (results-svc).
    pub const LAB_ANALYST: &str = "lab.analyst";
    /// Approve or send back results, publish, retract and amend COAs (results-svc).
    pub const LAB_QA: &str = "lab.qa";
    /// Every role an operator can hold.
    pub const ALL: [&str; 8] = [
        CATALOG_ADMIN,
        PAYMENTS_ADMIN,
        IDENTITY_ADMIN,
        WEBHOOKS_ADMIN,
        SHIPPING_ADMIN,
        LAB_TECHNICIAN,
        LAB_ANALYST,
        LAB_QA,
    ];
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customer_or_service_principal_acts_for_its_customer_and_staff_for_none() {
        let service = Principal::service("orders-svc", Some(Uuid::nil()));
        assert_eq!(service.customer().unwrap(), Uuid::nil());
        let staff = Principal {
            kind: PrincipalKind::Staff,
            subject: "alice".into(),
            customer_id: None,
            scopes: vec![],
            roles: vec![roles::PAYMENTS_ADMIN.into()],
            spend_limit_cents: None,
        };
        assert_eq!(staff.customer().unwrap_err().code, ErrorCode::Forbidden);
    }
}

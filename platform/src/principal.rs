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
    /// Answer and close customers' support tickets (orders-svc).
    pub const SUPPORT_AGENT: &str = "support.agent";
    /// The prefix of the lab roles, which an operator holding `identity.admin` never holds.
    pub const LAB_PREFIX: &str = "lab.";
    /// Every role an operator can hold.
    pub const ALL: [&str; 9] = [
        CATALOG_ADMIN,
        PAYMENTS_ADMIN,
        IDENTITY_ADMIN,
        WEBHOOKS_ADMIN,
        SHIPPING_ADMIN,
        LAB_TECHNICIAN,
        LAB_ANALYST,
        LAB_QA,
        SUPPORT_AGENT,
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
    /// The operator's stable id (staff principals; required there): four eyes and revocation
    /// compare it, never the name. Absent from customer and service tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_id: Option<Uuid>,
    /// Public id of the credential a staff token was issued for (never the secret): rotating
    /// the credential revokes the tokens issued for the old one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<String>,
    /// The customer is a sandbox customer (customer principals; the gateway copies it from the
    /// key record): only a sandbox customer's key may call the rpcs an access rule marks
    /// `sandbox_only` (the simulation, docs/sandbox.md). Absent from the wire when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
}

/// The operator a staff principal names: stable id and (audit) name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorRef {
    pub id: Uuid,
    pub name: String,
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
            operator_id: None,
            credential_id: None,
            sandbox: false,
        }
    }

    /// The operator `name` (id `operator_id`) holding `roles`, for a token issued for the
    /// credential with public id `credential_id`.
    pub fn staff(name: &str, operator_id: Uuid, credential_id: Option<String>, roles: Vec<String>) -> Self {
        Self {
            kind: PrincipalKind::Staff,
            subject: name.to_owned(),
            customer_id: None,
            scopes: Vec::new(),
            roles,
            spend_limit_cents: None,
            operator_id: Some(operator_id),
            credential_id,
            sandbox: false,
        }
    }

    /// The operator a staff principal names; `forbidden` for other principals and
    /// `unauthenticated` for a staff principal without an operator id.
    pub fn operator(&self) -> Result<OperatorRef, ApiError> {
        match (self.kind, self.operator_id) {
            (PrincipalKind::Staff, Some(id)) => Ok(OperatorRef {
                id,
                name: self.subject.clone(),
            }),
            (PrincipalKind::Staff, None) => Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "the staff token names no operator id",
            )),
            _ => Err(ApiError::new(
                ErrorCode::Forbidden,
                "this operation is for operators",
            )),
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
    fn customer_and_service_principals_carry_no_operator_fields_on_the_wire() {
        let service = serde_json::to_value(Principal::service("orders-svc", Some(Uuid::nil()))).unwrap();
        assert!(service.get("operator_id").is_none() && service.get("credential_id").is_none());
        let staff = Principal::staff("alice", Uuid::nil(), Some("pub1".into()), vec![]);
        let wire = serde_json::to_value(&staff).unwrap();
        assert_eq!(wire["operator_id"], Uuid::nil().to_string());
        assert_eq!(serde_json::from_value::<Principal>(wire).unwrap(), staff);
    }

    #[test]
    fn a_customer_or_service_principal_acts_for_its_customer_and_staff_for_none() {
        let service = Principal::service("orders-svc", Some(Uuid::nil()));
        assert_eq!(service.customer().unwrap(), Uuid::nil());
        let id = Uuid::now_v7();
        let staff = Principal::staff("alice", id, None, vec![roles::PAYMENTS_ADMIN.into()]);
        assert_eq!(staff.customer().unwrap_err().code, ErrorCode::Forbidden);
        assert_eq!(staff.operator().unwrap().id, id);
        assert_eq!(service.operator().unwrap_err().code, ErrorCode::Forbidden);
    }
}

//! Tokens for tests (feature `testing`), signed with the published development keys exactly as
//! the mesh signs them in development mode: customer principals by the gateway's key, staff
//! principals by identity-svc's, service principals by the named service's own key.

use super::{GATEWAY_ISSUER, IDENTITY_ISSUER, STAFF_TOKEN_TTL, SigningKey, TOKEN_TTL, TokenIssuer};
use crate::principal::{Principal, PrincipalKind};
use uuid::Uuid;

/// Mints tokens addressed to one service under test.
#[derive(Clone, Debug)]
pub struct DevTokens {
    audience: String,
}

impl DevTokens {
    /// Tokens for `audience` (the service name, e.g. `catalog-svc`).
    pub fn new(audience: &str) -> Self {
        Self {
            audience: audience.to_owned(),
        }
    }

    /// A token carrying `principal`, signed by whoever may sign it (the gateway for customers,
    /// identity-svc for staff, the service itself for a service principal).
    pub fn mint(&self, principal: &Principal) -> String {
        let (issuer, ttl) = match principal.kind {
            PrincipalKind::Service => (principal.subject.as_str(), TOKEN_TTL),
            PrincipalKind::Customer => (GATEWAY_ISSUER, TOKEN_TTL),
            PrincipalKind::Staff => (IDENTITY_ISSUER, STAFF_TOKEN_TTL),
        };
        TokenIssuer::new(issuer, SigningKey::development(issuer)).mint(principal, &self.audience, ttl)
    }

    /// A token of `service` acting for `customer_id`, signed with that service's key.
    pub fn mint_service(&self, service: &str, customer_id: Option<Uuid>) -> String {
        self.mint(&Principal::service(service, customer_id))
    }

    /// A customer token holding `scopes`.
    pub fn customer(&self, customer_id: Uuid, scopes: &[&str]) -> String {
        self.mint(&Principal {
            kind: PrincipalKind::Customer,
            subject: format!("key-{customer_id}"),
            customer_id: Some(customer_id),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            roles: Vec::new(),
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        })
    }

    /// A staff token of `operator` (id [`operator_id`] of the name) holding `roles`.
    pub fn staff(&self, operator: &str, roles: &[&str]) -> String {
        self.staff_with_id(operator, operator_id(operator), roles)
    }

    /// A staff token of the operator with id `id` under the name `operator`, holding `roles`.
    pub fn staff_with_id(&self, operator: &str, id: Uuid, roles: &[&str]) -> String {
        let roles = roles.iter().map(|role| (*role).to_owned()).collect();
        self.mint(&Principal::staff(operator, id, None, roles))
    }

    /// The same principal signed by `issuer`'s development key, whoever may sign it (for tests
    /// that prove forgeries are refused).
    pub fn forged_by(&self, issuer: &str, principal: &Principal) -> String {
        TokenIssuer::new(issuer, SigningKey::development(issuer)).mint(principal, &self.audience, TOKEN_TTL)
    }
}

/// The stable operator id tests give the operator `name` (derived from the name, so that two
/// tokens of one test operator name the same operator).
pub fn operator_id(name: &str) -> Uuid {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("test operator:{name}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// The gateway's delegation for a request of `customer_id`'s key (`crate::delegation`), signed
/// with the gateway's development key: what lets a service call for that customer.
pub fn delegation(customer_id: Uuid) -> crate::delegation::CustomerContext {
    let principal = Principal {
        kind: PrincipalKind::Customer,
        subject: format!("key-{customer_id}"),
        customer_id: Some(customer_id),
        scopes: Vec::new(),
        roles: Vec::new(),
        spend_limit_cents: None,
        operator_id: None,
        credential_id: None,
        sandbox: false,
    };
    let token = TokenIssuer::new(GATEWAY_ISSUER, SigningKey::development(GATEWAY_ISSUER))
        .delegation(&principal, "test-request")
        .expect("a customer principal has a delegation");
    crate::delegation::CustomerContext::Delegation(token.into())
}

/// `request` carrying the gateway's delegation for `customer_id`.
pub fn delegated<T>(mut request: tonic::Request<T>, customer_id: Uuid) -> tonic::Request<T> {
    delegation(customer_id).attach(request.metadata_mut());
    request
}

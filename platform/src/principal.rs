//! The authenticated caller as services see it, and the short-lived signed token that carries it.
//!
//! Services never trust plain headers: the gateway authenticates the API key and passes the
//! principal (customer, key id, scopes, spend envelope) as an HS256 JWT in the `authorization`
//! metadata of every gRPC call. Services calling each other mint a `service` token for the
//! customer they act for. Staff tools (labctl) carry `staff` tokens signed with a separate secret
//! and listing roles. Tokens live for [`TOKEN_TTL`].

use crate::error::{ApiError, ErrorCode};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use uuid::Uuid;

/// Lifetime of a principal token; long enough for one request and its internal calls.
pub const TOKEN_TTL: Duration = Duration::from_secs(120);
/// Lifetime of a staff token minted by labctl.
pub const STAFF_TOKEN_TTL: Duration = Duration::from_secs(600);
const ISSUER: &str = "lab-mesh";
const KID_INTERNAL: &str = "internal";
const KID_STAFF: &str = "staff";

/// What kind of caller a principal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// A customer's API key, authenticated by the gateway.
    Customer,
    /// A service of the mesh acting for a customer (or for none).
    Service,
    /// A member of the lab staff using labctl.
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
    /// Every role, as labctl asks for by default.
    pub const ALL: [&str; 4] = [CATALOG_ADMIN, PAYMENTS_ADMIN, IDENTITY_ADMIN, WEBHOOKS_ADMIN];
}

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub kind: PrincipalKind,
    /// API key id, service name or staff user name.
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

    /// Checks that a customer principal holds `scope`; service principals are trusted callers.
    pub fn require_scope(&self, scope: &str) -> Result<(), ApiError> {
        match self.kind {
            PrincipalKind::Service => Ok(()),
            PrincipalKind::Customer if self.scopes.iter().any(|held| held == scope) => Ok(()),
            PrincipalKind::Customer => Err(ApiError::new(
                ErrorCode::InsufficientScope,
                format!("the API key lacks the {scope} scope"),
            )
            .with_details(serde_json::json!({ "required": [scope] }))),
            PrincipalKind::Staff => Err(ApiError::new(
                ErrorCode::Forbidden,
                "staff tokens cannot call customer operations",
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

    /// Checks that the caller is a service of the mesh.
    pub fn require_service(&self) -> Result<(), ApiError> {
        if self.kind == PrincipalKind::Service {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::Forbidden,
                "this operation is internal to the mesh",
            ))
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    iat: u64,
    exp: u64,
    #[serde(flatten)]
    principal: Principal,
}

/// Mints and verifies principal tokens.
#[derive(Clone)]
pub struct TokenKeys {
    internal_encoding: EncodingKey,
    internal_decoding: DecodingKey,
    staff_encoding: EncodingKey,
    staff_decoding: DecodingKey,
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKeys(..)")
    }
}

impl TokenKeys {
    /// Builds the keys from the internal and staff secrets.
    pub fn new(internal_secret: &SecretString, staff_secret: &SecretString) -> Self {
        let internal = internal_secret.expose_secret().as_bytes();
        let staff = staff_secret.expose_secret().as_bytes();
        Self {
            internal_encoding: EncodingKey::from_secret(internal),
            internal_decoding: DecodingKey::from_secret(internal),
            staff_encoding: EncodingKey::from_secret(staff),
            staff_decoding: DecodingKey::from_secret(staff),
        }
    }

    /// Mints a token for a customer or service principal.
    pub fn mint(&self, principal: &Principal) -> String {
        let (kid, key, ttl) = match principal.kind {
            PrincipalKind::Staff => (KID_STAFF, &self.staff_encoding, STAFF_TOKEN_TTL),
            _ => (KID_INTERNAL, &self.internal_encoding, TOKEN_TTL),
        };
        let now = unix_now();
        let claims = Claims {
            iss: ISSUER.to_owned(),
            sub: principal.subject.clone(),
            iat: now,
            exp: now + ttl.as_secs(),
            principal: principal.clone(),
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(kid.to_owned());
        // Encoding HS256 claims made of strings and numbers cannot fail.
        jsonwebtoken::encode(&header, &claims, key).unwrap_or_default()
    }

    /// Mints a service token for `service` acting for `customer_id`.
    pub fn mint_service(&self, service: &str, customer_id: Option<Uuid>) -> String {
        self.mint(&Principal::service(service, customer_id))
    }

    /// Verifies a token and returns its principal; `unauthenticated` when invalid or expired.
    pub fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let invalid = || {
            ApiError::new(
                ErrorCode::Unauthenticated,
                "the internal principal token is missing or invalid",
            )
        };
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid())?;
        let key = match header.kid.as_deref() {
            Some(KID_INTERNAL) => &self.internal_decoding,
            Some(KID_STAFF) => &self.staff_decoding,
            _ => return Err(invalid()),
        };
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.leeway = 5;
        let data = jsonwebtoken::decode::<Claims>(token, key, &validation).map_err(|_| invalid())?;
        let principal = data.claims.principal;
        // A staff-signed token cannot claim to be a customer, and an internal one cannot claim staff.
        let consistent = match header.kid.as_deref() {
            Some(KID_STAFF) => principal.kind == PrincipalKind::Staff,
            _ => principal.kind != PrincipalKind::Staff,
        };
        if consistent { Ok(principal) } else { Err(invalid()) }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> TokenKeys {
        TokenKeys::new(&"internal".to_owned().into(), &"staff".to_owned().into())
    }

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
    fn a_minted_token_verifies_to_the_same_principal() {
        let keys = keys();
        assert_eq!(keys.verify(&keys.mint(&customer())).unwrap(), customer());
    }

    #[test]
    fn a_token_signed_with_another_secret_is_refused() {
        let other = TokenKeys::new(&"other".to_owned().into(), &"staff".to_owned().into());
        let error = keys().verify(&other.mint(&customer())).unwrap_err();
        assert_eq!(error.code, ErrorCode::Unauthenticated);
    }

    #[test]
    fn a_staff_token_cannot_carry_a_customer_principal() {
        let keys = keys();
        let now = unix_now();
        let claims = Claims {
            iss: ISSUER.into(),
            sub: "x".into(),
            iat: now,
            exp: now + 60,
            principal: customer(),
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(KID_STAFF.into());
        let forged = jsonwebtoken::encode(&header, &claims, &keys.staff_encoding).unwrap();
        assert!(keys.verify(&forged).is_err());
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
}

//! Customers and API-key records, and the validation of what staff send to create them.

use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::ids::parse_uuid;
use uuid::Uuid;

/// A customer of the lab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Customer {
    pub id: Uuid,
    pub name: String,
    pub email: String,
    pub created_at: DateTime<Utc>,
    /// A sandbox customer (docs/sandbox.md).
    pub sandbox: bool,
}

/// An API key as stored, without its verifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub public_id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub spend_limit_cents: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// The key's customer is a sandbox customer.
    pub sandbox: bool,
}

/// A validated request to create a customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCustomer {
    pub name: String,
    /// Trimmed and lowercased.
    pub email: String,
}

impl NewCustomer {
    /// Validates a name (1 to 200 characters) and an email address (normalized to lower case).
    pub fn parse(name: &str, email: &str) -> Result<Self, ApiError> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "name",
                "name must be 1 to 200 characters",
            ));
        }
        let email = email.trim().to_lowercase();
        let well_formed = email.len() <= 254
            && !email.chars().any(char::is_whitespace)
            && email.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty()
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
                    && !domain.contains('@')
            });
        if !well_formed {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "email",
                "email is not a valid address",
            ));
        }
        Ok(Self {
            name: name.to_owned(),
            email,
        })
    }
}

/// A validated request to create an API key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewApiKey {
    pub customer_id: Uuid,
    pub name: String,
    /// Expanded (`all` resolved), deduplicated, canonical order.
    pub scopes: Vec<String>,
    pub spend_limit_cents: Option<i64>,
}

impl NewApiKey {
    /// Validates the customer id, the name (blank becomes "default", at most 200 characters),
    /// the scopes and a non-negative spend limit.
    pub fn parse(
        customer_id: &str,
        name: &str,
        scopes: &[String],
        spend_limit_cents: Option<i64>,
    ) -> Result<Self, ApiError> {
        let customer_id = parse_uuid("customerId", customer_id)?;
        let name = match name.trim() {
            "" => "default",
            name => name,
        };
        if name.chars().count() > 200 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "name",
                "name must be at most 200 characters",
            ));
        }
        if spend_limit_cents.is_some_and(|limit| limit < 0) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "spendLimitCents",
                "spend limit must not be negative",
            ));
        }
        let scopes = super::scopes::expand(scopes)?;
        Ok(Self {
            customer_id,
            name: name.to_owned(),
            scopes,
            spend_limit_cents,
        })
    }
}

/// How a key to revoke is named: its UUID or its public id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyRef {
    Id(Uuid),
    PublicId(String),
}

impl KeyRef {
    /// Reads a key id (UUID) or public id; anything else is `invalid_request` on field `key`.
    pub fn parse(value: &str) -> Result<Self, ApiError> {
        let value = value.trim();
        if let Ok(id) = Uuid::parse_str(value) {
            return Ok(Self::Id(id));
        }
        let public = value.len() == crate::domain::api_key::PUBLIC_ID_LEN
            && value
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
        if public {
            Ok(Self::PublicId(value.to_owned()))
        } else {
            Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "key",
                "key must be a key id or a public id",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalized_and_checked() {
        let customer = NewCustomer::parse(" Acme Labs ", " Ops@Acme.Example ").unwrap();
        assert_eq!(customer.email, "ops@acme.example");
        assert_eq!(customer.name, "Acme Labs");
        for bad in [
            "",
            "acme",
            "a@b",
            "@acme.example",
            "a b@acme.example",
            "a@.example",
        ] {
            assert_eq!(
                NewCustomer::parse("Acme", bad).unwrap_err().code,
                ErrorCode::InvalidRequest,
                "{bad}"
            );
        }
        assert!(NewCustomer::parse(" ", "a@acme.example").is_err());
    }

    #[test]
    fn key_requests_expand_scopes_and_refuse_negative_limits() {
        let id = Uuid::new_v4().to_string();
        let key = NewApiKey::parse(&id, "", &["all".into()], Some(10_000)).unwrap();
        assert_eq!(key.name, "default");
        assert_eq!(key.scopes.len(), 13);
        assert!(NewApiKey::parse(&id, "ci", &["orders:read".into()], Some(-1)).is_err());
        assert!(NewApiKey::parse("nope", "ci", &["orders:read".into()], None).is_err());
    }

    #[test]
    fn key_references_are_ids_or_public_ids() {
        let id = Uuid::new_v4();
        assert_eq!(KeyRef::parse(&id.to_string()).unwrap(), KeyRef::Id(id));
        assert_eq!(
            KeyRef::parse("abcdefgh12345678").unwrap(),
            KeyRef::PublicId("abcdefgh12345678".into())
        );
        assert!(KeyRef::parse("svc_live_x").is_err());
    }
}

//! Lab operators: their credential format `lab_op_<public-id>_<secret>` (the API-key format under
//! another prefix, with the same peppered verifier), their validated names and roles, and the
//! published development operator that exists only in development mode.

use platform::error::{ApiError, ErrorCode};
use platform::principal::roles;
use uuid::Uuid;

/// Prefix of every operator credential.
pub const CREDENTIAL_PREFIX: &str = "lab_op_";
/// Name of the development operator (development mode only).
pub const DEV_OPERATOR_NAME: &str = "dev-operator";
/// Public id of the development operator's credential.
pub const DEV_OPERATOR_PUBLIC_ID: &str = "devoperator00000";
/// The published credential of the development operator: every role, development mode only.
pub const DEV_OPERATOR_CREDENTIAL: &str = "lab_op_devoperator00000_DevelopmentOperatorSecret0000000";
/// Longest operator name.
const MAX_NAME_CHARS: usize = 64;

/// A registered operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator {
    pub id: Uuid,
    pub name: String,
    pub public_id: String,
    pub roles: Vec<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub created_by: String,
    pub disabled_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Validates an operator name: 1 to 64 characters of lowercase letters, digits, `.`, `-`, `_`
/// (names land in audit columns and logs, so they stay plain).
pub fn parse_name(name: &str) -> Result<String, ApiError> {
    let name = name.trim();
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || !plain {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "name",
            "an operator name is 1 to 64 characters of lowercase letters, digits, '.', '-' or '_'",
        ));
    }
    Ok(name.to_owned())
}

/// Expands and validates role names: `all` means every role; unknown names are refused.
pub fn parse_roles(requested: &[String]) -> Result<Vec<String>, ApiError> {
    let mut held: Vec<String> = Vec::new();
    for name in requested.iter().map(|name| name.trim()) {
        if name == "all" {
            return Ok(roles::ALL.iter().map(|role| (*role).to_owned()).collect());
        }
        if !roles::ALL.contains(&name) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "roles",
                format!("unknown role {name:?}"),
            )
            .with_details(serde_json::json!({ "allowed": roles::ALL })));
        }
        if !held.iter().any(|role| role == name) {
            held.push(name.to_owned());
        }
    }
    if held.is_empty() {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "roles",
            "at least one role is required",
        ));
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::api_key::PresentedKey;

    #[test]
    fn the_development_credential_has_the_credential_format() {
        let presented = PresentedKey::parse_with_prefix(CREDENTIAL_PREFIX, DEV_OPERATOR_CREDENTIAL).unwrap();
        assert_eq!(presented.public_id, DEV_OPERATOR_PUBLIC_ID);
        assert!(PresentedKey::parse(DEV_OPERATOR_CREDENTIAL).is_none());
    }

    #[test]
    fn names_and_roles_are_validated() {
        assert_eq!(parse_name(" alice ").unwrap(), "alice");
        assert!(parse_name("Alice Smith").is_err());
        assert!(parse_name("").is_err());
        assert_eq!(parse_roles(&["all".into()]).unwrap().len(), roles::ALL.len());
        assert_eq!(
            parse_roles(&["payments.admin".into(), "payments.admin".into()]).unwrap(),
            vec!["payments.admin"]
        );
        assert!(parse_roles(&["root".into()]).is_err());
        assert!(parse_roles(&[]).is_err());
    }
}

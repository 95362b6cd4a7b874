//! Lab operators: their credential format `lab_op_<public-id>_<secret>` (the API-key format under
//! another prefix, with the same peppered verifier), their validated names and roles, the rules
//! on roles (an admin never works in the lab; a QA officer or an admin needs a second admin's
//! approval) and the published development operator that exists only in development mode.

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

/// Whether an operator can act yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorStatus {
    /// Registered by one admin, waiting for a second admin's approval; no credential exists.
    Pending,
    /// Holds a credential.
    Active,
}

impl OperatorStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            OperatorStatus::Pending => "pending",
            OperatorStatus::Active => "active",
        }
    }

    /// Reads a stored name.
    pub fn parse(name: &str) -> Option<Self> {
        [OperatorStatus::Pending, OperatorStatus::Active]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// A registered operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator {
    pub id: Uuid,
    pub name: String,
    /// The public id of its credential (none while pending).
    pub public_id: Option<String>,
    pub roles: Vec<String>,
    pub status: OperatorStatus,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub created_by: String,
    /// The operator id of the admin who registered it (none: bootstrap or development).
    pub created_by_id: Option<Uuid>,
    pub approved_by: Option<String>,
    pub approved_at: Option<chrono::DateTime<chrono::Utc>>,
    pub disabled_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Operator {
    /// True when the operator holds `role`.
    pub fn holds(&self, role: &str) -> bool {
        self.roles.iter().any(|held| held == role)
    }
}

/// True for the lab roles (`lab.*`).
pub fn is_lab_role(role: &str) -> bool {
    role.starts_with(roles::LAB_PREFIX)
}

/// Separation of duties: an operator holding `identity.admin` holds no lab role, so no admin
/// can give itself (or an identity it controls alone) a lab role.
pub fn check_separation(held: &[String]) -> Result<(), ApiError> {
    let admin = held.iter().any(|role| role == roles::IDENTITY_ADMIN);
    let lab: Vec<&str> = held
        .iter()
        .map(String::as_str)
        .filter(|role| is_lab_role(role))
        .collect();
    if admin && !lab.is_empty() {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "roles",
            format!(
                "an operator holding identity.admin cannot also hold lab roles ({}); register the lab work under another operator",
                lab.join(", ")
            ),
        ));
    }
    Ok(())
}

/// True when registering an operator holding `held` needs a second admin's approval: a QA
/// officer (who approves results) or an admin (who could otherwise approve alone).
pub fn needs_second_admin(held: &[String]) -> bool {
    held.iter()
        .any(|role| role == roles::LAB_QA || role == roles::IDENTITY_ADMIN)
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

/// Expands and validates role names: `all` means every role but the lab roles (which no admin
/// may hold beside `identity.admin`); unknown names are refused.
pub fn parse_roles(requested: &[String]) -> Result<Vec<String>, ApiError> {
    let mut held: Vec<String> = Vec::new();
    for name in requested.iter().map(|name| name.trim()) {
        if name == "all" {
            return Ok(roles::ALL
                .iter()
                .filter(|role| !is_lab_role(role))
                .map(|role| (*role).to_owned())
                .collect());
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
        let all = parse_roles(&["all".into()]).unwrap();
        assert!(all.contains(&roles::IDENTITY_ADMIN.to_owned()));
        assert!(!all.iter().any(|role| is_lab_role(role)), "{all:?}");
        assert_eq!(
            parse_roles(&["payments.admin".into(), "payments.admin".into()]).unwrap(),
            vec!["payments.admin"]
        );
        assert!(parse_roles(&["root".into()]).is_err());
        assert!(parse_roles(&[]).is_err());
    }

    #[test]
    fn an_admin_holds_no_lab_role_and_a_qa_officer_or_an_admin_needs_a_second_admin() {
        let roles_of = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        let error = check_separation(&roles_of(&["identity.admin", "lab.analyst"])).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(check_separation(&roles_of(&["identity.admin", "payments.admin"])).is_ok());
        assert!(check_separation(&roles_of(&["lab.qa", "lab.analyst"])).is_ok());
        assert!(needs_second_admin(&roles_of(&["lab.qa"])));
        assert!(needs_second_admin(&roles_of(&["identity.admin"])));
        assert!(!needs_second_admin(&roles_of(&[
            "lab.technician",
            "lab.analyst",
            "catalog.admin"
        ])));
    }
}

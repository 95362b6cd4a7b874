//! Lab operators and their staff tokens: operators are registered with roles and their own
//! credential; `IssueStaffToken` exchanges a credential for a short-lived token addressed to one
//! service that carries only the roles the command asked for, each of which the operator holds.
//! The token names the operator (name and stable id) and the credential it was issued for, so
//! every service's audit trail names the real person, four eyes compares operators, and a
//! disabled operator's or rotated credential's tokens can be revoked ([`revocations`]).
//! Registering, approving, rotating and disabling operators: [`admin`].

pub mod admin;
pub mod repo;
pub mod revocations;

use crate::domain::api_key::{self, PresentedKey};
use crate::domain::operator::{
    self, CREDENTIAL_PREFIX, DEV_OPERATOR_CREDENTIAL, DEV_OPERATOR_NAME, DEV_OPERATOR_PUBLIC_ID, Operator,
};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::principal::{Principal, roles};
use platform::tokens::{STAFF_TOKEN_TTL, TokenIssuer};
use revocations::Announcer;
use secrecy::{ExposeSecret, SecretString};
use sqlx::PgPool;

/// A staff token issued to an operator.
pub struct IssuedToken {
    pub token: String,
    pub expires_at: DateTime<Utc>,
    pub operator: String,
}

/// An operator with a credential shown once.
pub struct OperatorCredential {
    pub operator: Operator,
    pub credential: SecretString,
}

/// Operator use cases over identity-svc's database.
#[derive(Clone)]
pub struct StaffService {
    pool: PgPool,
    pepper: SecretString,
    issuer: TokenIssuer,
    dev_mode: bool,
    announcer: Announcer,
}

fn refused() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthenticated,
        "the operator credential is malformed, unknown or disabled",
    )
}

impl StaffService {
    pub fn new(
        pool: PgPool,
        pepper: SecretString,
        issuer: TokenIssuer,
        dev_mode: bool,
        announcer: Announcer,
    ) -> Self {
        Self {
            pool,
            pepper,
            issuer,
            dev_mode,
            announcer,
        }
    }

    /// True for the development operator in development mode, the one operator exempt from the
    /// role rules (it holds every role, and registers operators without a second admin).
    fn is_development_operator(&self, name: &str) -> bool {
        self.dev_mode && name == DEV_OPERATOR_NAME
    }

    /// Exchanges an operator credential for a staff token for `audience` with `roles`.
    pub async fn issue_token(
        &self,
        credential: &str,
        audience: &str,
        roles: &[String],
    ) -> Result<IssuedToken, ApiError> {
        if !platform::mesh::ALL.contains(&audience) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "audience",
                format!("unknown audience {audience:?}"),
            )
            .with_details(serde_json::json!({ "allowed": platform::mesh::ALL })));
        }
        let presented =
            PresentedKey::parse_with_prefix(CREDENTIAL_PREFIX, credential.trim()).ok_or_else(refused)?;
        if presented.public_id == DEV_OPERATOR_PUBLIC_ID && !self.dev_mode {
            tracing::warn!("the development operator's credential was presented outside development mode");
            return Err(refused());
        }
        let (operator, verifier) = repo::by_public_id(&self.pool, &presented.public_id)
            .await?
            .ok_or_else(refused)?;
        if !presented.matches(&self.pepper, &verifier) || operator.disabled_at.is_some() {
            return Err(refused());
        }
        // No role asked for: a token naming the operator only, for what any operator may do.
        let requested = if roles.is_empty() {
            Vec::new()
        } else {
            operator::parse_roles(roles)?
        };
        self.check_roles(&operator, &requested)?;
        let principal = Principal::staff(&operator.name, operator.id, operator.public_id.clone(), requested);
        let token = self.issuer.mint(&principal, audience, STAFF_TOKEN_TTL);
        tracing::info!(operator = %operator.name, operator_id = %operator.id, audience, roles = ?principal.roles, "staff token issued");
        let lifetime = chrono::Duration::from_std(STAFF_TOKEN_TTL).unwrap_or_default();
        Ok(IssuedToken {
            token,
            expires_at: platform::time::now() + lifetime,
            operator: operator.name,
        })
    }

    /// `forbidden` when the operator lacks a requested role, or asks for a lab role while it
    /// holds `identity.admin` (an operator registered so before the rule; the development
    /// operator in development mode excepted).
    fn check_roles(&self, operator: &Operator, requested: &[String]) -> Result<(), ApiError> {
        let missing: Vec<&str> = requested
            .iter()
            .filter(|role| !operator.holds(role))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "the operator {} does not hold {}",
                    operator.name,
                    missing.join(", ")
                ),
            )
            .with_details(serde_json::json!({ "missing": missing })));
        }
        let lab_work = requested.iter().any(|role| operator::is_lab_role(role));
        if lab_work && operator.holds(roles::IDENTITY_ADMIN) && !self.is_development_operator(&operator.name)
        {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "the operator {} holds identity.admin and cannot act in the lab; register the lab work under another operator",
                    operator.name
                ),
            ));
        }
        Ok(())
    }

    /// In development mode, makes sure the development operator (every role, published
    /// credential) exists, so the local run and the tests can use labctl.
    pub async fn ensure_development_operator(&self) -> anyhow::Result<()> {
        let presented = PresentedKey::parse_with_prefix(CREDENTIAL_PREFIX, DEV_OPERATOR_CREDENTIAL)
            .ok_or_else(|| anyhow::anyhow!("the development credential is malformed"))?;
        let secret = DEV_OPERATOR_CREDENTIAL.rsplit('_').next().unwrap_or_default();
        let verifier = api_key::compute_verifier(&self.pepper, &presented.public_id, secret);
        let roles: Vec<String> = roles::ALL.iter().map(|r| (*r).to_owned()).collect();
        repo::ensure_development_operator(
            &self.pool,
            DEV_OPERATOR_NAME,
            DEV_OPERATOR_PUBLIC_ID,
            &verifier,
            &roles,
        )
        .await?;
        Ok(())
    }
}

/// Admins a deployment may register from the command line; beyond them, a new admin needs a
/// second admin's approval.
pub const BOOTSTRAP_ADMINS: i64 = 2;

/// Registers an admin from the command line (`identity-svc bootstrap-operator`), printing the
/// credential once: the deployment's first two admins, so that a second admin can approve the
/// next ones. Refuses once [`BOOTSTRAP_ADMINS`] enabled admins exist, roles without
/// `identity.admin`, and lab roles (`all` means every role but the lab roles).
pub async fn bootstrap_operator(
    pool: &PgPool,
    pepper: &SecretString,
    name: &str,
    roles: &[String],
) -> anyhow::Result<String> {
    anyhow::ensure!(
        repo::enabled_admins(pool).await? < BOOTSTRAP_ADMINS,
        "{BOOTSTRAP_ADMINS} enabled operators hold identity.admin; register further operators with `labctl operators create` (a second admin approves admins and QA officers)"
    );
    let name = operator::parse_name(name).map_err(|error| anyhow::anyhow!(error.message))?;
    let roles = operator::parse_roles(roles).map_err(|error| anyhow::anyhow!(error.message))?;
    operator::check_separation(&roles).map_err(|error| anyhow::anyhow!(error.message))?;
    anyhow::ensure!(
        roles.iter().any(|role| role == roles::IDENTITY_ADMIN),
        "the bootstrap operator registers the other operators: give it identity.admin (or `all`)"
    );
    let generated = api_key::generate_with_prefix(CREDENTIAL_PREFIX, pepper)?;
    let row = repo::NewOperatorRow {
        name: &name,
        roles: &roles,
        credential: Some(repo::StoredCredential {
            public_id: &generated.public_id,
            verifier: &generated.verifier,
        }),
        created_by: "bootstrap",
        created_by_id: None,
    };
    repo::insert(pool, &row).await?;
    Ok(generated.plaintext.expose_secret().to_owned())
}

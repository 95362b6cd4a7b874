//! Lab operators and their staff tokens: operators are registered with roles and their own
//! credential; `IssueStaffToken` exchanges a credential for a short-lived token addressed to one
//! service that carries only the roles the command asked for, each of which the operator holds.
//! The token names the operator, so every service's audit trail names the real person.

pub mod repo;

use crate::domain::api_key::{self, PresentedKey};
use crate::domain::operator::{
    self, CREDENTIAL_PREFIX, DEV_OPERATOR_CREDENTIAL, DEV_OPERATOR_NAME, DEV_OPERATOR_PUBLIC_ID, Operator,
};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode, unique_violation};
use platform::principal::{Principal, PrincipalKind};
use platform::tokens::{STAFF_TOKEN_TTL, TokenIssuer};
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

/// Operator use cases over the gateway's database.
#[derive(Clone)]
pub struct StaffService {
    pool: PgPool,
    pepper: SecretString,
    issuer: TokenIssuer,
    dev_mode: bool,
}

fn refused() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthenticated,
        "the operator credential is malformed, unknown or disabled",
    )
}

impl StaffService {
    pub fn new(pool: PgPool, pepper: SecretString, issuer: TokenIssuer, dev_mode: bool) -> Self {
        Self {
            pool,
            pepper,
            issuer,
            dev_mode,
        }
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
        let missing: Vec<&str> = requested
            .iter()
            .filter(|role| !operator.roles.contains(role))
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
        let principal = Principal {
            kind: PrincipalKind::Staff,
            subject: operator.name.clone(),
            customer_id: None,
            scopes: Vec::new(),
            roles: requested,
            spend_limit_cents: None,
        };
        let token = self.issuer.mint(&principal, audience, STAFF_TOKEN_TTL);
        tracing::info!(operator = %operator.name, audience, roles = ?principal.roles, "staff token issued");
        let lifetime = chrono::Duration::from_std(STAFF_TOKEN_TTL).unwrap_or_default();
        Ok(IssuedToken {
            token,
            expires_at: platform::time::now() + lifetime,
            operator: operator.name,
        })
    }

    /// Registers an operator; `conflict` when the name is taken.
    pub async fn create_operator(
        &self,
        created_by: &str,
        name: &str,
        roles: &[String],
    ) -> Result<OperatorCredential, ApiError> {
        let name = operator::parse_name(name)?;
        let roles = operator::parse_roles(roles)?;
        let generated =
            api_key::generate_with_prefix(CREDENTIAL_PREFIX, &self.pepper).map_err(ApiError::internal)?;
        let row = repo::NewOperatorRow {
            name: &name,
            roles: &roles,
            public_id: &generated.public_id,
            verifier: &generated.verifier,
            created_by,
        };
        match repo::insert(&self.pool, &row).await {
            Ok(operator) => {
                tracing::info!(operator = %operator.name, created_by, roles = ?operator.roles, "operator created");
                Ok(OperatorCredential {
                    operator,
                    credential: generated.plaintext,
                })
            }
            Err(error) if unique_violation(&error).as_deref() == Some(repo::NAME_CONSTRAINT) => {
                Err(ApiError::field(
                    ErrorCode::Conflict,
                    "name",
                    format!("an operator named {name} exists"),
                ))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Lists operators.
    pub async fn list_operators(&self) -> Result<Vec<Operator>, ApiError> {
        Ok(repo::list(&self.pool).await?)
    }

    /// Replaces an operator's credential.
    pub async fn rotate_credential(&self, by: &str, name: &str) -> Result<OperatorCredential, ApiError> {
        let name = operator::parse_name(name)?;
        let generated =
            api_key::generate_with_prefix(CREDENTIAL_PREFIX, &self.pepper).map_err(ApiError::internal)?;
        let operator = repo::replace_credential(&self.pool, &name, &generated.public_id, &generated.verifier)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "no such operator"))?;
        tracing::info!(operator = %operator.name, by, "operator credential rotated");
        Ok(OperatorCredential {
            operator,
            credential: generated.plaintext,
        })
    }

    /// Disables an operator.
    pub async fn disable_operator(&self, by: &str, name: &str) -> Result<Operator, ApiError> {
        let name = operator::parse_name(name)?;
        let operator = repo::disable(&self.pool, &name, by)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "no such operator"))?;
        tracing::info!(operator = %operator.name, by, "operator disabled");
        Ok(operator)
    }

    /// In development mode, makes sure the development operator (every role, published
    /// credential) exists, so the local run and the tests can use labctl.
    pub async fn ensure_development_operator(&self) -> anyhow::Result<()> {
        let presented = PresentedKey::parse_with_prefix(CREDENTIAL_PREFIX, DEV_OPERATOR_CREDENTIAL)
            .ok_or_else(|| anyhow::anyhow!("the development credential is malformed"))?;
        let secret = DEV_OPERATOR_CREDENTIAL.rsplit('_').next().unwrap_or_default();
        let verifier = api_key::compute_verifier(&self.pepper, &presented.public_id, secret);
        let roles: Vec<String> = platform::principal::roles::ALL
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
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

/// Registers the first operator of a deployment from the command line (`gateway
/// bootstrap-operator`), printing the credential once; refuses when operators already exist.
pub async fn bootstrap_operator(
    pool: &PgPool,
    pepper: &SecretString,
    name: &str,
    roles: &[String],
) -> anyhow::Result<String> {
    anyhow::ensure!(
        !repo::any(pool).await?,
        "operators already exist; create further operators with `labctl operators create`"
    );
    let name = operator::parse_name(name).map_err(|error| anyhow::anyhow!(error.message))?;
    let roles = operator::parse_roles(roles).map_err(|error| anyhow::anyhow!(error.message))?;
    let generated = api_key::generate_with_prefix(CREDENTIAL_PREFIX, pepper)?;
    let row = repo::NewOperatorRow {
        name: &name,
        roles: &roles,
        public_id: &generated.public_id,
        verifier: &generated.verifier,
        created_by: "bootstrap",
    };
    repo::insert(pool, &row).await?;
    Ok(generated.plaintext.expose_secret().to_owned())
}

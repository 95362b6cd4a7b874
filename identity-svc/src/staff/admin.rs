//! What admins (`identity.admin`) do with operators:
//!
//! * register one: its roles are checked (an admin holds no lab role); one holding `lab.qa` or
//!   `identity.admin` is created **pending**, without any credential, and any other one active
//!   with its credential shown once;
//! * approve a pending one: a different admin than the one who registered it (compared by
//!   operator id) creates its credential, shown once to the approver;
//! * rotate a credential or disable an operator: in one transaction with the revocation of the
//!   staff tokens already issued for it, which is then announced to the mesh.
//!
//! In development mode the development operator's registrations are active at once (the demo
//! and the tests register QA officers with it); no other exemption exists.

use super::repo::{self, NewOperatorRow, RevocationRow, StoredCredential};
use super::{OperatorCredential, StaffService};
use crate::domain::api_key::{self, GeneratedKey};
use crate::domain::operator::{self, CREDENTIAL_PREFIX, Operator, OperatorStatus};
use platform::error::{ApiError, ErrorCode, unique_violation};
use platform::principal::OperatorRef;
use secrecy::SecretString;
use sqlx::{PgConnection, Postgres, Transaction};

/// A registered operator, with its credential when it is active at once.
pub struct CreatedOperator {
    pub operator: Operator,
    /// None while the operator waits for a second admin's approval.
    pub credential: Option<SecretString>,
}

fn no_such_operator() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such operator")
}

impl StaffService {
    /// A new operator credential: what to store, and the plaintext to show once.
    fn generate_credential(&self) -> Result<GeneratedKey, ApiError> {
        api_key::generate_with_prefix(CREDENTIAL_PREFIX, &self.pepper).map_err(ApiError::internal)
    }

    /// Begins the transaction of a change to the operator `name` (validated) and locks its row:
    /// `not_found` when there is none.
    async fn lock_operator(
        &self,
        name: &str,
    ) -> Result<(Transaction<'static, Postgres>, Operator), ApiError> {
        let name = operator::parse_name(name)?;
        let mut tx = self.pool.begin().await?;
        let current = repo::lock_by_name(&mut tx, &name)
            .await?
            .ok_or_else(no_such_operator)?;
        Ok((tx, current))
    }

    /// Gives the operator `id` a new credential in `tx` (which also activates it): the operator
    /// and the plaintext, shown once.
    async fn store_new_credential(
        &self,
        tx: &mut PgConnection,
        id: uuid::Uuid,
    ) -> Result<OperatorCredential, ApiError> {
        let generated = self.generate_credential()?;
        let credential = StoredCredential {
            public_id: &generated.public_id,
            verifier: &generated.verifier,
        };
        let operator = repo::set_credential(tx, id, &credential).await?;
        Ok(OperatorCredential {
            operator,
            credential: generated.plaintext,
        })
    }

    /// Registers an operator as `by`; `conflict` when the name is taken (by any operator, even
    /// a disabled one: names in audit trails stay unambiguous).
    pub async fn create_operator(
        &self,
        by: &OperatorRef,
        name: &str,
        roles: &[String],
    ) -> Result<CreatedOperator, ApiError> {
        let name = operator::parse_name(name)?;
        let roles = operator::parse_roles(roles)?;
        operator::check_separation(&roles)?;
        let pending = operator::needs_second_admin(&roles) && !self.is_development_operator(&by.name);
        let generated = if pending {
            None
        } else {
            Some(self.generate_credential()?)
        };
        let row = NewOperatorRow {
            name: &name,
            roles: &roles,
            credential: generated.as_ref().map(|generated| StoredCredential {
                public_id: &generated.public_id,
                verifier: &generated.verifier,
            }),
            created_by: &by.name,
            created_by_id: Some(by.id),
        };
        match repo::insert(&self.pool, &row).await {
            Ok(operator) => {
                tracing::info!(operator = %operator.name, created_by = %by.name, roles = ?operator.roles, status = operator.status.as_str(), "operator created");
                Ok(CreatedOperator {
                    operator,
                    credential: generated.map(|generated| generated.plaintext),
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

    /// Approves the pending operator `name` as `by`, who must not be the admin who registered
    /// it, and returns its credential (shown once).
    pub async fn approve_operator(
        &self,
        by: &OperatorRef,
        name: &str,
    ) -> Result<OperatorCredential, ApiError> {
        let (mut tx, pending) = self.lock_operator(name).await?;
        if pending.status != OperatorStatus::Pending || pending.disabled_at.is_some() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("the operator {} is not waiting for approval", pending.name),
            ));
        }
        if pending.created_by_id == Some(by.id) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "four eyes: the admin who registered an operator cannot approve it; another admin must",
            ));
        }
        repo::record_approval(&mut tx, pending.id, &by.name, by.id).await?;
        let approved = self.store_new_credential(&mut tx, pending.id).await?;
        tx.commit().await?;
        let operator = &approved.operator;
        tracing::info!(operator = %operator.name, approved_by = %by.name, requested_by = %operator.created_by, "operator approved");
        Ok(approved)
    }

    /// Lists operators.
    pub async fn list_operators(&self) -> Result<Vec<Operator>, ApiError> {
        Ok(repo::list(&self.pool).await?)
    }

    /// Replaces an operator's credential: the old one stops at once, and so do the staff
    /// tokens issued for it.
    pub async fn rotate_credential(
        &self,
        by: &OperatorRef,
        name: &str,
    ) -> Result<OperatorCredential, ApiError> {
        let (mut tx, current) = self.lock_operator(name).await?;
        let Some(old_public_id) = current.public_id.clone() else {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "the operator {} is waiting for approval and has no credential yet",
                    current.name
                ),
            ));
        };
        let rotated = self.store_new_credential(&mut tx, current.id).await?;
        let revocation = RevocationRow {
            operator_id: current.id,
            credential_public_id: Some(old_public_id),
            revoked_at: platform::time::now(),
        };
        repo::insert_revocation(&mut tx, &revocation, &by.name).await?;
        tx.commit().await?;
        self.announcer.announce(&revocation).await;
        tracing::info!(operator = %rotated.operator.name, by = %by.name, "operator credential rotated");
        Ok(rotated)
    }

    /// Disables an operator (keeping the first disabling): its credential stops at once, and
    /// so do the staff tokens issued to it.
    pub async fn disable_operator(&self, by: &OperatorRef, name: &str) -> Result<Operator, ApiError> {
        let (mut tx, current) = self.lock_operator(name).await?;
        if current.disabled_at.is_some() {
            tx.commit().await?;
            return Ok(current);
        }
        let operator = repo::disable(&mut tx, current.id, &by.name).await?;
        let revocation = RevocationRow {
            operator_id: operator.id,
            credential_public_id: None,
            revoked_at: platform::time::now(),
        };
        repo::insert_revocation(&mut tx, &revocation, &by.name).await?;
        tx.commit().await?;
        self.announcer.announce(&revocation).await;
        tracing::info!(operator = %operator.name, by = %by.name, "operator disabled");
        Ok(operator)
    }
}

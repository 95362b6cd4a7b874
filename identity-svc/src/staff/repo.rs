//! SQL of lab operators (`identity.operators`) and of the revocations of their staff tokens
//! (`identity.staff_revocations`). Statements that change an operator take the use case's
//! transaction; reads take the pool.

use crate::domain::operator::{Operator, OperatorStatus};
use chrono::{DateTime, Utc};
use platform::principal::roles;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Name of the unique constraint on operator names.
pub const NAME_CONSTRAINT: &str = "operators_name_key";
/// Name of the unique constraint on credential public ids.
pub const PUBLIC_ID_CONSTRAINT: &str = "operators_public_id_key";

const COLUMNS: &str = "id, name, public_id, roles, status, created_at, created_by, created_by_id, \
                       approved_by, approved_at, disabled_at";

#[derive(sqlx::FromRow)]
struct OperatorRow {
    id: Uuid,
    name: String,
    public_id: Option<String>,
    roles: Vec<String>,
    status: String,
    created_at: DateTime<Utc>,
    created_by: String,
    created_by_id: Option<Uuid>,
    approved_by: Option<String>,
    approved_at: Option<DateTime<Utc>>,
    disabled_at: Option<DateTime<Utc>>,
}

impl TryFrom<OperatorRow> for Operator {
    type Error = sqlx::Error;

    fn try_from(row: OperatorRow) -> Result<Self, sqlx::Error> {
        let status = OperatorStatus::parse(&row.status)
            .ok_or_else(|| sqlx::Error::Decode(format!("stored operator status {:?}", row.status).into()))?;
        Ok(Self {
            id: row.id,
            name: row.name,
            public_id: row.public_id,
            roles: row.roles,
            status,
            created_at: row.created_at,
            created_by: row.created_by,
            created_by_id: row.created_by_id,
            approved_by: row.approved_by,
            approved_at: row.approved_at,
            disabled_at: row.disabled_at,
        })
    }
}

fn operator(row: Option<OperatorRow>) -> Result<Option<Operator>, sqlx::Error> {
    row.map(Operator::try_from).transpose()
}

/// A credential as stored: its public id and peppered verifier.
pub struct StoredCredential<'a> {
    pub public_id: &'a str,
    pub verifier: &'a [u8],
}

/// What a new operator row holds (no credential: pending a second admin's approval).
pub struct NewOperatorRow<'a> {
    pub name: &'a str,
    pub roles: &'a [String],
    pub credential: Option<StoredCredential<'a>>,
    pub created_by: &'a str,
    pub created_by_id: Option<Uuid>,
}

/// Inserts an operator, active with a credential or pending without one; a taken name or
/// public id is a unique violation for the caller to map.
pub async fn insert(pool: &PgPool, row: &NewOperatorRow<'_>) -> Result<Operator, sqlx::Error> {
    let statement = format!(
        "INSERT INTO identity.operators (id, name, public_id, verifier, roles, status, created_by, created_by_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}"
    );
    let status = match row.credential {
        Some(_) => OperatorStatus::Active,
        None => OperatorStatus::Pending,
    };
    let inserted: OperatorRow = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(Uuid::now_v7())
        .bind(row.name)
        .bind(row.credential.as_ref().map(|credential| credential.public_id))
        .bind(row.credential.as_ref().map(|credential| credential.verifier))
        .bind(row.roles)
        .bind(status.as_str())
        .bind(row.created_by)
        .bind(row.created_by_id)
        .fetch_one(pool)
        .await?;
    inserted.try_into()
}

/// Every operator, oldest first.
pub async fn list(pool: &PgPool) -> Result<Vec<Operator>, sqlx::Error> {
    let statement = format!("SELECT {COLUMNS} FROM identity.operators ORDER BY created_at, id");
    let rows: Vec<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .fetch_all(pool)
        .await?;
    rows.into_iter().map(Operator::try_from).collect()
}

/// How many enabled, active operators hold `identity.admin`.
pub async fn enabled_admins(pool: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT count(*) FROM identity.operators \
         WHERE $1 = ANY(roles) AND status = 'active' AND disabled_at IS NULL",
    )
    .bind(roles::IDENTITY_ADMIN)
    .fetch_one(pool)
    .await
}

/// The operator whose credential has `public_id`, with its verifier.
pub async fn by_public_id(
    pool: &PgPool,
    public_id: &str,
) -> Result<Option<(Operator, Vec<u8>)>, sqlx::Error> {
    let statement = format!(
        "SELECT {COLUMNS}, verifier FROM identity.operators WHERE public_id = $1 AND verifier IS NOT NULL"
    );
    sqlx::query(sqlx::AssertSqlSafe(statement))
        .bind(public_id)
        .try_map(|row: sqlx::postgres::PgRow| {
            use sqlx::{FromRow, Row};
            Ok((
                Operator::try_from(OperatorRow::from_row(&row)?)?,
                row.try_get("verifier")?,
            ))
        })
        .fetch_optional(pool)
        .await
}

/// Locks the operator named `name` for a change.
pub async fn lock_by_name(conn: &mut PgConnection, name: &str) -> Result<Option<Operator>, sqlx::Error> {
    let statement = format!("SELECT {COLUMNS} FROM identity.operators WHERE name = $1 FOR UPDATE");
    let row: Option<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    operator(row)
}

/// Gives an operator a new credential (making a pending one active).
pub async fn set_credential(
    conn: &mut PgConnection,
    id: Uuid,
    credential: &StoredCredential<'_>,
) -> Result<Operator, sqlx::Error> {
    let statement = format!(
        "UPDATE identity.operators SET public_id = $2, verifier = $3, status = 'active' WHERE id = $1 \
         RETURNING {COLUMNS}"
    );
    let row: OperatorRow = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(id)
        .bind(credential.public_id)
        .bind(credential.verifier)
        .fetch_one(conn)
        .await?;
    row.try_into()
}

/// Records the admin who approved a pending operator.
pub async fn record_approval(
    conn: &mut PgConnection,
    id: Uuid,
    approved_by: &str,
    approved_by_id: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE identity.operators SET approved_by = $2, approved_by_id = $3, approved_at = now() WHERE id = $1",
    )
    .bind(id)
    .bind(approved_by)
    .bind(approved_by_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Disables an operator.
pub async fn disable(conn: &mut PgConnection, id: Uuid, disabled_by: &str) -> Result<Operator, sqlx::Error> {
    let statement = format!(
        "UPDATE identity.operators SET disabled_at = COALESCE(disabled_at, now()), \
           disabled_by = COALESCE(disabled_by, $2) WHERE id = $1 RETURNING {COLUMNS}"
    );
    let row: OperatorRow = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(id)
        .bind(disabled_by)
        .fetch_one(conn)
        .await?;
    row.try_into()
}

/// A revocation of staff tokens as stored.
pub struct RevocationRow {
    pub operator_id: Uuid,
    /// The rotated credential (none: the operator was disabled).
    pub credential_public_id: Option<String>,
    pub revoked_at: DateTime<Utc>,
}

/// Records a revocation of staff tokens.
pub async fn insert_revocation(
    conn: &mut PgConnection,
    revocation: &RevocationRow,
    revoked_by: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO identity.staff_revocations (operator_id, credential_public_id, revoked_at, revoked_by) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(revocation.operator_id)
    .bind(&revocation.credential_public_id)
    .bind(revocation.revoked_at)
    .bind(revoked_by)
    .execute(conn)
    .await?;
    Ok(())
}

/// The revocations since `since`.
pub async fn revocations_since(
    pool: &PgPool,
    since: DateTime<Utc>,
) -> Result<Vec<RevocationRow>, sqlx::Error> {
    let rows: Vec<(Uuid, Option<String>, DateTime<Utc>)> = sqlx::query_as(
        "SELECT operator_id, credential_public_id, revoked_at FROM identity.staff_revocations \
         WHERE revoked_at >= $1 ORDER BY revoked_at",
    )
    .bind(since)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(operator_id, credential_public_id, revoked_at)| RevocationRow {
            operator_id,
            credential_public_id,
            revoked_at,
        })
        .collect())
}

/// Makes sure the development operator exists, active, with `verifier` and every role
/// (development mode).
pub async fn ensure_development_operator(
    pool: &PgPool,
    name: &str,
    public_id: &str,
    verifier: &[u8],
    roles: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO identity.operators (id, name, public_id, verifier, roles, status, created_by) \
         VALUES ($1, $2, $3, $4, $5, 'active', 'development') \
         ON CONFLICT (name) DO UPDATE SET public_id = $3, verifier = $4, roles = $5, status = 'active', \
           disabled_at = NULL, disabled_by = NULL",
    )
    .bind(Uuid::now_v7())
    .bind(name)
    .bind(public_id)
    .bind(verifier)
    .bind(roles)
    .execute(pool)
    .await?;
    Ok(())
}

//! SQL of lab operators (`gateway.operators`).

use crate::domain::operator::Operator;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// Name of the unique constraint on operator names.
pub const NAME_CONSTRAINT: &str = "operators_name_key";
/// Name of the unique constraint on credential public ids.
pub const PUBLIC_ID_CONSTRAINT: &str = "operators_public_id_key";

const COLUMNS: &str = "id, name, public_id, roles, created_at, created_by, disabled_at";

#[derive(sqlx::FromRow)]
struct OperatorRow {
    id: Uuid,
    name: String,
    public_id: String,
    roles: Vec<String>,
    created_at: DateTime<Utc>,
    created_by: String,
    disabled_at: Option<DateTime<Utc>>,
}

impl From<OperatorRow> for Operator {
    fn from(row: OperatorRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            public_id: row.public_id,
            roles: row.roles,
            created_at: row.created_at,
            created_by: row.created_by,
            disabled_at: row.disabled_at,
        }
    }
}

/// What a new operator row holds.
pub struct NewOperatorRow<'a> {
    pub name: &'a str,
    pub roles: &'a [String],
    pub public_id: &'a str,
    pub verifier: &'a [u8],
    pub created_by: &'a str,
}

/// Inserts an operator; a taken name or public id is a unique violation for the caller to map.
pub async fn insert(pool: &PgPool, row: &NewOperatorRow<'_>) -> Result<Operator, sqlx::Error> {
    let statement = format!(
        "INSERT INTO gateway.operators (id, name, public_id, verifier, roles, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}"
    );
    let inserted: OperatorRow = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(Uuid::now_v7())
        .bind(row.name)
        .bind(row.public_id)
        .bind(row.verifier)
        .bind(row.roles)
        .bind(row.created_by)
        .fetch_one(pool)
        .await?;
    Ok(inserted.into())
}

/// Every operator, oldest first.
pub async fn list(pool: &PgPool) -> Result<Vec<Operator>, sqlx::Error> {
    let statement = format!("SELECT {COLUMNS} FROM gateway.operators ORDER BY created_at, id");
    let rows: Vec<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(Operator::from).collect())
}

/// True when at least one operator exists.
pub async fn any(pool: &PgPool) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM gateway.operators)")
        .fetch_one(pool)
        .await
}

/// The operator whose credential has `public_id`, with its verifier.
pub async fn by_public_id(
    pool: &PgPool,
    public_id: &str,
) -> Result<Option<(Operator, Vec<u8>)>, sqlx::Error> {
    let statement = format!("SELECT {COLUMNS}, verifier FROM gateway.operators WHERE public_id = $1");
    sqlx::query(sqlx::AssertSqlSafe(statement))
        .bind(public_id)
        .try_map(|row: sqlx::postgres::PgRow| {
            use sqlx::{FromRow, Row};
            Ok((OperatorRow::from_row(&row)?.into(), row.try_get("verifier")?))
        })
        .fetch_optional(pool)
        .await
}

/// Replaces an operator's credential; `None` when no operator has that name.
pub async fn replace_credential(
    pool: &PgPool,
    name: &str,
    public_id: &str,
    verifier: &[u8],
) -> Result<Option<Operator>, sqlx::Error> {
    let statement = format!(
        "UPDATE gateway.operators SET public_id = $2, verifier = $3 WHERE name = $1 RETURNING {COLUMNS}"
    );
    let row: Option<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(name)
        .bind(public_id)
        .bind(verifier)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(Operator::from))
}

/// Disables an operator (keeping the first disabling); `None` when no operator has that name.
pub async fn disable(pool: &PgPool, name: &str, disabled_by: &str) -> Result<Option<Operator>, sqlx::Error> {
    let statement = format!(
        "UPDATE gateway.operators SET disabled_at = COALESCE(disabled_at, now()), \
           disabled_by = COALESCE(disabled_by, $2) WHERE name = $1 RETURNING {COLUMNS}"
    );
    let row: Option<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(name)
        .bind(disabled_by)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(Operator::from))
}

/// Makes sure the development operator exists with `verifier` and every role (development mode).
pub async fn ensure_development_operator(
    pool: &PgPool,
    name: &str,
    public_id: &str,
    verifier: &[u8],
    roles: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO gateway.operators (id, name, public_id, verifier, roles, created_by) \
         VALUES ($1, $2, $3, $4, $5, 'development') \
         ON CONFLICT (name) DO UPDATE SET public_id = $3, verifier = $4, roles = $5, \
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

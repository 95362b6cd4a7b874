//! SQL of the `identity` schema: customers and API keys.
//!
//! Identity queries are staff operations (every customer) or the authentication lookup by
//! public id, which is what establishes the customer in the first place.

use crate::domain::customer::{ApiKey, Customer, KeyRef, NewApiKey, NewCustomer};
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// Name of the unique constraint on the public id of a key.
pub const PUBLIC_ID_CONSTRAINT: &str = "api_keys_public_id_key";

#[derive(sqlx::FromRow)]
struct CustomerRow {
    id: Uuid,
    name: String,
    email: String,
    created_at: DateTime<Utc>,
    sandbox: bool,
}

impl From<CustomerRow> for Customer {
    fn from(row: CustomerRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            email: row.email,
            created_at: row.created_at,
            sandbox: row.sandbox,
        }
    }
}

#[derive(sqlx::FromRow)]
struct ApiKeyRow {
    id: Uuid,
    customer_id: Uuid,
    public_id: String,
    name: String,
    scopes: Vec<String>,
    spend_limit_cents: Option<i64>,
    created_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
    sandbox: bool,
}

impl From<ApiKeyRow> for ApiKey {
    fn from(row: ApiKeyRow) -> Self {
        Self {
            id: row.id,
            customer_id: row.customer_id,
            public_id: row.public_id,
            name: row.name,
            scopes: row.scopes,
            spend_limit_cents: row.spend_limit_cents,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
            sandbox: row.sandbox,
        }
    }
}

/// The key's columns, with its customer's sandbox flag (every key query reads `identity.api_keys`
/// as `k`).
const KEY_COLUMNS: &str = "k.id, k.customer_id, k.public_id, k.name, k.scopes, k.spend_limit_cents, \
     k.created_at, k.revoked_at, \
     (SELECT c.sandbox FROM identity.customers c WHERE c.id = k.customer_id) AS sandbox";

/// Inserts a customer unless one with the same email exists; `None` when it exists.
pub async fn insert_customer(
    pool: &PgPool,
    id: Uuid,
    customer: &NewCustomer,
    created_by: &str,
) -> Result<Option<Customer>, sqlx::Error> {
    let row: Option<CustomerRow> = sqlx::query_as(
        "INSERT INTO identity.customers (id, name, email, created_by) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (email) DO NOTHING RETURNING id, name, email, created_at, sandbox",
    )
    .bind(id)
    .bind(&customer.name)
    .bind(&customer.email)
    .bind(created_by)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(Customer::from))
}

/// Reads the customer with a (normalized) email.
pub async fn customer_by_email(pool: &PgPool, email: &str) -> Result<Option<Customer>, sqlx::Error> {
    let row: Option<CustomerRow> = sqlx::query_as(
        "SELECT id, name, email, created_at, sandbox FROM identity.customers WHERE email = $1",
    )
    .bind(email)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(Customer::from))
}

/// The customer with this id.
pub async fn customer_by_id(pool: &PgPool, id: Uuid) -> Result<Option<Customer>, sqlx::Error> {
    let row: Option<CustomerRow> =
        sqlx::query_as("SELECT id, name, email, created_at, sandbox FROM identity.customers WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(Customer::from))
}

/// True when the customer exists.
pub async fn customer_exists(pool: &PgPool, id: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM identity.customers WHERE id = $1)")
        .bind(id)
        .fetch_one(pool)
        .await
}

/// Lists every customer, oldest first.
pub async fn list_customers(pool: &PgPool) -> Result<Vec<Customer>, sqlx::Error> {
    let rows: Vec<CustomerRow> = sqlx::query_as(
        "SELECT id, name, email, created_at, sandbox FROM identity.customers ORDER BY created_at, id",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(Customer::from).collect())
}

/// Inserts a key with its verifier.
pub async fn insert_api_key(
    pool: &PgPool,
    id: Uuid,
    key: &NewApiKey,
    public_id: &str,
    verifier: &[u8],
    created_by: &str,
) -> Result<ApiKey, sqlx::Error> {
    let statement = format!(
        "INSERT INTO identity.api_keys AS k \
           (id, customer_id, public_id, verifier, name, scopes, spend_limit_cents, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {KEY_COLUMNS}"
    );
    let row: ApiKeyRow = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(id)
        .bind(key.customer_id)
        .bind(public_id)
        .bind(verifier)
        .bind(&key.name)
        .bind(&key.scopes)
        .bind(key.spend_limit_cents)
        .bind(created_by)
        .fetch_one(pool)
        .await?;
    Ok(row.into())
}

/// Lists a customer's keys, oldest first.
pub async fn list_api_keys(pool: &PgPool, customer_id: Uuid) -> Result<Vec<ApiKey>, sqlx::Error> {
    let statement = format!(
        "SELECT {KEY_COLUMNS} FROM identity.api_keys k WHERE k.customer_id = $1 ORDER BY k.created_at, k.id"
    );
    let rows: Vec<ApiKeyRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
        .bind(customer_id)
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(ApiKey::from).collect())
}

/// Revokes a key (keeping the first revocation time and operator); `None` when no such key exists.
pub async fn revoke_api_key(
    pool: &PgPool,
    key: &KeyRef,
    revoked_by: &str,
) -> Result<Option<ApiKey>, sqlx::Error> {
    let returning = format!("RETURNING {KEY_COLUMNS}");
    let update = "UPDATE identity.api_keys AS k SET revoked_at = COALESCE(revoked_at, now()), \
                  revoked_by = COALESCE(revoked_by, $2)";
    let query = match key {
        KeyRef::Id(id) => sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{update} WHERE k.id = $1 {returning}"
        )))
        .bind(*id),
        KeyRef::PublicId(public_id) => sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{update} WHERE k.public_id = $1 {returning}"
        )))
        .bind(public_id.clone()),
    };
    let row: Option<ApiKeyRow> = query.bind(revoked_by).fetch_optional(pool).await?;
    Ok(row.map(ApiKey::from))
}

/// A key record with its verifier, as the authenticator needs it.
pub struct KeyCredentials {
    pub key: ApiKey,
    pub verifier: Vec<u8>,
}

/// Loads the key with `public_id` and its verifier (revoked keys too: the caller refuses them).
pub async fn key_credentials(pool: &PgPool, public_id: &str) -> Result<Option<KeyCredentials>, sqlx::Error> {
    let statement =
        format!("SELECT {KEY_COLUMNS}, k.verifier FROM identity.api_keys k WHERE k.public_id = $1");
    let row: Option<(Vec<u8>, ApiKeyRow)> = sqlx::query(sqlx::AssertSqlSafe(statement))
        .bind(public_id)
        .try_map(|row: sqlx::postgres::PgRow| {
            use sqlx::{FromRow, Row};
            Ok((row.try_get("verifier")?, ApiKeyRow::from_row(&row)?))
        })
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|(verifier, key)| KeyCredentials {
        key: key.into(),
        verifier,
    }))
}

/// Records that a key was used now.
pub async fn touch_last_used(pool: &PgPool, key_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE identity.api_keys SET last_used_at = now() WHERE id = $1")
        .bind(key_id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Sets a customer's sandbox flag as `operator`; `None` when no customer has this id, else the
/// customer after it and whether the flag changed.
pub async fn set_sandbox(
    pool: &PgPool,
    id: Uuid,
    sandbox: bool,
    operator: &str,
) -> Result<Option<(Customer, bool)>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let current: Option<bool> =
        sqlx::query_scalar("SELECT sandbox FROM identity.customers WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some(current) = current else {
        return Ok(None);
    };
    let changed = current != sandbox;
    if changed {
        sqlx::query(
            "UPDATE identity.customers SET sandbox = $2, sandbox_changed_at = now(), \
             sandbox_changed_by = $3 WHERE id = $1",
        )
        .bind(id)
        .bind(sandbox)
        .bind(operator)
        .execute(&mut *tx)
        .await?;
    }
    let row: CustomerRow =
        sqlx::query_as("SELECT id, name, email, created_at, sandbox FROM identity.customers WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(Some((row.into(), changed)))
}

/// The public ids of a customer's keys (revoked ones too).
pub async fn key_public_ids(pool: &PgPool, customer_id: Uuid) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT public_id FROM identity.api_keys WHERE customer_id = $1")
        .bind(customer_id)
        .fetch_all(pool)
        .await
}

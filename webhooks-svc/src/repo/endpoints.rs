//! SQL of endpoints. Every customer-facing query filters by `customer_id`; deleted endpoints are
//! invisible to customers.

use crate::domain::{Endpoint, EndpointStatus};
use chrono::{DateTime, Utc};
use platform::pagination::After;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

macro_rules! columns {
    () => {
        "id, customer_id, url, events, description, status, disabled_reason, created_at, updated_at, \
         previous_secret_expires_at"
    };
}

/// A secret sealed by the keyring, with the id of the key that sealed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedSecret {
    pub sealed: String,
    pub key_id: String,
}

/// The sealed secrets of an endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointSecrets {
    pub current: SealedSecret,
    pub previous: Option<SealedSecret>,
}

fn endpoint(row: &sqlx::postgres::PgRow) -> Result<Endpoint, sqlx::Error> {
    let status: String = row.try_get("status")?;
    Ok(Endpoint {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        url: row.try_get("url")?,
        events: row.try_get("events")?,
        description: row.try_get("description")?,
        status: EndpointStatus::parse(&status).ok_or_else(|| sqlx::Error::Decode(status.into()))?,
        disabled_reason: row.try_get("disabled_reason")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        previous_secret_expires_at: row.try_get("previous_secret_expires_at")?,
    })
}

/// Inserts a new active endpoint.
pub async fn insert(
    conn: &mut PgConnection,
    endpoint: &Endpoint,
    secret: &SealedSecret,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO webhooks.endpoints (id, customer_id, url, events, description, status, \
           secret_sealed, secret_key_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
    )
    .bind(endpoint.id)
    .bind(endpoint.customer_id)
    .bind(&endpoint.url)
    .bind(&endpoint.events)
    .bind(&endpoint.description)
    .bind(endpoint.status.as_str())
    .bind(&secret.sealed)
    .bind(&secret.key_id)
    .bind(endpoint.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Serialises registrations of one customer until the transaction ends, so that counting and
/// inserting cannot interleave (two registrations at the limit never both pass).
pub async fn lock_customer(conn: &mut PgConnection, customer_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('webhooks.endpoints:' || $1::text, 0))")
        .bind(customer_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// How many endpoints the customer has (active or disabled; deleted ones do not count).
pub async fn count_live(conn: &mut PgConnection, customer_id: Uuid) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT count(*) FROM webhooks.endpoints WHERE customer_id = $1 AND status <> 'deleted'",
    )
    .bind(customer_id)
    .fetch_one(conn)
    .await
}

/// The customer's endpoint unless deleted.
pub async fn find(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
) -> Result<Option<Endpoint>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks.endpoints WHERE customer_id = $1 AND id = $2 AND status <> 'deleted'"
    ))
    .bind(customer_id)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(endpoint).transpose()
}

/// Any endpoint by id, deleted ones included (staff).
pub async fn find_any(conn: &mut PgConnection, id: Uuid) -> Result<Option<Endpoint>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks.endpoints WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(endpoint).transpose()
}

/// Locks the customer's endpoint (unless deleted) with its sealed secrets.
pub async fn lock(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
) -> Result<Option<(Endpoint, EndpointSecrets)>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        ", secret_sealed, secret_key_id, previous_secret_sealed, previous_secret_key_id \
         FROM webhooks.endpoints WHERE customer_id = $1 AND id = $2 AND status <> 'deleted' FOR UPDATE"
    ))
    .bind(customer_id)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let previous_sealed: Option<String> = row.try_get("previous_secret_sealed")?;
    let previous_key_id: Option<String> = row.try_get("previous_secret_key_id")?;
    let secrets = EndpointSecrets {
        current: SealedSecret {
            sealed: row.try_get("secret_sealed")?,
            key_id: row.try_get("secret_key_id")?,
        },
        previous: previous_sealed
            .zip(previous_key_id)
            .map(|(sealed, key_id)| SealedSecret { sealed, key_id }),
    };
    Ok(Some((endpoint(&row)?, secrets)))
}

/// One newest-first page (`limit` rows) of the customer's endpoints that are not deleted.
pub async fn list(
    conn: &mut PgConnection,
    customer_id: Uuid,
    after: Option<After>,
    limit: i64,
) -> Result<Vec<Endpoint>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks.endpoints WHERE customer_id = $1 AND status <> 'deleted' \
           AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3)) \
         ORDER BY created_at DESC, id DESC LIMIT $4"
    ))
    .bind(customer_id)
    .bind(after.map(|after| after.created_at))
    .bind(after.map(|after| after.id).unwrap_or_default())
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(endpoint).collect()
}

/// Marks the customer's endpoint deleted and returns it.
pub async fn mark_deleted(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<Endpoint>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "UPDATE webhooks.endpoints SET status = 'deleted', updated_at = $3, \
           previous_secret_sealed = NULL, previous_secret_key_id = NULL, previous_secret_expires_at = NULL \
         WHERE customer_id = $1 AND id = $2 AND status <> 'deleted' RETURNING ",
        columns!()
    ))
    .bind(customer_id)
    .bind(id)
    .bind(now)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(endpoint).transpose()
}

/// Stores rotated secrets: `current` signs from now, `previous` also until `expires_at`.
pub async fn store_rotation(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
    current: &SealedSecret,
    previous: &SealedSecret,
    expires_at: DateTime<Utc>,
) -> Result<Option<Endpoint>, sqlx::Error> {
    let row = sqlx::query(concat!(
        "UPDATE webhooks.endpoints SET secret_sealed = $3, secret_key_id = $4, previous_secret_sealed = $5, \
           previous_secret_key_id = $6, previous_secret_expires_at = $7, updated_at = now() \
         WHERE customer_id = $1 AND id = $2 AND status <> 'deleted' RETURNING ",
        columns!()
    ))
    .bind(customer_id)
    .bind(id)
    .bind(&current.sealed)
    .bind(&current.key_id)
    .bind(&previous.sealed)
    .bind(&previous.key_id)
    .bind(expires_at)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(endpoint).transpose()
}

/// Endpoints whose secrets are sealed with a key other than `current_key_id` (at most `limit`).
pub async fn sealed_with_old_keys(
    conn: &mut PgConnection,
    current_key_id: &str,
    limit: i64,
) -> Result<Vec<(Uuid, EndpointSecrets)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, secret_sealed, secret_key_id, previous_secret_sealed, previous_secret_key_id \
         FROM webhooks.endpoints WHERE secret_key_id <> $1 OR previous_secret_key_id <> $1 LIMIT $2",
    )
    .bind(current_key_id)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            let previous_sealed: Option<String> = row.try_get("previous_secret_sealed")?;
            let previous_key_id: Option<String> = row.try_get("previous_secret_key_id")?;
            Ok((
                row.try_get("id")?,
                EndpointSecrets {
                    current: SealedSecret {
                        sealed: row.try_get("secret_sealed")?,
                        key_id: row.try_get("secret_key_id")?,
                    },
                    previous: previous_sealed
                        .zip(previous_key_id)
                        .map(|(sealed, key_id)| SealedSecret { sealed, key_id }),
                },
            ))
        })
        .collect()
}

/// Replaces the sealed secrets of an endpoint if they are still `old` (re-sealing under a new key).
pub async fn reseal(
    conn: &mut PgConnection,
    id: Uuid,
    old: &EndpointSecrets,
    new: &EndpointSecrets,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE webhooks.endpoints SET secret_sealed = $3, secret_key_id = $4, \
           previous_secret_sealed = $5, previous_secret_key_id = $6 \
         WHERE id = $1 AND secret_sealed = $2 AND previous_secret_sealed IS NOT DISTINCT FROM $7",
    )
    .bind(id)
    .bind(&old.current.sealed)
    .bind(&new.current.sealed)
    .bind(&new.current.key_id)
    .bind(new.previous.as_ref().map(|secret| &secret.sealed))
    .bind(new.previous.as_ref().map(|secret| &secret.key_id))
    .bind(old.previous.as_ref().map(|secret| &secret.sealed))
    .execute(conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

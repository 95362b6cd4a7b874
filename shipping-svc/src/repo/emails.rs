//! The message log of label emails: one row per shipment, its state and attempts.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};
use uuid::Uuid;

/// A label email's log entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailRecord {
    pub id: Uuid,
    pub shipment_id: Uuid,
    pub message_id: String,
    pub to_address: String,
    pub subject: String,
    /// sending, sent or failed.
    pub status: String,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub sent_at: Option<DateTime<Utc>>,
}

/// Inserts the shipment's email as `sending` unless it has one; returns the row, locked.
pub async fn claim(
    conn: &mut PgConnection,
    record: &EmailRecord,
    customer_id: Uuid,
    now: DateTime<Utc>,
) -> Result<EmailRecord, sqlx::Error> {
    sqlx::query(
        "INSERT INTO shipping.label_emails (id, shipment_id, customer_id, message_id, to_address, subject, status, \
           attempts, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'sending', 0, $7, $7) ON CONFLICT ON CONSTRAINT label_emails_once DO NOTHING",
    )
    .bind(record.id)
    .bind(record.shipment_id)
    .bind(customer_id)
    .bind(&record.message_id)
    .bind(&record.to_address)
    .bind(&record.subject)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    let row = sqlx::query(
        "SELECT id, shipment_id, message_id, to_address, subject, status, attempts, last_error, sent_at \
         FROM shipping.label_emails WHERE shipment_id = $1 FOR UPDATE",
    )
    .bind(record.shipment_id)
    .fetch_one(conn)
    .await?;
    Ok(EmailRecord {
        id: row.try_get("id")?,
        shipment_id: row.try_get("shipment_id")?,
        message_id: row.try_get("message_id")?,
        to_address: row.try_get("to_address")?,
        subject: row.try_get("subject")?,
        status: row.try_get("status")?,
        attempts: row.try_get("attempts")?,
        last_error: row.try_get("last_error")?,
        sent_at: row.try_get("sent_at")?,
    })
}

/// Records the outcome of one attempt.
pub async fn record_attempt(
    conn: &mut PgConnection,
    id: Uuid,
    outcome: Result<(), &str>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let (status, error, sent_at) = match outcome {
        Ok(()) => ("sent", None, Some(now)),
        Err(error) => ("failed", Some(error), None),
    };
    sqlx::query(
        "UPDATE shipping.label_emails SET status = $2, attempts = attempts + 1, last_error = $3, \
           sent_at = COALESCE($4, sent_at), updated_at = $5 WHERE id = $1",
    )
    .bind(id)
    .bind(status)
    .bind(error)
    .bind(sent_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Every label email, newest first (staff view and tests).
pub async fn list(conn: &mut PgConnection) -> Result<Vec<(Uuid, String, String, i32)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT shipment_id, to_address, status, attempts FROM shipping.label_emails ORDER BY created_at DESC",
    )
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("shipment_id")?,
                row.try_get("to_address")?,
                row.try_get("status")?,
                row.try_get("attempts")?,
            ))
        })
        .collect()
}

//! SQL of consents and COA emails (`results.recipient_consents`, `results.coa_emails`). Every
//! customer statement filters by `customer_id`; only the unsubscribe link finds a consent by its
//! id alone (its signed token is the authorization).

use super::consent::{CoaEmail, Consent, NewConsent};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

const CONSENT_COLUMNS: &str = "id, customer_id, recipient_email, consented_by, consented_at, text_version, mechanism, \
     evidence_reference, recorded_at, withdrawn_at, withdrawal_mechanism";
const EMAIL_COLUMNS: &str = "e.id, e.customer_id, e.coa_id, c.accession_number, e.consent_id, e.recipient_email, \
     e.status, e.message_id, e.created_at, e.sent_at";

#[derive(sqlx::FromRow)]
struct ConsentRow {
    id: Uuid,
    customer_id: Uuid,
    recipient_email: String,
    consented_by: String,
    consented_at: DateTime<Utc>,
    text_version: String,
    mechanism: String,
    evidence_reference: Option<String>,
    recorded_at: DateTime<Utc>,
    withdrawn_at: Option<DateTime<Utc>>,
    withdrawal_mechanism: Option<String>,
}

impl From<ConsentRow> for Consent {
    fn from(row: ConsentRow) -> Self {
        Self {
            id: row.id,
            customer_id: row.customer_id,
            recipient_email: row.recipient_email,
            consented_by: row.consented_by,
            consented_at: row.consented_at,
            text_version: row.text_version,
            mechanism: row.mechanism,
            evidence_reference: row.evidence_reference,
            recorded_at: row.recorded_at,
            withdrawn_at: row.withdrawn_at,
            withdrawal_mechanism: row.withdrawal_mechanism,
        }
    }
}

/// Whether `error` is the violation of the one-active-consent-per-recipient index.
pub fn is_second_active_consent(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.constraint() == Some("recipient_consents_one_active"))
}

/// Inserts a consent.
pub async fn insert_consent(
    conn: &mut PgConnection,
    id: Uuid,
    customer_id: Uuid,
    consent: &NewConsent,
    recipient_key: &str,
    now: DateTime<Utc>,
) -> Result<Consent, sqlx::Error> {
    let sql = format!(
        "INSERT INTO results.recipient_consents (id, customer_id, recipient_email, recipient_key, consented_by, \
           consented_at, text_version, mechanism, evidence_reference, recorded_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING {CONSENT_COLUMNS}"
    );
    let row: ConsentRow = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(customer_id)
        .bind(&consent.recipient_email)
        .bind(recipient_key)
        .bind(&consent.consented_by)
        .bind(consent.consented_at)
        .bind(&consent.text_version)
        .bind(&consent.mechanism)
        .bind(&consent.evidence_reference)
        .bind(now)
        .fetch_one(conn)
        .await?;
    Ok(row.into())
}

/// The customer's active consent for a recipient, locked until the transaction ends (a send and
/// a withdrawal of the same consent are serialized).
pub async fn lock_active_consent(
    conn: &mut PgConnection,
    customer_id: Uuid,
    recipient_key: &str,
) -> Result<Option<Consent>, sqlx::Error> {
    let sql = format!(
        "SELECT {CONSENT_COLUMNS} FROM results.recipient_consents \
         WHERE customer_id = $1 AND recipient_key = $2 AND withdrawn_at IS NULL FOR UPDATE"
    );
    let row: Option<ConsentRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(customer_id)
        .bind(recipient_key)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(Into::into))
}

/// When the recipient last unsubscribed from this customer's emails through a link, if ever.
pub async fn last_unsubscribe(
    conn: &mut PgConnection,
    customer_id: Uuid,
    recipient_key: &str,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT max(withdrawn_at) FROM results.recipient_consents \
         WHERE customer_id = $1 AND recipient_key = $2 AND withdrawal_mechanism = 'one_click_unsubscribe'",
    )
    .bind(customer_id)
    .bind(recipient_key)
    .fetch_one(conn)
    .await
}

/// A consent by id, locked: the customer's own (`Some(customer)`), or any (the unsubscribe link).
pub async fn lock_consent(
    conn: &mut PgConnection,
    customer_id: Option<Uuid>,
    id: Uuid,
) -> Result<Option<Consent>, sqlx::Error> {
    let sql = format!(
        "SELECT {CONSENT_COLUMNS} FROM results.recipient_consents \
         WHERE id = $1 AND ($2::uuid IS NULL OR customer_id = $2) FOR UPDATE"
    );
    let row: Option<ConsentRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(customer_id)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(Into::into))
}

/// A consent by id, unlocked (the unsubscribe page's check).
pub async fn consent(conn: &mut PgConnection, id: Uuid) -> Result<Option<Consent>, sqlx::Error> {
    let sql = format!("SELECT {CONSENT_COLUMNS} FROM results.recipient_consents WHERE id = $1");
    let row: Option<ConsentRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(Into::into))
}

/// Marks a consent withdrawn now by `mechanism`.
pub async fn withdraw(
    conn: &mut PgConnection,
    id: Uuid,
    mechanism: &str,
    now: DateTime<Utc>,
) -> Result<Consent, sqlx::Error> {
    let sql = format!(
        "UPDATE results.recipient_consents SET withdrawn_at = $2, withdrawal_mechanism = $3 \
         WHERE id = $1 RETURNING {CONSENT_COLUMNS}"
    );
    let row: ConsentRow = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(now)
        .bind(mechanism)
        .fetch_one(conn)
        .await?;
    Ok(row.into())
}

/// What a consent listing is narrowed to.
#[derive(Clone, Debug, Default)]
pub struct ConsentFilter {
    pub recipient_key: Option<String>,
    /// `Some(true)`: active only; `Some(false)`: withdrawn only.
    pub active: Option<bool>,
    pub after: Option<(DateTime<Utc>, Uuid)>,
    pub limit: i64,
}

/// The customer's consents, newest recorded first.
pub async fn list_consents(
    conn: &mut PgConnection,
    customer_id: Uuid,
    filter: &ConsentFilter,
) -> Result<Vec<Consent>, sqlx::Error> {
    let sql = format!(
        "SELECT {CONSENT_COLUMNS} FROM results.recipient_consents \
         WHERE customer_id = $1 AND ($2::text IS NULL OR recipient_key = $2) \
           AND ($3::bool IS NULL OR (withdrawn_at IS NULL) = $3) \
           AND ($4::timestamptz IS NULL OR (recorded_at, id) < ($4, $5)) \
         ORDER BY recorded_at DESC, id DESC LIMIT $6"
    );
    let rows: Vec<ConsentRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(customer_id)
        .bind(&filter.recipient_key)
        .bind(filter.active)
        .bind(filter.after.map(|(at, _)| at))
        .bind(filter.after.map(|(_, id)| id))
        .bind(filter.limit)
        .fetch_all(conn)
        .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// The emails to a recipient that count against its limit since `since` (sending or sent),
/// other than `except`: how many, and when the oldest of them was created.
pub async fn recent_emails(
    conn: &mut PgConnection,
    customer_id: Uuid,
    recipient_key: &str,
    since: DateTime<Utc>,
    except: Option<Uuid>,
) -> Result<(i64, Option<DateTime<Utc>>), sqlx::Error> {
    sqlx::query_as(
        "SELECT count(*), min(created_at) FROM results.coa_emails \
         WHERE customer_id = $1 AND recipient_key = $2 AND created_at > $3 \
           AND status IN ('sending', 'sent') AND ($4::uuid IS NULL OR id <> $4)",
    )
    .bind(customer_id)
    .bind(recipient_key)
    .bind(since)
    .bind(except)
    .fetch_one(conn)
    .await
}

#[derive(sqlx::FromRow)]
struct EmailRow {
    id: Uuid,
    customer_id: Uuid,
    coa_id: Uuid,
    accession_number: String,
    consent_id: Uuid,
    recipient_email: String,
    status: String,
    message_id: String,
    created_at: DateTime<Utc>,
    sent_at: Option<DateTime<Utc>>,
}

impl EmailRow {
    fn into_email(self, verify_url: String) -> CoaEmail {
        CoaEmail {
            id: self.id,
            customer_id: self.customer_id,
            coa_id: self.coa_id,
            accession_number: self.accession_number,
            consent_id: self.consent_id,
            recipient_email: self.recipient_email,
            status: self.status,
            message_id: self.message_id,
            verify_url,
            created_at: self.created_at,
            sent_at: self.sent_at,
        }
    }
}

/// Records an email about to be sent (`sending`).
pub async fn insert_email(
    conn: &mut PgConnection,
    email: &CoaEmail,
    recipient_key: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO results.coa_emails (id, customer_id, coa_id, consent_id, recipient_email, recipient_key, \
           message_id, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'sending', $8)",
    )
    .bind(email.id)
    .bind(email.customer_id)
    .bind(email.coa_id)
    .bind(email.consent_id)
    .bind(&email.recipient_email)
    .bind(recipient_key)
    .bind(&email.message_id)
    .bind(email.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The customer's email `id`, with `verify_url` (not stored: it follows from the COA).
pub async fn email(
    conn: &mut PgConnection,
    customer_id: Uuid,
    id: Uuid,
    verify_url: String,
) -> Result<Option<CoaEmail>, sqlx::Error> {
    let sql = format!(
        "SELECT {EMAIL_COLUMNS} FROM results.coa_emails e JOIN results.coas c ON c.id = e.coa_id \
         WHERE e.customer_id = $1 AND e.id = $2"
    );
    let row: Option<EmailRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(customer_id)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|row| row.into_email(verify_url)))
}

/// Sends an earlier failed or interrupted email again under the consent now in force.
pub async fn mark_sending(conn: &mut PgConnection, id: Uuid, consent_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE results.coa_emails SET status = 'sending', consent_id = $2 WHERE id = $1")
        .bind(id)
        .bind(consent_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Records what the relay answered: `sent` at `now`, or `failed` with the error.
pub async fn record_outcome(
    conn: &mut PgConnection,
    id: Uuid,
    outcome: Result<(), &str>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let (status, error, sent_at) = match outcome {
        Ok(()) => ("sent", None, Some(now)),
        Err(error) => ("failed", Some(error), None),
    };
    sqlx::query("UPDATE results.coa_emails SET status = $2, last_error = $3, sent_at = $4 WHERE id = $1")
        .bind(id)
        .bind(status)
        .bind(error)
        .bind(sent_at)
        .execute(conn)
        .await?;
    Ok(())
}

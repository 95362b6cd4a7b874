//! Checkout sessions, sandbox card tokens and applied processor webhooks.
//!
//! Sessions are looked up by their public id across customers (the id in the hosted URL is the
//! capability the pay page holds); every other lookup filters by customer.

use super::bad_value;
use crate::domain::PaymentMethod;
use crate::domain::checkout::{
    CardBehaviour, CheckoutSession, CheckoutStatus, PURPOSE_PICKUP, PickupCharge, ProcessorKind, SavedCard,
    SessionSubject,
};
use chrono::{DateTime, Utc};
use platform::money::Cents;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

macro_rules! select_sessions {
    () => {
        "SELECT id, customer_id, invoice_id, purpose, pickup_id, order_id, order_number, description, \
         amount_cents, currency, hosted_url, status, processor, \
         processor_session_id, processor_url, pending_token, last_error, expires_at, created_at, completed_at \
         FROM payments.checkout_sessions "
    };
}

/// Inserts a new open session; false when the invoice already has an open one
/// (`checkout_sessions_one_open`) or the pickup a session (`checkout_sessions_one_per_pickup`).
pub async fn insert_session(conn: &mut PgConnection, session: &CheckoutSession) -> Result<bool, sqlx::Error> {
    if let SessionSubject::Pickup(charge) = &session.subject {
        return insert_pickup_session(conn, session, charge).await;
    }
    let inserted = sqlx::query(
        "INSERT INTO payments.checkout_sessions (id, customer_id, invoice_id, amount_cents, currency, hosted_url, \
           status, processor, processor_session_id, processor_url, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (invoice_id) WHERE status = 'open' DO NOTHING",
    )
    .bind(&session.id)
    .bind(session.customer_id)
    .bind(session.invoice_id())
    .bind(session.amount.0)
    .bind(&session.currency)
    .bind(&session.hosted_url)
    .bind(session.status.as_str())
    .bind(session.processor.as_str())
    .bind(&session.processor_session_id)
    .bind(&session.processor_url)
    .bind(session.expires_at)
    .bind(session.created_at)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

async fn insert_pickup_session(
    conn: &mut PgConnection,
    session: &CheckoutSession,
    charge: &PickupCharge,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.checkout_sessions (id, customer_id, purpose, pickup_id, order_id, order_number, \
           description, amount_cents, currency, hosted_url, status, processor, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (pickup_id) WHERE pickup_id IS NOT NULL DO NOTHING",
    )
    .bind(&session.id)
    .bind(session.customer_id)
    .bind(PURPOSE_PICKUP)
    .bind(charge.pickup_id)
    .bind(charge.order_id)
    .bind(&charge.order_number)
    .bind(&charge.description)
    .bind(session.amount.0)
    .bind(&session.currency)
    .bind(&session.hosted_url)
    .bind(session.status.as_str())
    .bind(session.processor.as_str())
    .bind(session.expires_at)
    .bind(session.created_at)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The customer's session of door pickup `pickup_id` (it has one at most).
pub async fn session_of_pickup(
    conn: &mut PgConnection,
    customer_id: Uuid,
    pickup_id: Uuid,
) -> Result<Option<CheckoutSession>, sqlx::Error> {
    let row = sqlx::query(concat!(
        select_sessions!(),
        "WHERE customer_id = $1 AND pickup_id = $2"
    ))
    .bind(customer_id)
    .bind(pickup_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| session_from_row(&row)).transpose()
}

/// A payment captured by a pickup session.
#[derive(Clone, Debug)]
pub struct PickupPayment {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub pickup_id: Uuid,
    pub session_id: String,
    pub order_id: Uuid,
    /// `succeeded`, or `refund_due` (captured after the session expired).
    pub status: &'static str,
    pub amount: Cents,
    pub currency: String,
    pub external_reference: String,
    pub created_at: DateTime<Utc>,
}

/// Records a pickup payment; false when its processor reference was recorded before.
pub async fn insert_pickup_payment(
    conn: &mut PgConnection,
    payment: &PickupPayment,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.pickup_payments (id, customer_id, pickup_id, session_id, order_id, rail, status, \
           amount_cents, currency, external_reference, created_at) \
         VALUES ($1, $2, $3, $4, $5, $11, $6, $7, $8, $9, $10) \
         ON CONFLICT ON CONSTRAINT pickup_payments_reference DO NOTHING",
    )
    .bind(payment.id)
    .bind(payment.customer_id)
    .bind(payment.pickup_id)
    .bind(&payment.session_id)
    .bind(payment.order_id)
    .bind(payment.status)
    .bind(payment.amount.0)
    .bind(&payment.currency)
    .bind(&payment.external_reference)
    .bind(payment.created_at)
    .bind(PaymentMethod::CardCheckout.as_str())
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The session with public id `id`, locked for update (the pay page's capability lookup).
pub async fn lock_session(conn: &mut PgConnection, id: &str) -> Result<Option<CheckoutSession>, sqlx::Error> {
    let row = sqlx::query(concat!(select_sessions!(), "WHERE id = $1 FOR UPDATE"))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| session_from_row(&row)).transpose()
}

/// The session with public id `id` (the pay page's capability lookup).
pub async fn session(conn: &mut PgConnection, id: &str) -> Result<Option<CheckoutSession>, sqlx::Error> {
    let row = sqlx::query(concat!(select_sessions!(), "WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| session_from_row(&row)).transpose()
}

/// The newest session of the customer's invoice.
pub async fn latest_session(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
) -> Result<Option<CheckoutSession>, sqlx::Error> {
    let row = sqlx::query(concat!(
        select_sessions!(),
        "WHERE customer_id = $1 AND invoice_id = $2 ORDER BY created_at DESC, id DESC LIMIT 1"
    ))
    .bind(customer_id)
    .bind(invoice_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| session_from_row(&row)).transpose()
}

/// The newest session of each of the customer's invoices in `invoice_ids`.
pub async fn latest_sessions(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_ids: &[Uuid],
) -> Result<Vec<CheckoutSession>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        "SELECT DISTINCT ON (invoice_id) * FROM (",
        select_sessions!(),
        "WHERE customer_id = $1 AND invoice_id = ANY($2)) s ORDER BY invoice_id, created_at DESC, id DESC"
    ))
    .bind(customer_id)
    .bind(invoice_ids)
    .fetch_all(conn)
    .await?;
    rows.iter().map(session_from_row).collect()
}

/// The session the processor knows as `processor_session_id`, locked for update.
pub async fn lock_by_processor_session(
    conn: &mut PgConnection,
    processor: ProcessorKind,
    processor_session_id: &str,
) -> Result<Option<CheckoutSession>, sqlx::Error> {
    let row = sqlx::query(concat!(
        select_sessions!(),
        "WHERE processor = $1 AND processor_session_id = $2 FOR UPDATE"
    ))
    .bind(processor.as_str())
    .bind(processor_session_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| session_from_row(&row)).transpose()
}

/// Records a declined attempt: the message shown on the page, one more attempt, no pending step.
pub async fn record_decline(conn: &mut PgConnection, id: &str, message: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.checkout_sessions SET last_error = $2, attempts = attempts + 1, pending_token = NULL \
         WHERE id = $1",
    )
    .bind(id)
    .bind(message)
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets (or clears) the card token waiting for its authentication step.
pub async fn set_pending(conn: &mut PgConnection, id: &str, token: Option<&str>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.checkout_sessions SET pending_token = $2, attempts = attempts + 1 WHERE id = $1",
    )
    .bind(id)
    .bind(token)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the session paid by `payment_id`.
pub async fn complete(
    conn: &mut PgConnection,
    id: &str,
    payment_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.checkout_sessions SET status = 'completed', completed_at = $2, payment_id = $3, \
           pending_token = NULL, last_error = NULL WHERE id = $1",
    )
    .bind(id)
    .bind(now)
    .bind(payment_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the invoice's open sessions paid by `payment_id` (a payment on another rail, e.g. the
/// pay page's "settled stablecoin" option, settled the invoice: no card may be charged after it).
pub async fn complete_open_of_invoice(
    conn: &mut PgConnection,
    invoice_id: Uuid,
    payment_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.checkout_sessions SET status = 'completed', completed_at = $2, payment_id = $3, \
           pending_token = NULL, last_error = NULL WHERE invoice_id = $1 AND status = 'open'",
    )
    .bind(invoice_id)
    .bind(now)
    .bind(payment_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks one session expired (if still open).
pub async fn expire(conn: &mut PgConnection, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.checkout_sessions SET status = 'expired', pending_token = NULL \
         WHERE id = $1 AND status = 'open'",
    )
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Expires the open session of an invoice (its order was cancelled); the processor's session id
/// of each, for the caller to end that side after commit.
pub async fn expire_open_of_invoice(
    conn: &mut PgConnection,
    customer_id: Uuid,
    invoice_id: Uuid,
) -> Result<Vec<Option<String>>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE payments.checkout_sessions SET status = 'expired', pending_token = NULL \
         WHERE customer_id = $1 AND invoice_id = $2 AND status = 'open' RETURNING processor_session_id",
    )
    .bind(customer_id)
    .bind(invoice_id)
    .fetch_all(conn)
    .await
}

/// A session the sweeper expired.
#[derive(Clone, Debug)]
pub struct ExpiredSession {
    pub id: String,
    pub customer_id: Uuid,
    /// The invoice or door pickup it was to pay.
    pub subject: SessionSubject,
    pub amount: Cents,
    pub currency: String,
    pub processor: ProcessorKind,
    pub processor_session_id: Option<String>,
}

impl ExpiredSession {
    /// The expired view of `session` (one expired by a processor's webhook).
    pub fn of(session: &CheckoutSession) -> Self {
        Self {
            id: session.id.clone(),
            customer_id: session.customer_id,
            subject: session.subject.clone(),
            amount: session.amount,
            currency: session.currency.clone(),
            processor: session.processor,
            processor_session_id: session.processor_session_id.clone(),
        }
    }
}

/// What an expiring UPDATE returns of each session ([`expired_sessions`] reads it).
macro_rules! expired_columns {
    () => {
        "RETURNING id, customer_id, invoice_id, purpose, pickup_id, order_id, order_number, description, \
         amount_cents, currency, processor, processor_session_id"
    };
}

/// Expires up to `limit` open sessions whose time ran out by `now`, returning them.
pub async fn sweep_expired(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ExpiredSession>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        "UPDATE payments.checkout_sessions SET status = 'expired', pending_token = NULL \
         WHERE id IN (SELECT id FROM payments.checkout_sessions WHERE status = 'open' AND expires_at <= $1 \
                      ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) ",
        expired_columns!()
    ))
    .bind(now)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    expired_sessions(&rows)
}

/// Ends the open door-pickup sessions of the customer's order (the order was cancelled: its
/// label is void and its pickups are cancelled, so none of them may be paid any more).
pub async fn expire_open_pickups_of_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Vec<ExpiredSession>, sqlx::Error> {
    let rows = sqlx::query(concat!(
        "UPDATE payments.checkout_sessions SET status = 'expired', pending_token = NULL \
         WHERE customer_id = $1 AND order_id = $2 AND purpose = 'pickup' AND status = 'open' ",
        expired_columns!()
    ))
    .bind(customer_id)
    .bind(order_id)
    .fetch_all(conn)
    .await?;
    expired_sessions(&rows)
}

fn expired_sessions(rows: &[PgRow]) -> Result<Vec<ExpiredSession>, sqlx::Error> {
    rows.iter()
        .map(|row| {
            let processor: String = row.try_get("processor")?;
            Ok(ExpiredSession {
                id: row.try_get("id")?,
                customer_id: row.try_get("customer_id")?,
                subject: subject_from_row(row)?,
                amount: Cents(row.try_get("amount_cents")?),
                currency: row.try_get("currency")?,
                processor: ProcessorKind::parse(&processor)
                    .ok_or_else(|| bad_value("processor", &processor))?,
                processor_session_id: row.try_get("processor_session_id")?,
            })
        })
        .collect()
}

/// The invoice or pickup of a session row (`checkout_sessions_subject` guarantees the columns).
fn subject_from_row(row: &PgRow) -> Result<SessionSubject, sqlx::Error> {
    let purpose: String = row.try_get("purpose")?;
    if purpose == PURPOSE_PICKUP {
        return Ok(SessionSubject::Pickup(PickupCharge {
            pickup_id: row.try_get("pickup_id")?,
            order_id: row.try_get("order_id")?,
            order_number: row.try_get("order_number")?,
            description: row.try_get("description")?,
        }));
    }
    let invoice_id: Option<Uuid> = row.try_get("invoice_id")?;
    invoice_id
        .map(SessionSubject::Invoice)
        .ok_or_else(|| bad_value("invoice_id", "NULL"))
}

fn session_from_row(row: &PgRow) -> Result<CheckoutSession, sqlx::Error> {
    let status: String = row.try_get("status")?;
    let processor: String = row.try_get("processor")?;
    Ok(CheckoutSession {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        subject: subject_from_row(row)?,
        amount: Cents(row.try_get("amount_cents")?),
        currency: row.try_get("currency")?,
        hosted_url: row.try_get("hosted_url")?,
        status: CheckoutStatus::parse(&status).ok_or_else(|| bad_value("status", &status))?,
        processor: ProcessorKind::parse(&processor).ok_or_else(|| bad_value("processor", &processor))?,
        processor_session_id: row.try_get("processor_session_id")?,
        processor_url: row.try_get("processor_url")?,
        pending_token: row.try_get("pending_token")?,
        last_error: row.try_get("last_error")?,
        expires_at: row.try_get("expires_at")?,
        created_at: row.try_get("created_at")?,
        completed_at: row.try_get("completed_at")?,
    })
}

/// A sandbox card token as stored.
#[derive(Clone, Debug)]
pub struct CardToken {
    pub token: String,
    pub card: SavedCard,
    pub behaviour: CardBehaviour,
}

/// Stores a card token of the customer.
pub async fn insert_token(
    conn: &mut PgConnection,
    customer_id: Uuid,
    token: &CardToken,
    saved: bool,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO payments.card_tokens (token, customer_id, brand, last4, exp_month, exp_year, behaviour, saved, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&token.token)
    .bind(customer_id)
    .bind(&token.card.brand)
    .bind(&token.card.last4)
    .bind(token.card.exp_month)
    .bind(token.card.exp_year)
    .bind(token.behaviour.as_str())
    .bind(saved)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// The customer's card token `token` (`saved_only`: only a card the customer saved).
pub async fn token(
    conn: &mut PgConnection,
    customer_id: Uuid,
    token: &str,
    saved_only: bool,
) -> Result<Option<CardToken>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT token, brand, last4, exp_month, exp_year, behaviour FROM payments.card_tokens \
         WHERE customer_id = $1 AND token = $2 AND (saved OR NOT $3)",
    )
    .bind(customer_id)
    .bind(token)
    .bind(saved_only)
    .fetch_optional(conn)
    .await?;
    row.map(|row| token_from_row(&row)).transpose()
}

/// The customer's saved cards, newest first.
pub async fn saved_cards(conn: &mut PgConnection, customer_id: Uuid) -> Result<Vec<SavedCard>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT token, brand, last4, exp_month, exp_year, behaviour FROM payments.card_tokens \
         WHERE customer_id = $1 AND saved ORDER BY created_at DESC LIMIT 20",
    )
    .bind(customer_id)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| token_from_row(row).map(|token| token.card))
        .collect()
}

fn token_from_row(row: &PgRow) -> Result<CardToken, sqlx::Error> {
    let behaviour: String = row.try_get("behaviour")?;
    let token: String = row.try_get("token")?;
    Ok(CardToken {
        card: SavedCard {
            token: token.clone(),
            brand: row.try_get("brand")?,
            last4: row.try_get("last4")?,
            exp_month: row.try_get("exp_month")?,
            exp_year: row.try_get("exp_year")?,
        },
        token,
        behaviour: CardBehaviour::parse(&behaviour).ok_or_else(|| bad_value("behaviour", &behaviour))?,
    })
}

/// Records a processor webhook event; false when it was applied before (a redelivery).
pub async fn first_processor_event(
    conn: &mut PgConnection,
    processor: ProcessorKind,
    event_id: &str,
    event_type: &str,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.processor_events (processor, event_id, event_type) VALUES ($1, $2, $3) \
         ON CONFLICT DO NOTHING",
    )
    .bind(processor.as_str())
    .bind(event_id)
    .bind(event_type)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Records the processor's side of a session opened lazily (stripe).
pub async fn set_processor(
    conn: &mut PgConnection,
    id: &str,
    processor_session_id: &str,
    url: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payments.checkout_sessions SET processor_session_id = $2, processor_url = $3 WHERE id = $1",
    )
    .bind(id)
    .bind(processor_session_id)
    .bind(url)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the customer's card token saved (offered on later checkouts) or not.
pub async fn set_saved(
    conn: &mut PgConnection,
    customer_id: Uuid,
    token: &str,
    saved: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE payments.card_tokens SET saved = $3 WHERE customer_id = $1 AND token = $2")
        .bind(customer_id)
        .bind(token)
        .bind(saved)
        .execute(conn)
        .await?;
    Ok(())
}

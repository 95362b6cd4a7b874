//! Shipments, their labels and carrier events, and the orders known to be paid.

use super::bad_value;
use crate::domain::packing::PackingStep;
use crate::domain::void::{RefundStatus, VoidedLabel};
use crate::domain::{Address, CarrierEvent, LabelOrder, Shipment, ShipmentStatus};
use chrono::{DateTime, Utc};
use platform::pagination::After;
use proto::common::PaymentMethod;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

const SELECT_SHIPMENTS: &str = "SELECT id, customer_id, order_id, order_number, payment_method, carrier_code, \
    service_code, tracking_number, tracking_url, status, ship_from, ship_to, packing_steps, carrier_shipment_id, \
    last_event_at, created_at, updated_at, refund_status, voided_at, sandbox FROM shipping.shipments ";

/// How a customer names a shipment: the shipment's or its order's UUID, or a tracking number
/// or an order number.
pub type ShipmentRef = platform::ids::Reference;

fn payment_method(row: &PgRow) -> Result<PaymentMethod, sqlx::Error> {
    let method: String = row.try_get("payment_method")?;
    PaymentMethod::parse(&method).ok_or_else(|| bad_value("payment method", &method))
}

fn shipment_from_row(row: &PgRow) -> Result<Shipment, sqlx::Error> {
    let status: String = row.try_get("status")?;
    let Json(ship_from): Json<Address> = row.try_get("ship_from")?;
    let Json(ship_to): Json<Address> = row.try_get("ship_to")?;
    let Json(packing_steps): Json<Vec<PackingStep>> = row.try_get("packing_steps")?;
    Ok(Shipment {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        order_id: row.try_get("order_id")?,
        order_number: row.try_get("order_number")?,
        payment_method: payment_method(row)?,
        carrier_code: row.try_get("carrier_code")?,
        service_code: row.try_get("service_code")?,
        tracking_number: row
            .try_get::<Option<String>, _>("tracking_number")?
            .unwrap_or_default(),
        tracking_url: row.try_get("tracking_url")?,
        status: ShipmentStatus::parse(&status).ok_or_else(|| bad_value("shipment status", &status))?,
        ship_from,
        ship_to,
        packing_steps,
        carrier_shipment_id: row.try_get("carrier_shipment_id")?,
        last_event_at: row.try_get("last_event_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        voided: voided_from_row(row)?,
        sandbox: row.try_get("sandbox")?,
    })
}

fn voided_from_row(row: &PgRow) -> Result<Option<VoidedLabel>, sqlx::Error> {
    let refund_status: Option<String> = row.try_get("refund_status")?;
    let voided_at: Option<DateTime<Utc>> = row.try_get("voided_at")?;
    let (Some(refund_status), Some(voided_at)) = (refund_status, voided_at) else {
        return Ok(None);
    };
    Ok(Some(VoidedLabel {
        refund_status: RefundStatus::parse(&refund_status)
            .ok_or_else(|| bad_value("refund status", &refund_status))?,
        voided_at,
    }))
}

/// The order's shipment row as [`claim`] locked it.
#[derive(Clone, Debug)]
pub struct Claimed {
    pub id: Uuid,
    /// The label is bought.
    pub bought: bool,
    /// The carrier's shipment recorded before a purchase (`""`: none yet).
    pub carrier_shipment_id: String,
}

/// Inserts the pending shipment of an order unless the order has one; then locks the order's
/// shipment and answers its id, whether its label is bought already, and the carrier shipment
/// recorded by an earlier attempt.
pub async fn claim(conn: &mut PgConnection, pending: &Shipment) -> Result<Claimed, sqlx::Error> {
    sqlx::query(
        "INSERT INTO shipping.shipments (id, customer_id, order_id, order_number, payment_method, label_state, \
           ship_from, ship_to, created_at, updated_at, sandbox) \
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $8, $9) \
         ON CONFLICT ON CONSTRAINT shipments_one_per_order DO NOTHING",
    )
    .bind(pending.id)
    .bind(pending.customer_id)
    .bind(pending.order_id)
    .bind(&pending.order_number)
    .bind(pending.payment_method.as_str())
    .bind(Json(&pending.ship_from))
    .bind(Json(&pending.ship_to))
    .bind(pending.created_at)
    .bind(pending.sandbox)
    .execute(&mut *conn)
    .await?;
    let row = sqlx::query(
        "SELECT id, label_state, carrier_shipment_id FROM shipping.shipments \
         WHERE order_id = $1 AND customer_id = $2 FOR UPDATE",
    )
    .bind(pending.order_id)
    .bind(pending.customer_id)
    .fetch_one(conn)
    .await?;
    let state: String = row.try_get("label_state")?;
    Ok(Claimed {
        id: row.try_get("id")?,
        bought: state == "bought",
        carrier_shipment_id: row.try_get("carrier_shipment_id")?,
    })
}

/// Records the carrier's shipment of a pending label before it is bought.
pub async fn record_carrier_shipment(
    conn: &mut PgConnection,
    id: Uuid,
    carrier_shipment_id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.shipments SET carrier_shipment_id = $2 WHERE id = $1 AND label_state = 'pending'",
    )
    .bind(id)
    .bind(carrier_shipment_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The next sandbox package number.
pub async fn next_package_number(conn: &mut PgConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT nextval('shipping.package_numbers')")
        .fetch_one(conn)
        .await
}

/// Stores the bought label on the claimed shipment: the row names its kept file (`key`) and
/// SHA-256.
pub async fn store_bought(
    conn: &mut PgConnection,
    shipment: &Shipment,
    key: &str,
    sha256: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.shipments SET label_state = 'bought', carrier_code = $2, service_code = $3, \
           tracking_number = $4, tracking_url = $5, status = $6, ship_from = $7, ship_to = $8, packing_steps = $9, \
           carrier_shipment_id = $10, updated_at = $11 \
         WHERE id = $1",
    )
    .bind(shipment.id)
    .bind(&shipment.carrier_code)
    .bind(&shipment.service_code)
    .bind(&shipment.tracking_number)
    .bind(&shipment.tracking_url)
    .bind(shipment.status.as_str())
    .bind(Json(&shipment.ship_from))
    .bind(Json(&shipment.ship_to))
    .bind(Json(&shipment.packing_steps))
    .bind(&shipment.carrier_shipment_id)
    .bind(shipment.updated_at)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO shipping.labels (shipment_id, pdf, blob_key, sha256, created_at) VALUES ($1, NULL, $2, $3, $4) \
         ON CONFLICT (shipment_id) DO UPDATE SET pdf = NULL, blob_key = EXCLUDED.blob_key, sha256 = EXCLUDED.sha256",
    )
    .bind(shipment.id)
    .bind(key)
    .bind(sha256)
    .bind(shipment.updated_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Where a label's PDF is.
pub enum LabelFile {
    /// In the blob store under `key`.
    Kept { key: String, sha256: String },
    /// In the row (bought before labels were kept in the store).
    Inline { pdf: Vec<u8>, sha256: String },
}

/// The label file of a shipment.
pub async fn label_file(
    conn: &mut PgConnection,
    shipment_id: Uuid,
) -> Result<Option<LabelFile>, sqlx::Error> {
    let row: Option<(Option<Vec<u8>>, Option<String>, String)> =
        sqlx::query_as("SELECT pdf, blob_key, sha256 FROM shipping.labels WHERE shipment_id = $1")
            .bind(shipment_id)
            .fetch_optional(conn)
            .await?;
    Ok(row.and_then(|(pdf, key, sha256)| match (key, pdf) {
        (Some(key), _) => Some(LabelFile::Kept { key, sha256 }),
        (None, Some(pdf)) => Some(LabelFile::Inline { pdf, sha256 }),
        (None, None) => None,
    }))
}

/// Up to `limit` labels still inline: (shipment id, PDF, SHA-256).
pub async fn inline_labels(
    conn: &mut PgConnection,
    limit: i64,
) -> Result<Vec<(Uuid, Vec<u8>, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT shipment_id, pdf, sha256 FROM shipping.labels \
         WHERE blob_key IS NULL AND pdf IS NOT NULL ORDER BY shipment_id LIMIT $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Records that an inline label is now kept under `key` and drops the row's copy; a row moved
/// already is left as it is.
pub async fn mark_label_kept(
    conn: &mut PgConnection,
    shipment_id: Uuid,
    key: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.labels SET blob_key = $2, pdf = NULL WHERE shipment_id = $1 AND blob_key IS NULL",
    )
    .bind(shipment_id)
    .bind(key)
    .execute(conn)
    .await?;
    Ok(())
}

/// The customer's shipment (label bought) named by `reference`.
pub async fn by_reference(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &ShipmentRef,
) -> Result<Option<Shipment>, sqlx::Error> {
    let row = match reference {
        ShipmentRef::Id(id) => {
            let query = format!(
                "{SELECT_SHIPMENTS} WHERE customer_id = $1 AND label_state = 'bought' AND (id = $2 OR order_id = $2)"
            );
            sqlx::query(sqlx::AssertSqlSafe(query))
                .bind(customer_id)
                .bind(id)
                .fetch_optional(conn)
                .await?
        }
        ShipmentRef::Text(text) => {
            let query = format!(
                "{SELECT_SHIPMENTS} WHERE customer_id = $1 AND label_state = 'bought' \
                 AND (tracking_number = $2 OR order_number = $2)"
            );
            sqlx::query(sqlx::AssertSqlSafe(query))
                .bind(customer_id)
                .bind(text)
                .fetch_optional(conn)
                .await?
        }
    };
    row.map(|row| shipment_from_row(&row)).transpose()
}

/// The shipment of an order (label bought), for any customer's order: the consumer's view.
pub async fn by_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<Shipment>, sqlx::Error> {
    by_reference(conn, customer_id, &ShipmentRef::Id(order_id)).await
}

/// Staff and carrier path: the shipment with this tracking number, locked.
pub async fn lock_by_tracking(
    conn: &mut PgConnection,
    tracking_number: &str,
) -> Result<Option<Shipment>, sqlx::Error> {
    let query =
        format!("{SELECT_SHIPMENTS} WHERE tracking_number = $1 AND label_state = 'bought' FOR UPDATE");
    let row = sqlx::query(sqlx::AssertSqlSafe(query))
        .bind(tracking_number)
        .fetch_optional(conn)
        .await?;
    row.map(|row| shipment_from_row(&row)).transpose()
}

/// The shipment with this id (no customer filter: signed download and pickup payment paths).
pub async fn by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<Shipment>, sqlx::Error> {
    let query = format!("{SELECT_SHIPMENTS} WHERE id = $1 AND label_state = 'bought'");
    let row = sqlx::query(sqlx::AssertSqlSafe(query))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|row| shipment_from_row(&row)).transpose()
}

/// Filters of the shipment listing.
#[derive(Clone, Debug, Default)]
pub struct ShipmentFilter {
    pub status: Option<ShipmentStatus>,
    pub order_id: Option<Uuid>,
}

/// One newest-first page of the customer's shipments.
pub async fn list(
    conn: &mut PgConnection,
    customer_id: Uuid,
    filter: &ShipmentFilter,
    after: Option<After>,
    fetch: i64,
) -> Result<Vec<Shipment>, sqlx::Error> {
    let query = format!(
        "{SELECT_SHIPMENTS} WHERE customer_id = $1 AND label_state = 'bought' \
         AND ($2::text IS NULL OR status = $2) AND ($3::uuid IS NULL OR order_id = $3) \
         AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5)) \
         ORDER BY created_at DESC, id DESC LIMIT $6"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(query))
        .bind(customer_id)
        .bind(filter.status.map(ShipmentStatus::as_str))
        .bind(filter.order_id)
        .bind(after.map(|after| after.created_at))
        .bind(after.map(|after| after.id))
        .bind(fetch)
        .fetch_all(conn)
        .await?;
    rows.iter().map(shipment_from_row).collect()
}

/// The carrier events of a shipment, oldest first.
pub async fn events(conn: &mut PgConnection, shipment_id: Uuid) -> Result<Vec<CarrierEvent>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, shipment_id, status, status_code, description, occurred_at, location, carrier_event_id \
         FROM shipping.carrier_events WHERE shipment_id = $1 ORDER BY occurred_at, id",
    )
    .bind(shipment_id)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            let status: String = row.try_get("status")?;
            Ok(CarrierEvent {
                id: row.try_get("id")?,
                shipment_id: row.try_get("shipment_id")?,
                status: ShipmentStatus::parse(&status).ok_or_else(|| bad_value("event status", &status))?,
                status_code: row.try_get("status_code")?,
                description: row.try_get("description")?,
                occurred_at: row.try_get("occurred_at")?,
                location: row.try_get("location")?,
                carrier_event_id: row.try_get("carrier_event_id")?,
            })
        })
        .collect()
}

/// Records a scan; false when the shipment has a scan with the same carrier id.
pub async fn insert_event(
    conn: &mut PgConnection,
    customer_id: Uuid,
    event: &CarrierEvent,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO shipping.carrier_events (id, shipment_id, customer_id, status, status_code, description, \
           occurred_at, location, carrier_event_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT ON CONSTRAINT carrier_events_once DO NOTHING",
    )
    .bind(event.id)
    .bind(event.shipment_id)
    .bind(customer_id)
    .bind(event.status.as_str())
    .bind(&event.status_code)
    .bind(&event.description)
    .bind(event.occurred_at)
    .bind(&event.location)
    .bind(&event.carrier_event_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Sets a shipment's current status and the time of the scan that set it.
pub async fn set_status(
    conn: &mut PgConnection,
    shipment_id: Uuid,
    status: ShipmentStatus,
    occurred_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE shipping.shipments SET status = $2, last_event_at = $3, updated_at = $4 WHERE id = $1",
    )
    .bind(shipment_id)
    .bind(status.as_str())
    .bind(occurred_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that an order is paid (once).
pub async fn mark_paid(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    rail: &str,
    paid_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO shipping.paid_orders (order_id, customer_id, rail, paid_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (order_id) DO NOTHING",
    )
    .bind(order_id)
    .bind(customer_id)
    .bind(rail)
    .bind(paid_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// True when the customer's order is known to be paid.
pub async fn is_paid(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<bool, sqlx::Error> {
    let found: Option<i32> =
        sqlx::query_scalar("SELECT 1 FROM shipping.paid_orders WHERE order_id = $1 AND customer_id = $2")
            .bind(order_id)
            .bind(customer_id)
            .fetch_optional(conn)
            .await?;
    Ok(found.is_some())
}

/// Remembers an announced order (once).
pub async fn remember_order(
    conn: &mut PgConnection,
    order: &LabelOrder,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO shipping.orders (order_id, customer_id, order_number, payment_method, quote_id, \
           shipping_address_id, created_at, sandbox) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (order_id) DO NOTHING",
    )
    .bind(order.order_id)
    .bind(order.customer_id)
    .bind(&order.order_number)
    .bind(order.payment_method.as_str())
    .bind(order.quote_id)
    .bind(&order.shipping_address_id)
    .bind(now)
    .bind(order.sandbox)
    .execute(conn)
    .await?;
    Ok(())
}

/// The customer's announced order.
pub async fn remembered_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<LabelOrder>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT order_id, customer_id, order_number, payment_method, quote_id, shipping_address_id, sandbox \
         FROM shipping.orders WHERE order_id = $1 AND customer_id = $2",
    )
    .bind(order_id)
    .bind(customer_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok(LabelOrder {
            customer_id: row.try_get("customer_id")?,
            order_id: row.try_get("order_id")?,
            order_number: row.try_get("order_number")?,
            payment_method: payment_method(&row)?,
            quote_id: row.try_get("quote_id")?,
            shipping_address_id: row.try_get("shipping_address_id")?,
            sandbox: row.try_get("sandbox")?,
        })
    })
    .transpose()
}

//! The order read model (`orders.order_views`) and the shipping block it includes
//! (`orders.order_shipping`).
//!
//! [`refresh`] renders an order's document from the normalized tables and upserts its row; every
//! use case that changes an order, its children or its shipping block calls it in the same
//! transaction, before committing, so the read model is never behind the orders schema.
//! [`find_view`] is the one indexed statement of `GET /orders/{reference}`.

use super::read::find_order;
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::status::OrderStatus;
use crate::view::{self, ShippingBlock};
use chrono::{DateTime, Utc};
use prost::Message;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// A stored row of the read model.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ViewRow {
    pub order_id: Uuid,
    pub shipment_id: Option<Uuid>,
    pub label_url_at: Option<i32>,
    pub shipping_unknown_at: Option<i32>,
    pub document: String,
}

/// The columns [`find_view`] reads.
macro_rules! select_view {
    ($where:literal) => {
        concat!(
            "SELECT order_id, shipment_id, label_url_at, shipping_unknown_at, document \
             FROM orders.order_views WHERE customer_id = $1 AND ",
            $where
        )
    };
}

/// Reads the customer's order view by UUID, order number, invoice number, accession number or
/// tracking number: one indexed statement.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT orders.order_views", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "orders.order_views"))]
pub async fn find_view(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &str,
) -> Result<Option<ViewRow>, sqlx::Error> {
    let query = match OrderReference::parse(reference) {
        Some(OrderReference::Id(id)) => {
            sqlx::query_as::<_, ViewRow>(select_view!("order_id = $2")).bind(customer_id).bind(id)
        }
        Some(OrderReference::OrderNumber(number)) => sqlx::query_as(select_view!("order_number = $2"))
            .bind(customer_id)
            .bind(number),
        Some(OrderReference::InvoiceNumber(number)) => sqlx::query_as(select_view!("invoice_number = $2"))
            .bind(customer_id)
            .bind(number),
        Some(OrderReference::AccessionNumber(number)) => sqlx::query_as(select_view!(
            "order_id = (SELECT order_id FROM orders.samples WHERE customer_id = $1 AND accession_number = $2)"
        ))
        .bind(customer_id)
        .bind(number),
        Some(OrderReference::TrackingNumber(number)) => sqlx::query_as(select_view!("tracking_number = $2"))
            .bind(customer_id)
            .bind(number),
        None => return Ok(None),
    };
    query.fetch_optional(&mut *conn).await
}

/// The order id a reference names when the order has no view yet (an order placed before the
/// read model existed), by the normalized tables.
pub async fn order_without_view(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    let Some(reference) = OrderReference::parse(reference) else {
        return Ok(None);
    };
    Ok(find_order(conn, customer_id, &reference)
        .await?
        .map(|order| order.id))
}

/// The shipping block kept for an order, if any.
async fn shipping_block(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<(Uuid, String, ShippingBlock)>, sqlx::Error> {
    let row: Option<(Uuid, String, String, Vec<u8>)> = sqlx::query_as(
        "SELECT shipment_id, tracking_number, status, label FROM orders.order_shipping \
         WHERE customer_id = $1 AND order_id = $2",
    )
    .bind(customer_id)
    .bind(order_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|(shipment_id, tracking_number, status, label)| {
        let label = proto::shipping::Label::decode(label.as_slice())
            .map_err(|error| sqlx::Error::Decode(Box::new(error)))?;
        Ok((shipment_id, tracking_number, ShippingBlock { status, label }))
    })
    .transpose()
}

/// Renders the customer's order from the normalized tables and stores its view; `false` when
/// there is no such order.
pub async fn refresh(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<bool, sqlx::Error> {
    let Some(order) = find_order(conn, customer_id, &OrderReference::Id(order_id)).await? else {
        return Ok(false);
    };
    store(conn, &order).await?;
    Ok(true)
}

/// Renders `order`, just read from the normalized tables in this transaction, with its kept
/// shipping block, and stores its view.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT orders.order_views", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT", db.collection.name = "orders.order_views"))]
pub async fn store(conn: &mut PgConnection, order: &Order) -> Result<(), sqlx::Error> {
    let customer_id = order.customer_id;
    let shipping = shipping_block(conn, customer_id, order.id).await?;
    let rendered = view::render(order, shipping.as_ref().map(|(_, _, block)| block))
        .map_err(|error| sqlx::Error::Encode(Box::new(error)))?;
    // An order that reached `label_generated` without a kept block was labelled before the read
    // model existed: the gateway fills its block from shipping-svc.
    let labelled = order
        .status_history
        .iter()
        .any(|change| change.to == OrderStatus::LabelGenerated);
    let shipping_unknown_at = match (&shipping, labelled) {
        (None, true) => rendered.shipping_null_at,
        _ => None,
    };
    let offset = |at: Option<usize>| at.and_then(|at| i32::try_from(at).ok());
    sqlx::query(
        "INSERT INTO orders.order_views (order_id, customer_id, order_number, invoice_number, \
           tracking_number, shipment_id, label_url_at, shipping_unknown_at, document) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (order_id) DO UPDATE SET invoice_number = EXCLUDED.invoice_number, \
           tracking_number = EXCLUDED.tracking_number, shipment_id = EXCLUDED.shipment_id, \
           label_url_at = EXCLUDED.label_url_at, shipping_unknown_at = EXCLUDED.shipping_unknown_at, \
           document = EXCLUDED.document",
    )
    .bind(order.id)
    .bind(customer_id)
    .bind(&order.order_number)
    .bind(
        order
            .payment
            .as_ref()
            .map(|payment| payment.invoice_number.as_str()),
    )
    .bind(shipping.as_ref().map(|(_, tracking, _)| tracking.as_str()))
    .bind(shipping.as_ref().map(|(shipment_id, _, _)| *shipment_id))
    .bind(offset(rendered.label_url_at))
    .bind(offset(shipping_unknown_at))
    .bind(&rendered.document)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The orders whose stored view is not what their normalized rows render to now (or that have
/// none): a write path that changed an order without refreshing its view. Reads every order;
/// for tests and for an operator's consistency check, never on a request path.
pub async fn stale_views(conn: &mut PgConnection) -> Result<Vec<Uuid>, sqlx::Error> {
    let orders: Vec<(Uuid, Uuid)> = sqlx::query_as("SELECT customer_id, id FROM orders.orders ORDER BY id")
        .fetch_all(&mut *conn)
        .await?;
    let mut stale = Vec::new();
    for (customer_id, order_id) in orders {
        let Some(order) = find_order(conn, customer_id, &OrderReference::Id(order_id)).await? else {
            continue;
        };
        let shipping = shipping_block(conn, customer_id, order_id).await?;
        let rendered = view::render(&order, shipping.as_ref().map(|(_, _, block)| block))
            .map_err(|error| sqlx::Error::Encode(Box::new(error)))?;
        let stored: Option<String> =
            sqlx::query_scalar("SELECT document FROM orders.order_views WHERE order_id = $1")
                .bind(order_id)
                .fetch_optional(&mut *conn)
                .await?;
        if stored.as_deref() != Some(rendered.document.as_str()) {
            stale.push(order_id);
        }
    }
    Ok(stale)
}

/// Keeps the label of `shipment.label_created` as the order's shipping block (a later label of
/// the same order replaces it); returns `false` when the customer has no such order.
pub async fn store_label(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    status: &str,
    label: &proto::shipping::Label,
) -> Result<bool, sqlx::Error> {
    let Ok(shipment_id) = Uuid::parse_str(&label.shipment_id) else {
        return Err(sqlx::Error::Decode(
            format!("shipment id {:?} is not a UUID", label.shipment_id).into(),
        ));
    };
    let result = sqlx::query(
        "INSERT INTO orders.order_shipping (order_id, customer_id, shipment_id, tracking_number, status, label) \
         SELECT id, customer_id, $3, $4, $5, $6 FROM orders.orders WHERE customer_id = $1 AND id = $2 \
         ON CONFLICT (order_id) DO UPDATE SET shipment_id = EXCLUDED.shipment_id, \
           tracking_number = EXCLUDED.tracking_number, status = EXCLUDED.status, status_at = NULL, \
           label = EXCLUDED.label",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(shipment_id)
    .bind(&label.tracking_number)
    .bind(status)
    .bind(label.encode_to_vec())
    .execute(&mut *conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Sets the shipment status of the order's shipping block when `occurred_at` is newer than the
/// scan that set the current one (scans out of order change nothing); returns whether it moved.
pub async fn set_shipping_status(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
    status: &str,
    occurred_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query(
        "UPDATE orders.order_shipping SET status = $3, status_at = $4 \
         WHERE customer_id = $1 AND order_id = $2 AND (status_at IS NULL OR status_at < $4)",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(status)
    .bind(occurred_at)
    .execute(&mut *conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Renders the views of orders that have none (orders placed before the read model existed),
/// a batch at a time; returns how many were rendered.
pub async fn backfill(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let mut rendered = 0;
    loop {
        let mut tx = pool.begin().await?;
        let missing: Vec<(Uuid, Uuid)> = sqlx::query_as(
            "SELECT o.customer_id, o.id FROM orders.orders o \
             WHERE NOT EXISTS (SELECT 1 FROM orders.order_views v WHERE v.order_id = o.id) \
             LIMIT 100 FOR UPDATE OF o SKIP LOCKED",
        )
        .fetch_all(&mut *tx)
        .await?;
        if missing.is_empty() {
            tx.commit().await?;
            return Ok(rendered);
        }
        for (customer_id, order_id) in &missing {
            if refresh(&mut tx, *customer_id, *order_id).await? {
                rendered += 1;
            }
        }
        tx.commit().await?;
    }
}

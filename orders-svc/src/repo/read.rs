//! Reads: one order by reference, one page of orders. Each is one statement: the orders' rows
//! with their children (lines, charges, history) aggregated as JSON arrays by correlated
//! subqueries, so a read costs one round trip to PostgreSQL instead of four.

use super::corrupt;
use crate::domain::cancellation::{CancelRequest, RequestStatus};
use crate::domain::order::{
    BankInstructions, Charge, LineItem, Order, OrderLine, PaymentSummary, SampleRequirement,
    StablecoinRequest, StatusChange,
};
use crate::domain::payment_method::PaymentMethod;
use crate::domain::reference::OrderReference;
use crate::domain::status::OrderStatus;
use chrono::{DateTime, Utc};
use platform::money::Cents;
use proto::common::InvoiceStatus;
use serde::Deserialize;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// `SELECT` of the order columns and the children of each order `o`, up to `FROM`.
macro_rules! select_orders {
    ($from_and_tail:literal) => {
        concat!(
            "SELECT o.id, o.order_number, o.customer_id, o.quote_id, o.status, o.payment_method, \
               o.catalog_revision, o.category_id, o.turnaround, o.turnaround_business_days, \
               o.conformity_samples, o.client_reference, o.notes, o.publish_raw_data, \
               o.expected_payer_address, o.billing_address_id, o.shipping_address_id, o.total_cents, \
               o.currency, o.invoice_id, o.invoice_number, o.invoice_status, o.amount_due_cents, \
               o.invoice_due_at, o.bank_instructions, o.created_at, o.updated_at, \
               o.quote_expires_at, o.hosted_url, o.checkout_expires_at, o.stablecoin_request, o.sandbox, \
               (SELECT json_agg(l ORDER BY l.line_number) FROM ( \
                  SELECT line_number, compound_name, lot_number, matrix_notes, items, sample_requirements, \
                         subtotal_cents \
                  FROM orders.order_lines WHERE customer_id = o.customer_id AND order_id = o.id) l) AS lines, \
               (SELECT json_agg(c ORDER BY c.position) FROM ( \
                  SELECT position, kind, description, quantity, unit_price_cents, amount_cents \
                  FROM orders.order_charges WHERE customer_id = o.customer_id AND order_id = o.id) c) AS charges, \
               (SELECT json_agg(h ORDER BY h.id) FROM ( \
                  SELECT id, from_status, to_status, changed_at, reason \
                  FROM orders.order_status_history WHERE customer_id = o.customer_id AND order_id = o.id) h) AS history, \
               (SELECT array_agg(s.accession_number ORDER BY s.line_number) FROM orders.samples s \
                  WHERE s.customer_id = o.customer_id AND s.order_id = o.id) AS accession_numbers, \
               (SELECT row_to_json(r) FROM ( \
                  SELECT id, status, reason, order_status, requested_at, decided_at, decided_by, note, charge_cents \
                  FROM orders.cancel_requests WHERE customer_id = o.customer_id AND order_id = o.id \
                  ORDER BY requested_at DESC, id DESC LIMIT 1) r) AS cancellation, \
               (SELECT json_agg(a ORDER BY a.requested_at, a.id) FROM ( \
                  SELECT id, line_number, accession_number, status, tests, total_cents, currency, \
                         catalog_revision, requested_at, paid_at, reported_at, invoice \
                  FROM orders.addons WHERE customer_id = o.customer_id AND order_id = o.id) a) AS addons \
             FROM ",
            $from_and_tail
        )
    };
}

/// Which page of a customer's orders to read, newest first.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    pub status: Option<OrderStatus>,
    /// Position of the last order of the previous page.
    pub after: Option<(DateTime<Utc>, Uuid)>,
    pub limit: i64,
}

/// Reads one of the customer's orders by UUID, order number, invoice number, accession number or
/// tracking number.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT orders.orders", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "orders.orders"))]
pub async fn find_order(
    conn: &mut PgConnection,
    customer_id: Uuid,
    reference: &OrderReference,
) -> Result<Option<Order>, sqlx::Error> {
    let query = match reference {
        OrderReference::Id(id) => sqlx::query_as::<_, OrderRow>(select_orders!(
            "orders.orders o WHERE o.customer_id = $1 AND o.id = $2"
        ))
        .bind(customer_id)
        .bind(*id),
        OrderReference::OrderNumber(number) => sqlx::query_as(select_orders!(
            "orders.orders o WHERE o.customer_id = $1 AND o.order_number = $2"
        ))
        .bind(customer_id)
        .bind(number),
        OrderReference::InvoiceNumber(number) => sqlx::query_as(select_orders!(
            "orders.orders o WHERE o.customer_id = $1 AND o.invoice_number = $2"
        ))
        .bind(customer_id)
        .bind(number),
        OrderReference::AccessionNumber(number) => sqlx::query_as(select_orders!(
            "orders.orders o WHERE o.customer_id = $1 AND o.id = \
               (SELECT order_id FROM orders.samples WHERE customer_id = $1 AND accession_number = $2)"
        ))
        .bind(customer_id)
        .bind(number),
        OrderReference::TrackingNumber(number) => sqlx::query_as(select_orders!(
            "orders.orders o WHERE o.customer_id = $1 AND o.id = \
               (SELECT order_id FROM orders.order_views WHERE customer_id = $1 AND tracking_number = $2)"
        ))
        .bind(customer_id)
        .bind(number),
    };
    query
        .fetch_optional(&mut *conn)
        .await?
        .map(OrderRow::into_order)
        .transpose()
}

/// Reads one page of the customer's orders, newest first.
#[tracing::instrument(name = "db", skip_all, fields(otel.name = "SELECT orders.order_views", otel.kind = "client", db.system.name = "postgresql", db.operation.name = "SELECT", db.collection.name = "orders.order_views"))]
pub async fn list_orders(
    conn: &mut PgConnection,
    customer_id: Uuid,
    filter: &ListFilter,
) -> Result<Vec<Order>, sqlx::Error> {
    let (after_time, after_id) = filter.after.unzip();
    let rows: Vec<OrderRow> = sqlx::query_as(select_orders!(
        "(SELECT * FROM orders.orders \
           WHERE customer_id = $1 AND ($2::text IS NULL OR status = $2) \
             AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) \
           ORDER BY created_at DESC, id DESC LIMIT $5) o \
         ORDER BY o.created_at DESC, o.id DESC"
    ))
    .bind(customer_id)
    .bind(filter.status.map(OrderStatus::as_str))
    .bind(after_time)
    .bind(after_id)
    .bind(filter.limit)
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter().map(OrderRow::into_order).collect()
}

#[derive(sqlx::FromRow)]
struct OrderRow {
    id: Uuid,
    order_number: String,
    customer_id: Uuid,
    quote_id: Uuid,
    status: String,
    payment_method: String,
    catalog_revision: String,
    category_id: String,
    turnaround: String,
    turnaround_business_days: i32,
    conformity_samples: i64,
    client_reference: Option<String>,
    notes: Option<String>,
    publish_raw_data: bool,
    expected_payer_address: Option<String>,
    billing_address_id: Option<Uuid>,
    shipping_address_id: Option<Uuid>,
    total_cents: i64,
    currency: String,
    invoice_id: Option<String>,
    invoice_number: Option<String>,
    invoice_status: Option<String>,
    amount_due_cents: Option<i64>,
    invoice_due_at: Option<DateTime<Utc>>,
    bank_instructions: Option<Json<BankInstructions>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    quote_expires_at: Option<DateTime<Utc>>,
    hosted_url: Option<String>,
    checkout_expires_at: Option<DateTime<Utc>>,
    stablecoin_request: Option<Json<StablecoinRequest>>,
    /// `NULL` when the order has none.
    lines: Option<Json<Vec<LineRow>>>,
    charges: Option<Json<Vec<ChargeRow>>>,
    history: Option<Json<Vec<HistoryRow>>>,
    accession_numbers: Option<Vec<String>>,
    cancellation: Option<Json<CancellationRow>>,
    addons: Option<Json<Vec<AddonRow>>>,
    sandbox: bool,
}

#[derive(Deserialize)]
struct AddonRow {
    id: Uuid,
    line_number: i32,
    accession_number: String,
    status: String,
    tests: Vec<crate::domain::addon::AddonTest>,
    total_cents: i64,
    currency: String,
    catalog_revision: String,
    requested_at: DateTime<Utc>,
    paid_at: Option<DateTime<Utc>>,
    reported_at: Option<DateTime<Utc>>,
    invoice: Option<crate::domain::order::PaymentSummary>,
}

#[derive(Deserialize)]
struct CancellationRow {
    id: Uuid,
    status: String,
    reason: String,
    order_status: String,
    requested_at: DateTime<Utc>,
    decided_at: Option<DateTime<Utc>>,
    decided_by: Option<String>,
    note: Option<String>,
    charge_cents: Option<i64>,
}

#[derive(Deserialize)]
struct LineRow {
    line_number: i32,
    compound_name: String,
    lot_number: Option<String>,
    matrix_notes: Option<String>,
    items: Vec<LineItem>,
    sample_requirements: Vec<SampleRequirement>,
    subtotal_cents: i64,
}

#[derive(Deserialize)]
struct ChargeRow {
    kind: String,
    description: String,
    quantity: i64,
    unit_price_cents: i64,
    amount_cents: i64,
}

#[derive(Deserialize)]
struct HistoryRow {
    from_status: String,
    to_status: String,
    changed_at: DateTime<Utc>,
    reason: String,
}

fn parse_status(value: &str) -> Result<OrderStatus, sqlx::Error> {
    OrderStatus::parse(value).ok_or_else(|| corrupt("status", value))
}

impl OrderRow {
    fn into_order(self) -> Result<Order, sqlx::Error> {
        let addons = self
            .addons
            .map(|Json(rows)| rows)
            .unwrap_or_default()
            .into_iter()
            .map(|row| -> Result<crate::domain::addon::Addon, sqlx::Error> {
                Ok(crate::domain::addon::Addon {
                    id: row.id,
                    order_id: self.id,
                    order_number: self.order_number.clone(),
                    line_number: row.line_number,
                    accession_number: row.accession_number,
                    status: crate::domain::addon::AddonStatus::parse(&row.status)
                        .ok_or_else(|| corrupt("add-on status", &row.status))?,
                    tests: row.tests,
                    total: Cents(row.total_cents),
                    currency: row.currency,
                    catalog_revision: row.catalog_revision,
                    requested_at: Some(row.requested_at),
                    paid_at: row.paid_at,
                    reported_at: row.reported_at,
                    invoice: row.invoice,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cancellation = self
            .cancellation
            .map(|Json(row)| -> Result<CancelRequest, sqlx::Error> {
                Ok(CancelRequest {
                    id: row.id,
                    order_id: self.id,
                    order_number: self.order_number.clone(),
                    status: RequestStatus::parse(&row.status)
                        .ok_or_else(|| corrupt("request status", &row.status))?,
                    reason: row.reason,
                    order_status: parse_status(&row.order_status)?,
                    requested_at: row.requested_at,
                    decided_at: row.decided_at,
                    decided_by: row.decided_by,
                    note: row.note,
                    charge_cents: row.charge_cents,
                })
            })
            .transpose()?;
        let lines = self.lines.map(|json| json.0).unwrap_or_default();
        let charges = self.charges.map(|json| json.0).unwrap_or_default();
        let history = self.history.map(|json| json.0).unwrap_or_default();
        let payment = match (self.invoice_id, self.invoice_number) {
            (Some(invoice_id), Some(invoice_number)) => Some(PaymentSummary {
                invoice_id,
                invoice_number,
                status: match self.invoice_status {
                    Some(status) => {
                        InvoiceStatus::parse(&status).ok_or_else(|| corrupt("invoice status", &status))?
                    }
                    None => InvoiceStatus::Unspecified,
                },
                amount_due: Cents(self.amount_due_cents.unwrap_or_default()),
                due_at: self.invoice_due_at,
                bank_instructions: self.bank_instructions.map(|json| json.0),
                hosted_url: self.hosted_url,
                checkout_expires_at: self.checkout_expires_at,
            }),
            _ => None,
        };
        let status_history = history
            .into_iter()
            .map(|row| {
                let from = if row.from_status.is_empty() {
                    None
                } else {
                    Some(parse_status(&row.from_status)?)
                };
                Ok(StatusChange {
                    from,
                    to: parse_status(&row.to_status)?,
                    changed_at: row.changed_at,
                    reason: row.reason,
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(Order {
            id: self.id,
            order_number: self.order_number,
            customer_id: self.customer_id,
            quote_id: self.quote_id,
            status: parse_status(&self.status)?,
            payment_method: PaymentMethod::parse(&self.payment_method)
                .ok_or_else(|| corrupt("payment method", &self.payment_method))?,
            catalog_revision: self.catalog_revision,
            category_id: self.category_id,
            turnaround: self.turnaround,
            turnaround_business_days: self.turnaround_business_days,
            conformity_samples: self.conformity_samples,
            client_reference: self.client_reference,
            notes: self.notes,
            publish_raw_data: self.publish_raw_data,
            sandbox: self.sandbox,
            expected_payer_address: self.expected_payer_address,
            billing_address_id: self.billing_address_id,
            shipping_address_id: self.shipping_address_id,
            quote_expires_at: self.quote_expires_at,
            lines: lines
                .into_iter()
                .map(|row| OrderLine {
                    line_number: row.line_number,
                    compound_name: row.compound_name,
                    lot_number: row.lot_number,
                    matrix_notes: row.matrix_notes,
                    items: row.items,
                    sample_requirements: row.sample_requirements,
                    subtotal: Cents(row.subtotal_cents),
                })
                .collect(),
            charges: charges
                .into_iter()
                .map(|row| Charge {
                    kind: row.kind,
                    description: row.description,
                    quantity: row.quantity,
                    unit_price: Cents(row.unit_price_cents),
                    amount: Cents(row.amount_cents),
                })
                .collect(),
            total: Cents(self.total_cents),
            currency: self.currency,
            status_history,
            payment,
            created_at: self.created_at,
            updated_at: self.updated_at,
            accession_numbers: self.accession_numbers.unwrap_or_default(),
            stablecoin: self.stablecoin_request.map(|json| json.0),
            cancellation,
            addons,
        })
    }
}

/// A customer's order's current status (no lock).
pub async fn order_status(
    conn: &mut PgConnection,
    customer_id: Uuid,
    order_id: Uuid,
) -> Result<Option<OrderStatus>, sqlx::Error> {
    let status: Option<String> =
        sqlx::query_scalar("SELECT status FROM orders.orders WHERE customer_id = $1 AND id = $2")
            .bind(customer_id)
            .bind(order_id)
            .fetch_optional(conn)
            .await?;
    Ok(status.as_deref().and_then(OrderStatus::parse))
}

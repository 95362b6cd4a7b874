//! Reading orders: one by reference (from the read model, already rendered, or from the
//! normalized tables), or a cursor page newest first.

use super::OrdersService;
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::status::OrderStatus;
use crate::repo::{self, ListFilter};
use crate::view::splice_label_url;
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{After, Listing, Page, PageRequest};
use uuid::Uuid;

/// The listing of a customer's orders, newest first (its cursors are refused elsewhere).
pub const ORDERS: Listing = Listing::new("orders");

/// One order as `GET /orders/{reference}` answers it: the REST `order` object as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderView {
    pub order_id: Uuid,
    pub json: Vec<u8>,
    /// An order labelled before the read model existed: the offset of the `null` of its
    /// `"shipping":null`, for the caller to fill from shipping-svc.
    pub shipping_unknown_at: Option<usize>,
}

impl OrdersService {
    /// Reads one of the customer's orders from the read model by UUID, `ORD-…`, `INV-…`, `ACC-…`
    /// or tracking number, with a freshly signed label URL in its shipping block; anything else,
    /// and another customer's order, is `not_found`. An order placed before the read model
    /// existed gets its view rendered by this read.
    pub async fn get_order_view(&self, customer_id: Uuid, reference: &str) -> Result<OrderView, ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "order not found");
        let mut conn = self.pool.acquire().await?;
        let row = match repo::view::find_view(&mut conn, customer_id, reference).await? {
            Some(row) => row,
            None => {
                let Some(order_id) =
                    repo::view::order_without_view(&mut conn, customer_id, reference).await?
                else {
                    return Err(not_found());
                };
                drop(conn);
                let mut tx = self.pool.begin().await?;
                repo::view::refresh(&mut tx, customer_id, order_id).await?;
                tx.commit().await?;
                let mut conn = self.pool.acquire().await?;
                repo::view::find_view(&mut conn, customer_id, &order_id.to_string())
                    .await?
                    .ok_or_else(not_found)?
            }
        };
        let offset = |at: Option<i32>| at.and_then(|at| usize::try_from(at).ok());
        let json = match (row.shipment_id, offset(row.label_url_at)) {
            (Some(shipment_id), Some(at)) => {
                let (url, expires_at) = self.label_links.signed_url(shipment_id, platform::time::now());
                splice_label_url(&row.document, at, &url, expires_at)
            }
            _ => row.document.into_bytes(),
        };
        Ok(OrderView {
            order_id: row.order_id,
            json,
            shipping_unknown_at: offset(row.shipping_unknown_at),
        })
    }

    /// Reads one of the customer's orders by UUID, `ORD-…` or `INV-…`; anything else, and another
    /// customer's order, is `not_found`.
    pub async fn get_order(&self, customer_id: Uuid, reference: &str) -> Result<Order, ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "order not found");
        let Some(reference) = OrderReference::parse(reference) else {
            return Err(not_found());
        };
        let mut conn = self.pool.acquire().await?;
        repo::find_order(&mut conn, customer_id, &reference)
            .await?
            .ok_or_else(not_found)
    }

    /// Reads one page of the customer's orders, newest first, optionally of one status.
    pub async fn list_orders(
        &self,
        customer_id: Uuid,
        status: Option<OrderStatus>,
        page: &PageRequest,
    ) -> Result<Page<Order>, ApiError> {
        let after: Option<After> = ORDERS.after(page)?;
        let filter = ListFilter {
            status,
            after: after.map(|after| (after.created_at, after.id)),
            limit: page.fetch(),
        };
        let mut conn = self.pool.acquire().await?;
        let orders = repo::list_orders(&mut conn, customer_id, &filter).await?;
        Ok(ORDERS.page(page, orders, |order| After::new(order.created_at, order.id)))
    }
}

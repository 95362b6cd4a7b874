//! Reading orders: one by reference, or a cursor page newest first.

use super::OrdersService;
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::status::OrderStatus;
use crate::repo::{self, ListFilter};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{After, Listing, Page, PageRequest};
use uuid::Uuid;

/// The listing of a customer's orders, newest first (its cursors are refused elsewhere).
pub const ORDERS: Listing = Listing::new("orders");

impl OrdersService {
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

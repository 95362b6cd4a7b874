//! Reading orders: one by reference, or a cursor page newest first.

use super::Orders;
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::status::OrderStatus;
use crate::repo::{self, ListFilter};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{decode_cursor, encode_cursor, page_limit};
use uuid::Uuid;

/// Kind of the listing's cursors (a cursor of another listing is `invalid_cursor`).
const CURSOR_KIND: &str = "orders";

/// A page of orders.
#[derive(Debug)]
pub struct OrderPage {
    pub orders: Vec<Order>,
    pub next_cursor: Option<String>,
}

impl Orders {
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
        status: Option<&str>,
        limit: Option<i32>,
        cursor: Option<&str>,
    ) -> Result<OrderPage, ApiError> {
        let status = status.map(OrderStatus::parse_filter).transpose()?;
        let limit = page_limit(limit)?;
        let after = cursor
            .map(|cursor| decode_cursor::<(DateTime<Utc>, Uuid)>(CURSOR_KIND, cursor))
            .transpose()?;
        let filter = ListFilter {
            status,
            after,
            limit: limit + 1,
        };
        let mut conn = self.pool.acquire().await?;
        let mut orders = repo::list_orders(&mut conn, customer_id, &filter).await?;
        let next_cursor = if orders.len() as i64 > limit {
            orders.truncate(limit as usize);
            orders
                .last()
                .map(|last| encode_cursor(CURSOR_KIND, &(last.created_at, last.id)))
        } else {
            None
        };
        Ok(OrderPage { orders, next_cursor })
    }
}

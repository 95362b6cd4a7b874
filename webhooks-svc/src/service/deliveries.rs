//! Reading deliveries (customers: their own endpoints; staff: any) and the staff operations:
//! redelivering dead letters and replaying stored events to an endpoint.

use super::{WebhooksService, endpoint_not_found};
use crate::domain::{Delivery, DeliveryStatus, Endpoint, EndpointStatus};
use crate::repo;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{After, Listing, Page, PageRequest};
use sqlx::PgConnection;
use uuid::Uuid;

/// The listing of an endpoint's deliveries, newest first.
pub const DELIVERIES: Listing = Listing::new("webhook_deliveries");

/// Who reads deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewer {
    /// A customer: only its own endpoints that are not deleted.
    Customer(Uuid),
    /// Staff with `webhooks.admin`: any endpoint.
    Staff,
}

impl WebhooksService {
    /// One newest-first page of an endpoint's deliveries with every attempt.
    pub async fn list_deliveries(
        &self,
        viewer: Viewer,
        endpoint_id: Uuid,
        status: Option<DeliveryStatus>,
        page: &PageRequest,
    ) -> Result<Page<Delivery>, ApiError> {
        let after = DELIVERIES.after(page)?;
        let mut conn = self.pool.acquire().await?;
        let endpoint = visible_endpoint(&mut conn, viewer, endpoint_id).await?;
        let rows = repo::deliveries::list(
            &mut conn,
            endpoint.customer_id,
            endpoint.id,
            status,
            after,
            page.fetch(),
        )
        .await?;
        Ok(DELIVERIES.page(page, rows, |delivery| {
            After::new(delivery.created_at, delivery.id)
        }))
    }

    /// Staff: queues dead deliveries again (of one endpoint, or of every active endpoint).
    pub async fn redeliver_dead_letters(&self, endpoint_id: Option<Uuid>) -> Result<i64, ApiError> {
        let mut conn = self.pool.acquire().await?;
        if let Some(endpoint_id) = endpoint_id {
            visible_endpoint(&mut conn, Viewer::Staff, endpoint_id).await?;
        }
        let queued = repo::deliveries::redeliver_dead(&mut conn, endpoint_id).await?;
        tracing::info!(?endpoint_id, queued, "dead webhook deliveries queued again");
        Ok(queued)
    }

    /// Staff: queues a delivery of every stored event since `since` that the endpoint subscribes
    /// to, keeping the original event ids (receivers deduplicate).
    pub async fn replay_events(&self, endpoint_id: Uuid, since: DateTime<Utc>) -> Result<i64, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let endpoint = visible_endpoint(&mut conn, Viewer::Staff, endpoint_id).await?;
        if endpoint.status != EndpointStatus::Active {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "the endpoint is {}; only active endpoints can replay",
                    endpoint.status.as_str()
                ),
            ));
        }
        let queued = repo::deliveries::replay(&mut conn, endpoint.customer_id, endpoint.id, since).await?;
        tracing::info!(endpoint.id = %endpoint_id, %since, queued, "webhook events replayed");
        Ok(queued)
    }
}

/// The endpoint as `viewer` may see it: customers their own, not deleted; staff any.
async fn visible_endpoint(
    conn: &mut PgConnection,
    viewer: Viewer,
    endpoint_id: Uuid,
) -> Result<Endpoint, ApiError> {
    let endpoint = match viewer {
        Viewer::Customer(customer_id) => repo::endpoints::find(conn, customer_id, endpoint_id).await?,
        Viewer::Staff => repo::endpoints::find_any(conn, endpoint_id).await?,
    };
    endpoint.ok_or_else(endpoint_not_found)
}

//! Reading shipments: one shipment with its carrier events and pickup, the listing, the label
//! (signed, expiring PDF URL, tracking, ship-to, packing steps), the signed download itself, and
//! the order's shipping block (also how an order is found by its tracking number).
//!
//! Label URLs are `platform::label_links` (HMAC-SHA256 with the service's signing key, expiring
//! on a five-minute boundary `label_url_ttl` from now); orders-svc mints the same URLs for the
//! `shipping` block of its order read model.

use super::{ShippingService, label_voided, shipment_not_found};
use crate::domain::status::{Normalize, ShipmentStatus};
use crate::domain::{Shipment, TrackedShipment};
use crate::repo;
use crate::repo::shipments::{ShipmentFilter, ShipmentRef};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{After, Listing, Page, PageRequest};
use uuid::Uuid;

/// The listing of a customer's shipments, newest first.
pub const SHIPMENTS: Listing = Listing::new("shipments");

/// A label as the API returns it.
#[derive(Clone, Debug)]
pub struct LabelView {
    pub shipment: Shipment,
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

impl ShippingService {
    /// The customer's shipment with its events and pickup.
    pub async fn get_shipment(
        &self,
        customer_id: Uuid,
        reference: &str,
    ) -> Result<TrackedShipment, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let shipment = repo::shipments::by_reference(&mut conn, customer_id, &ShipmentRef::parse(reference))
            .await?
            .ok_or_else(shipment_not_found)?;
        let events = repo::shipments::events(&mut conn, shipment.id).await?;
        let pickup = repo::pickups::by_shipment(&mut conn, shipment.id).await?;
        Ok(TrackedShipment {
            shipment,
            events,
            pickup,
        })
    }

    /// The shipment with this id of this customer, tracked.
    pub(crate) async fn tracked(
        &self,
        customer_id: Uuid,
        shipment_id: Uuid,
    ) -> Result<TrackedShipment, ApiError> {
        self.get_shipment(customer_id, &shipment_id.to_string()).await
    }

    /// One newest-first page of the customer's shipments (with their events).
    pub async fn list_shipments(
        &self,
        customer_id: Uuid,
        status: Option<&str>,
        order_id: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<TrackedShipment>, ApiError> {
        let filter = ShipmentFilter {
            status: status
                .map(|status| ShipmentStatus::parse_field(status, "status"))
                .transpose()?,
            order_id: order_id
                .map(|id| platform::ids::parse_uuid("orderId", id))
                .transpose()?,
        };
        let after = SHIPMENTS.after(page)?;
        let mut conn = self.pool.acquire().await?;
        let rows = repo::shipments::list(&mut conn, customer_id, &filter, after, page.fetch()).await?;
        let page = SHIPMENTS.page(page, rows, |shipment| {
            After::new(shipment.created_at, shipment.id)
        });
        let mut items = Vec::with_capacity(page.items.len());
        for shipment in page.items {
            let events = repo::shipments::events(&mut conn, shipment.id).await?;
            let pickup = repo::pickups::by_shipment(&mut conn, shipment.id).await?;
            items.push(TrackedShipment {
                shipment,
                events,
                pickup,
            });
        }
        Ok(Page {
            items,
            next_cursor: page.next_cursor,
        })
    }

    /// The label of the customer's shipment, with a fresh signed URL; a label voided because the
    /// order was cancelled is 409 `label_voided`.
    pub async fn get_label(&self, customer_id: Uuid, reference: &str) -> Result<LabelView, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let shipment = repo::shipments::by_reference(&mut conn, customer_id, &ShipmentRef::parse(reference))
            .await?
            .ok_or_else(shipment_not_found)?;
        if let Some(voided) = &shipment.voided {
            return Err(label_voided(voided));
        }
        Ok(self.label_view(shipment))
    }

    fn label_view(&self, shipment: Shipment) -> LabelView {
        let (url, expires_at) = self.label_links.signed_url(shipment.id, platform::time::now());
        LabelView {
            shipment,
            url,
            expires_at,
        }
    }

    /// The PDF of a signed label URL; an edited, foreign or expired URL is the same 404, a label
    /// voided since the URL was minted is 409 `label_voided`.
    pub async fn download_label(
        &self,
        shipment_id: &str,
        expires: i64,
        signature: &str,
    ) -> Result<(Vec<u8>, String), ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "label not found or link expired");
        let id = Uuid::parse_str(shipment_id.trim_end_matches(".pdf")).map_err(|_| not_found())?;
        if !self.label_links.verify(id, expires, signature) {
            return Err(not_found());
        }
        if expires <= platform::time::now().timestamp() {
            return Err(not_found());
        }
        let shipment = {
            let mut conn = self.pool.acquire().await?;
            repo::shipments::by_id(&mut conn, id)
                .await?
                .ok_or_else(not_found)?
        };
        if let Some(voided) = &shipment.voided {
            return Err(label_voided(voided));
        }
        let pdf = self.label_pdf(id).await?.ok_or_else(not_found)?;
        Ok((pdf, format!("label-{}.pdf", shipment.tracking_number)))
    }

    /// The shipping block of the customer's order named by `reference` (order UUID, order
    /// number or tracking number): `None` while the order has no label (or is not the
    /// customer's).
    pub async fn order_shipping(
        &self,
        customer_id: Uuid,
        reference: &str,
    ) -> Result<Option<LabelView>, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let shipment =
            repo::shipments::by_reference(&mut conn, customer_id, &ShipmentRef::parse(reference)).await?;
        Ok(shipment.map(|shipment| self.label_view(shipment)))
    }
}

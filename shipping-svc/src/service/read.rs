//! Reading shipments: one shipment with its carrier events and pickup, the listing, the label
//! (signed, expiring PDF URL, tracking, ship-to, packing steps), the signed download itself, and
//! the order's shipping block (also how an order is found by its tracking number).
//!
//! A label URL is `{public base}/api/v1/files/labels/{shipment id}.pdf?expires=<unix>&signature=<hex>`
//! where the signature is HMAC-SHA256 over `label:{shipment id}:{expires}` with the service's
//! signing key; it lasts `label_url_ttl` (one hour by default), rounded up to the next
//! five-minute boundary so that repeated reads answer the same URL.

use super::{ShippingService, shipment_not_found};
use crate::domain::status::ShipmentStatus;
use crate::domain::{Shipment, TrackedShipment};
use crate::repo;
use crate::repo::shipments::{ShipmentFilter, ShipmentRef};
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{After, Listing, Page, PageRequest};
use sha2::Sha256;
use uuid::Uuid;

/// Label URLs expire on multiples of this many seconds (Unix time).
const URL_EXPIRY_STEP_SECONDS: i64 = 300;

/// The listing of a customer's shipments, newest first.
pub const SHIPMENTS: Listing = Listing::new("shipments");

/// A label as the API returns it.
#[derive(Clone, Debug)]
pub struct LabelView {
    pub shipment: Shipment,
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

fn label_signature(key: &[u8], shipment_id: Uuid, expires: i64) -> Vec<u8> {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(format!("label:{shipment_id}:{expires}").as_bytes());
    mac.finalize().into_bytes().to_vec()
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
                .map(|id| {
                    Uuid::parse_str(id.trim()).map_err(|_| {
                        ApiError::field(ErrorCode::InvalidRequest, "orderId", "orderId must be a UUID")
                    })
                })
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

    /// The label of the customer's shipment, with a fresh signed URL.
    pub async fn get_label(&self, customer_id: Uuid, reference: &str) -> Result<LabelView, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let shipment = repo::shipments::by_reference(&mut conn, customer_id, &ShipmentRef::parse(reference))
            .await?
            .ok_or_else(shipment_not_found)?;
        Ok(self.label_view(shipment))
    }

    fn label_view(&self, shipment: Shipment) -> LabelView {
        let ttl = i64::try_from(self.label_url_ttl.as_secs()).unwrap_or(3600);
        // Rounded up to the next five-minute boundary: reads of one label within those minutes
        // answer the same URL (REST and MCP twins alike), which lasts between `ttl` and
        // `ttl` + 5 minutes.
        let earliest = platform::time::now().timestamp() + ttl;
        let expires = earliest
            + (URL_EXPIRY_STEP_SECONDS - earliest.rem_euclid(URL_EXPIRY_STEP_SECONDS))
                % URL_EXPIRY_STEP_SECONDS;
        let expires_at = chrono::DateTime::from_timestamp(expires, 0).unwrap_or_else(platform::time::now);
        let signature = hex::encode(label_signature(&self.signing_key, shipment.id, expires));
        let url = format!(
            "{}/api/v1/files/labels/{}.pdf?expires={expires}&signature={signature}",
            self.public_base_url, shipment.id
        );
        LabelView {
            shipment,
            url,
            expires_at,
        }
    }

    /// The PDF of a signed label URL; an edited, foreign or expired URL is the same 404.
    pub async fn download_label(
        &self,
        shipment_id: &str,
        expires: i64,
        signature: &str,
    ) -> Result<(Vec<u8>, String), ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "label not found or link expired");
        let id = Uuid::parse_str(shipment_id.trim_end_matches(".pdf")).map_err(|_| not_found())?;
        let given = hex::decode(signature).map_err(|_| not_found())?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.signing_key).map_err(ApiError::internal)?;
        mac.update(format!("label:{id}:{expires}").as_bytes());
        mac.verify_slice(&given).map_err(|_| not_found())?;
        if expires <= platform::time::now().timestamp() {
            return Err(not_found());
        }
        let mut conn = self.pool.acquire().await?;
        let shipment = repo::shipments::by_id(&mut conn, id)
            .await?
            .ok_or_else(not_found)?;
        let pdf = repo::shipments::label_pdf(&mut conn, id)
            .await?
            .ok_or_else(not_found)?;
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

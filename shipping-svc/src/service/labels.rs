//! Buying an order's prepaid inbound label, exactly once however often the triggering event
//! is redelivered:
//!
//! 1. read the customer's contact (identity API) and the quote's sample requirements
//!    (catalog-svc), acting for the customer;
//! 2. in one transaction: claim the order's shipment row (unique per order) and lock it; a row
//!    whose label is bought ends here;
//! 3. create the carrier's shipment (nothing is bought yet) and record its id on the pending row
//!    in a commit of its own, then lock the row again;
//! 4. buy the label of that carrier shipment while holding the lock (concurrent deliveries
//!    wait);
//! 5. render the 4×6 PDF, store it with the shipment, enqueue `shipment.label_created`, commit.
//!
//! An order cancelled before its label is bought (`shipping.cancelled_orders`, checked first and
//! again under the row's lock) gets none: the purchase answers `None`.
//!
//! A failure before the last commit leaves the row pending and the event unacknowledged. The
//! retry finds the recorded carrier shipment and passes it to the carrier again: the adapter
//! asks the carrier for it and, when an interrupted attempt had bought it, answers that label
//! instead of buying another (EasyPost: `GET /v2/shipments/{id}` shows its tracking code). So a
//! crash between the carrier's purchase and our commit never buys a second label. (A crash
//! between the carrier shipment's creation and its recording leaves an unbought carrier
//! shipment, which bills nothing.)

use super::ShippingService;
use crate::carrier::{Carrier, CarrierError, LabelPurchase};
use crate::domain::packing::{self, Requirement, SampleLine};
use crate::domain::{Address, LabelOrder, Shipment, ShipmentStatus};
use crate::label::{self, LabelContent};
use crate::{OUTBOX, events, repo};
use platform::error::{ApiError, ErrorCode};
use sha2::{Digest, Sha256};
use uuid::Uuid;

impl ShippingService {
    /// Buys the order's label unless it has one; returns the shipment, or `None` when the order
    /// was cancelled before its label was bought.
    pub async fn ensure_label(&self, order: &LabelOrder) -> Result<Option<Shipment>, ApiError> {
        {
            let mut conn = self.pool.acquire().await?;
            if let Some(existing) =
                repo::shipments::by_order(&mut conn, order.customer_id, order.order_id).await?
            {
                return Ok(Some(existing));
            }
            if repo::cancellations::is_cancelled(&mut conn, order.order_id).await? {
                return Ok(None);
            }
        }
        let (name, email) = self.customer_contact(order.customer_id).await?;
        let lines = self.sample_lines(order.customer_id, order.quote_id).await?;
        let now = platform::time::now();
        let ship_from = ship_from(&name, &email, order.shipping_address_id.as_deref());
        let mut shipment = Shipment {
            id: Uuid::now_v7(),
            customer_id: order.customer_id,
            order_id: order.order_id,
            order_number: order.order_number.clone(),
            payment_method: order.payment_method,
            carrier_code: String::new(),
            service_code: String::new(),
            tracking_number: String::new(),
            tracking_url: String::new(),
            status: ShipmentStatus::PreTransit,
            ship_from,
            ship_to: (*self.lab_address).clone(),
            packing_steps: packing::packing_steps(&order.order_number, &lines),
            carrier_shipment_id: String::new(),
            last_event_at: None,
            created_at: now,
            updated_at: now,
            voided: None,
            sandbox: order.sandbox,
        };
        let mut tx = self.pool.begin().await?;
        let mut claimed = repo::shipments::claim(&mut tx, &shipment).await?;
        if claimed.bought {
            tx.commit().await?;
            return self.bought_shipment(order).await.map(Some);
        }
        if repo::cancellations::is_cancelled(&mut tx, order.order_id).await? {
            // Cancelled while this purchase read its peers: the pending row stays unbought.
            tx.commit().await?;
            return Ok(None);
        }
        shipment.id = claimed.id;
        let sequence = repo::shipments::next_package_number(&mut tx).await?;
        let purchase = LabelPurchase {
            shipment_id: shipment.id,
            order_number: shipment.order_number.clone(),
            sequence,
            ship_from: shipment.ship_from.clone(),
            ship_to: shipment.ship_to.clone(),
        };
        if claimed.carrier_shipment_id.is_empty() {
            let created = self
                .carrier_for(shipment.sandbox)
                .create_shipment(&purchase)
                .await
                .map_err(carrier_error)?;
            if !created.is_empty() {
                // Recorded and committed before the purchase: a retry after a crash between the
                // carrier's purchase and our commit finds it and reuses that label.
                repo::shipments::record_carrier_shipment(&mut tx, shipment.id, &created).await?;
                tx.commit().await?;
                tx = self.pool.begin().await?;
                claimed = repo::shipments::claim(&mut tx, &shipment).await?;
                if claimed.bought {
                    // A concurrent delivery bought it in between.
                    tx.commit().await?;
                    return self.bought_shipment(order).await.map(Some);
                }
                if repo::cancellations::is_cancelled(&mut tx, order.order_id).await? {
                    tx.commit().await?;
                    return Ok(None);
                }
            }
        }
        let purchased = self
            .carrier_for(shipment.sandbox)
            .buy_label(&purchase, &claimed.carrier_shipment_id)
            .await
            .map_err(carrier_error)?;
        shipment.carrier_code = purchased.carrier_code;
        shipment.service_code = purchased.service_code;
        shipment.tracking_number = purchased.tracking_number;
        shipment.tracking_url = purchased.tracking_url;
        shipment.carrier_shipment_id = purchased.carrier_shipment_id;
        shipment.updated_at = platform::time::now();
        let pdf = render_label(
            &shipment,
            &purchased.carrier_name,
            &purchased.service_name,
            &lines,
        )
        .map_err(ApiError::internal)?;
        let sha256 = hex::encode(Sha256::digest(&pdf));
        // The file first: a row never names a label the store does not hold (a purchase that
        // fails to commit leaves an unnamed file, replaced by the retry's).
        let key = self.keep_label(shipment.id, &pdf, &sha256).await?;
        repo::shipments::store_bought(&mut tx, &shipment, &key, &sha256).await?;
        OUTBOX.enqueue(&mut tx, events::label_created(&shipment)).await?;
        tx.commit().await?;
        tracing::info!(
            shipment.id = %shipment.id,
            order.id = %shipment.order_id,
            tracking = %shipment.tracking_number,
            "label bought"
        );
        Ok(Some(shipment))
    }

    /// The order's bought shipment.
    async fn bought_shipment(&self, order: &LabelOrder) -> Result<Shipment, ApiError> {
        let mut conn = self.pool.acquire().await?;
        repo::shipments::by_order(&mut conn, order.customer_id, order.order_id)
            .await?
            .ok_or_else(|| ApiError::internal("a bought shipment disappeared"))
    }

    /// The sample lines of the order's quote with each test's requirement, in quote order.
    async fn sample_lines(&self, customer_id: Uuid, quote_id: Uuid) -> Result<Vec<SampleLine>, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::CATALOG_SVC, Some(customer_id));
        let request = proto::catalog::GetQuoteRequest {
            quote_id: quote_id.to_string(),
        };
        let quote = self
            .catalog
            .clone()
            .get_quote(platform::grpc::outgoing(request, &token))
            .await
            .map_err(|status| ApiError::from_status(&status))?
            .into_inner()
            .quote
            .ok_or_else(|| ApiError::internal("catalog-svc answered no quote"))?;
        Ok(quote
            .lines
            .into_iter()
            .map(|line| {
                // The quote lists one requirement per test, in the order of the items' tests.
                let tests = line.items.iter().flat_map(|item| item.test_ids.iter().cloned());
                let requirements = tests
                    .zip(line.sample_requirements)
                    .map(|(test_id, requirement)| Requirement {
                        test_id,
                        container: requirement.container,
                        amount: requirement.amount,
                        notes: requirement.notes,
                    })
                    .collect();
                SampleLine {
                    line_number: line.line_number,
                    compound_name: line.compound_name,
                    requirements,
                }
            })
            .collect())
    }
}

fn carrier_error(error: CarrierError) -> ApiError {
    match error {
        CarrierError::Unavailable(cause) => ApiError::unavailable("the carrier", cause),
        CarrierError::Rejected(cause) => ApiError::new(
            ErrorCode::Conflict,
            format!("the carrier refused the label: {cause}"),
        ),
    }
}

/// The ship-from block: the customer's name and email, and the address-book entry the order
/// names. The mesh keeps no postal addresses yet, so the label is a prepaid return label that
/// any drop-off point or pickup accepts (`docs/shipping.md`).
pub fn ship_from(name: &str, email: &str, shipping_address_id: Option<&str>) -> Address {
    Address {
        name: name.to_owned(),
        company: String::new(),
        street1: match shipping_address_id {
            Some(id) => format!("Address book entry {id}"),
            None => "Drop off at any carrier location".to_owned(),
        },
        email: email.to_owned(),
        ..Address::default()
    }
}

/// Renders the label PDF of a shipment.
pub fn render_label(
    shipment: &Shipment,
    carrier_name: &str,
    service_name: &str,
    lines: &[SampleLine],
) -> Result<Vec<u8>, String> {
    let samples = lines
        .iter()
        .map(|line| {
            (
                packing::sample_reference(&shipment.order_number, line.line_number),
                line.compound_name.clone(),
            )
        })
        .collect();
    label::render(&LabelContent {
        carrier_name,
        service_name,
        tracking_number: &shipment.tracking_number,
        ship_from: &shipment.ship_from,
        ship_to: &shipment.ship_to,
        order_number: &shipment.order_number,
        samples,
        packing_steps: &shipment.packing_steps,
    })
}

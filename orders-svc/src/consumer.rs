//! The consumer of the payments, results and shipping streams (group `orders-svc`):
//! `payment.confirmed`, `invoice.created` and `invoice.updated` become the `InvoiceNews` of the
//! order they name and are applied by the use case; `coa.published` moves the order towards
//! `completed` and `coa.retracted` may move a completed order back to `reporting` (both add a
//! custody entry); `shipment.label_created` and `shipment.updated` move it to `label_generated` and
//! `in_transit`; `shipment.label_voided` marks its shipping block `label_voided`; other events
//! are acknowledged without effect.

use crate::convert;
use crate::service::{EventTarget, OrdersService, PublishedCoa, RetractedCoa, ShipmentNews};
use platform::consumer::{EventHandler, HandlerError, event_customer, event_uuid};
use proto::common::ShipmentStatus;
use proto::enums::or_legacy;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use std::sync::Arc;

/// Applies payments events to orders.
#[derive(Clone)]
pub struct PaymentEventsHandler {
    orders: Arc<OrdersService>,
}

impl PaymentEventsHandler {
    pub fn new(orders: Arc<OrdersService>) -> Self {
        Self { orders }
    }
}

impl EventHandler for PaymentEventsHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        if let Some(Data::CoaPublished(published)) = &event.data {
            return self.coa_published(event, published).await;
        }
        if let Some(Data::CoaRetracted(retracted)) = &event.data {
            return self.coa_retracted(event, retracted).await;
        }
        if let Some(news) = shipment_news(event) {
            return self.shipment(event, news).await;
        }
        if let Some(news) = event.data.as_ref().and_then(convert::addon_invoice_news) {
            let customer_id = event_customer(event)?;
            let addon_id = event_uuid(event, "add-on id", &news.0)?;
            let news = crate::service::AddonInvoiceNews { addon_id, ..news.1 };
            return Ok(self
                .orders
                .apply_addon_invoice_news(&event.id, customer_id, &news)
                .await?);
        }
        let Some((order_id, news)) = event.data.as_ref().and_then(convert::invoice_news) else {
            return Ok(());
        };
        let target = event_target(event, order_id)?;
        Ok(self.orders.apply_invoice_news(target, &news).await?)
    }
}

/// What a shipping event asks of its order, with the order id it names.
fn shipment_news(event: &EventEnvelope) -> Option<(&str, ShipmentNews<'_>)> {
    match &event.data {
        Some(Data::ShipmentLabelCreated(created)) => Some((
            &created.order_id,
            ShipmentNews::LabelCreated {
                label: created.label.as_deref(),
                status: match or_legacy(created.status, &created.legacy_status) {
                    ShipmentStatus::Unspecified => ShipmentStatus::PreTransit,
                    status => status,
                },
            },
        )),
        Some(Data::ShipmentUpdated(updated)) => {
            let occurred_at = chrono::DateTime::parse_from_rfc3339(&updated.occurred_at)
                .ok()
                .map(|at| at.to_utc());
            ShipmentNews::of_scan(or_legacy(updated.status, &updated.legacy_status), occurred_at)
                .map(|news| (updated.order_id.as_str(), news))
        }
        Some(Data::ShipmentLabelVoided(voided)) => Some((
            voided.order_id.as_str(),
            ShipmentNews::LabelVoided {
                voided_at: chrono::DateTime::parse_from_rfc3339(&voided.voided_at)
                    .ok()
                    .map(|at| at.to_utc()),
            },
        )),
        _ => None,
    }
}

impl PaymentEventsHandler {
    async fn shipment(
        &self,
        event: &EventEnvelope,
        (order_id, news): (&str, ShipmentNews<'_>),
    ) -> Result<(), HandlerError> {
        let target = event_target(event, order_id)?;
        Ok(self.orders.apply_shipment_news(target, news).await?)
    }

    async fn coa_published(
        &self,
        event: &EventEnvelope,
        published: &proto::results::CoaPublished,
    ) -> Result<(), HandlerError> {
        let customer_id = event_customer(event)?;
        let coa_id = event_uuid(event, "COA id", &published.coa_id)?;
        let amends = match published.amends_coa_id.as_deref() {
            Some(id) => Some(event_uuid(event, "amended COA id", id)?),
            None => None,
        };
        let coa = PublishedCoa {
            accession_number: &published.accession_number,
            coa_id,
            version: published.version.max(1),
            amends,
            published_at: time(&published.published_at),
            test_ids: &published.test_ids,
        };
        Ok(self
            .orders
            .apply_coa_published(&event.id, customer_id, coa)
            .await?)
    }

    async fn coa_retracted(
        &self,
        event: &EventEnvelope,
        retracted: &proto::results::CoaRetracted,
    ) -> Result<(), HandlerError> {
        let customer_id = event_customer(event)?;
        let coa_id = event_uuid(event, "COA id", &retracted.coa_id)?;
        let coa = RetractedCoa {
            accession_number: &retracted.accession_number,
            coa_id,
            retracted_at: time(&retracted.retracted_at),
            reason: &retracted.reason,
        };
        Ok(self
            .orders
            .apply_coa_retracted(&event.id, customer_id, coa)
            .await?)
    }
}

/// The order `event` is about: its customer and the order it names.
fn event_target<'a>(event: &'a EventEnvelope, order_id: &str) -> Result<EventTarget<'a>, HandlerError> {
    Ok(EventTarget {
        event_id: &event.id,
        customer_id: event_customer(event)?,
        order_id: event_uuid(event, "order id", order_id)?,
    })
}

fn time(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|at| at.to_utc())
        .unwrap_or_else(|_| platform::time::now())
}

//! The consumer of the orders and payments streams (group `results-svc`): `sample.received`,
//! `testing.started`, `payment.confirmed` and `invoice.updated` (status `paid`) become
//! [`SampleNews`] applied by the use case; other events are acknowledged without effect.

use crate::repo::SampleFacts;
use crate::service::{ResultsService, SampleNews};
use chrono::{DateTime, Utc};
use platform::consumer::{EventHandler, HandlerError, event_customer, event_uuid};
use proto::common::InvoiceStatus;
use proto::enums::or_legacy;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use std::sync::Arc;
use uuid::Uuid;

/// Applies orders and payments events to results.
#[derive(Clone)]
pub struct NewsHandler {
    results: Arc<ResultsService>,
}

impl NewsHandler {
    pub fn new(results: Arc<ResultsService>) -> Self {
        Self { results }
    }
}

fn time(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.to_utc())
        .unwrap_or_else(|_| platform::time::now())
}

/// The news of a payload for `customer_id`, or `None` for events results-svc ignores.
fn news(event: &EventEnvelope, customer_id: Uuid) -> Result<Option<SampleNews>, HandlerError> {
    let order = |id: &str| event_uuid(event, "order id", id);
    Ok(match &event.data {
        Some(Data::SampleReceived(received)) => {
            let order_id = order(&received.order_id)?;
            let received_at = time(&received.received_at);
            Some(SampleNews::Received(
                received
                    .samples
                    .iter()
                    .map(|sample| SampleFacts {
                        accession_number: sample.accession_number.clone(),
                        customer_id,
                        order_id,
                        order_number: received.order_number.clone(),
                        line_number: sample.line_number,
                        compound: sample.compound_name.clone(),
                        lot_number: sample.lot_number.clone(),
                        test_ids: sample.test_ids.clone(),
                        test_names: sample.test_names.clone(),
                        received_at,
                        testing_started_at: None,
                    })
                    .collect(),
            ))
        }
        Some(Data::TestingStarted(started)) => Some(SampleNews::TestingStarted {
            order_id: order(&started.order_id)?,
            at: time(&started.started_at),
        }),
        // A supplementary invoice of an add-on pays the add-on, not the order: its tests reach
        // the lab through order.addon_updated.
        Some(Data::PaymentConfirmed(confirmed)) if confirmed.addon_id.is_some() => None,
        Some(Data::InvoiceUpdated(updated)) if updated.addon_id.is_some() => None,
        Some(Data::OrderAddonUpdated(addon)) if matches!(addon.status.as_str(), "paid" | "in_testing") => {
            Some(SampleNews::TestsAdded {
                accession_number: addon.accession_number.clone(),
                test_ids: addon.test_ids.clone(),
                test_names: addon.test_names.clone(),
            })
        }
        Some(Data::PaymentConfirmed(confirmed)) => Some(SampleNews::Paid {
            order_id: order(&confirmed.order_id)?,
            at: time(&confirmed.confirmed_at),
        }),
        Some(Data::InvoiceUpdated(updated))
            if or_legacy::<InvoiceStatus>(updated.status, &updated.legacy_status) == InvoiceStatus::Paid =>
        {
            Some(SampleNews::Paid {
                order_id: order(&updated.order_id)?,
                at: time(&updated.updated_at),
            })
        }
        _ => None,
    })
}

impl EventHandler for NewsHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        let customer_id = event_customer(event)?;
        let Some(news) = news(event, customer_id)? else {
            return Ok(());
        };
        Ok(self.results.apply_news(&event.id, customer_id, news).await?)
    }
}

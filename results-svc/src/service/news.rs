//! Applying what other domains announce, each in one transaction that first records the event id
//! (`first_delivery`), so a redelivered event changes nothing:
//!
//! * orders-svc's `sample.received`: the samples (accession, order, compound, lot, tests);
//! * orders-svc's `testing.started`: the start of testing of the order's samples;
//! * payments-svc's `payment.confirmed`, or `invoice.updated` with status `paid` (card
//!   settlement): the order is paid, and every COA held for it is published now.

use super::ResultsService;
use crate::SCHEMA;
use crate::repo::{self, SampleFacts};
use chrono::{DateTime, Utc};
use platform::consumer::first_delivery;
use platform::streams::GROUP_RESULTS;
use uuid::Uuid;

/// What results-svc learned about an order from another domain.
#[derive(Clone, Debug)]
pub enum SampleNews {
    Received(Vec<SampleFacts>),
    TestingStarted {
        order_id: Uuid,
        at: DateTime<Utc>,
    },
    Paid {
        order_id: Uuid,
        at: DateTime<Utc>,
    },
    /// A paid add-on: its tests join the sample's test list (once each), so the lab records
    /// them in the sample's COA (or its amendment).
    TestsAdded {
        accession_number: String,
        test_ids: Vec<String>,
        test_names: Vec<String>,
    },
}

impl ResultsService {
    /// Applies one event's news for `customer_id`, once per event id.
    pub async fn apply_news(
        &self,
        event_id: &str,
        customer_id: Uuid,
        news: SampleNews,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_RESULTS, event_id).await? {
            return tx.commit().await;
        }
        match news {
            SampleNews::Received(samples) => {
                for sample in samples.iter().filter(|sample| sample.customer_id == customer_id) {
                    repo::insert_sample(&mut tx, sample).await?;
                }
            }
            SampleNews::TestsAdded {
                accession_number,
                test_ids,
                test_names,
            } => {
                repo::add_sample_tests(&mut tx, customer_id, &accession_number, &test_ids, &test_names)
                    .await?;
            }
            SampleNews::TestingStarted { order_id, at } => {
                repo::set_testing_started(&mut tx, customer_id, order_id, at).await?;
            }
            SampleNews::Paid { order_id, at } => {
                repo::mark_order_paid(&mut tx, customer_id, order_id, at).await?;
                if repo::lock_order_paid(&mut tx, order_id).await? {
                    for id in repo::held_coas(&mut tx, order_id).await? {
                        if let Some(coa) = repo::lock_coa(&mut tx, id).await?
                            && coa.customer_id == customer_id
                        {
                            tracing::info!(coa.id = %coa.id, "payment landed; releasing the held COA");
                            self.release(&mut tx, coa).await?;
                        }
                    }
                }
            }
        }
        tx.commit().await
    }
}

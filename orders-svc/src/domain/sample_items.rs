//! The sample items of an order (`GET /orders/{reference}/samples`): one per order line from
//! the moment the order exists, awaiting receipt with what the lab expects (containers and
//! amounts from the catalog's sample requirements, the line's tests), then the units the lab
//! logged, where the sample stands and how it got there.
//!
//! | status | when |
//! |---|---|
//! | `awaiting_receipt` | no unit of the line logged yet |
//! | `received` | logged at the lab |
//! | `in_testing` | the order's testing started |
//! | `reported` | a published COA of the sample is in force |
//! | `disposed` | the retained portion was disposed of after its retention period |

use super::order::{Order, OrderLine};
use super::sample::Sample;
use chrono::{DateTime, Utc};

/// A published COA of one of the order's samples, as orders-svc keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoaMark {
    pub accession_number: String,
    pub published_at: DateTime<Utc>,
    /// Neither retracted nor superseded by a published amendment.
    pub in_force: bool,
}

/// One sample item: its order line, the logged sample (once received), where it stands and the
/// moves that got it there, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleItem<'a> {
    pub line: &'a OrderLine,
    pub sample: Option<&'a Sample>,
    pub status: &'static str,
    pub history: Vec<(&'static str, DateTime<Utc>)>,
    /// "2 mL — amber glass vial (notes)" per sample requirement of the line's tests.
    pub expected_containers: Vec<String>,
}

/// The sample items of `order`, one per line in line order.
pub fn items<'a>(order: &'a Order, samples: &'a [Sample], coas: &[CoaMark]) -> Vec<SampleItem<'a>> {
    order
        .lines
        .iter()
        .map(|line| {
            let sample = samples
                .iter()
                .find(|sample| sample.line_number == line.line_number);
            let mut history = Vec::new();
            let mut status = "awaiting_receipt";
            if let Some(sample) = sample {
                status = "received";
                history.push(("received", sample.received_at));
                if let Some(at) = sample.testing_started_at {
                    status = "in_testing";
                    history.push(("in_testing", at));
                }
                let mine: Vec<&CoaMark> = coas
                    .iter()
                    .filter(|coa| coa.accession_number == sample.accession_number)
                    .collect();
                if let Some(first) = mine.iter().map(|coa| coa.published_at).min() {
                    history.push(("reported", first));
                }
                if mine.iter().any(|coa| coa.in_force) {
                    status = "reported";
                }
                if let Some(at) = sample.disposed_at {
                    status = "disposed";
                    history.push(("disposed", at));
                }
            }
            history.sort_by_key(|(_, at)| *at);
            SampleItem {
                line,
                sample,
                status,
                history,
                expected_containers: line
                    .sample_requirements
                    .iter()
                    .map(|requirement| {
                        let mut text = format!("{} — {}", requirement.amount, requirement.container);
                        if !requirement.notes.is_empty() {
                            text.push_str(&format!(" ({})", requirement.notes));
                        }
                        text
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::SampleRequirement;
    use crate::domain::payment_method::PaymentMethod;
    use crate::domain::status::OrderStatus;
    use chrono::TimeZone;
    use platform::money::Cents;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 28, 10, minute, 0).unwrap()
    }

    fn line(line_number: i32) -> OrderLine {
        OrderLine {
            line_number,
            compound_name: format!("Compound {line_number}"),
            lot_number: None,
            matrix_notes: None,
            items: Vec::new(),
            sample_requirements: Vec::new(),
            subtotal: Cents(100),
        }
    }

    fn order_of_two_lines() -> Order {
        let mut first = line(1);
        first.sample_requirements = vec![SampleRequirement {
            container: "amber glass vial".into(),
            amount: "2 mL".into(),
            notes: "keep cold".into(),
        }];
        Order {
            id: uuid::Uuid::now_v7(),
            order_number: "ORD-2026-000001".into(),
            customer_id: uuid::Uuid::now_v7(),
            quote_id: uuid::Uuid::now_v7(),
            status: OrderStatus::InvoiceSent,
            payment_method: PaymentMethod::BankInvoice,
            catalog_revision: "r1".into(),
            category_id: "peptides".into(),
            turnaround: "standard".into(),
            turnaround_business_days: 10,
            conformity_samples: 0,
            client_reference: None,
            notes: None,
            publish_raw_data: false,
            expected_payer_address: None,
            billing_address_id: None,
            shipping_address_id: None,
            quote_expires_at: None,
            lines: vec![first, line(2)],
            charges: Vec::new(),
            total: Cents(200),
            currency: "USD".into(),
            status_history: Vec::new(),
            payment: None,
            created_at: at(0),
            updated_at: at(0),
            accession_numbers: Vec::new(),
            stablecoin: None,
            cancellation: None,
            addons: Vec::new(),
            sandbox: false,
        }
    }

    fn sample(line_number: i32, accession: &str) -> Sample {
        Sample {
            accession_number: accession.into(),
            line_number,
            compound_name: "x".into(),
            lot_number: None,
            units: 2,
            containers: "2 x vial".into(),
            condition: "intact".into(),
            storage_location: "FRZ-1".into(),
            received_at: at(1),
            received_by: "tom".into(),
            testing_started_at: None,
            retain_until: at(59),
            disposed_at: None,
            test_ids: vec![],
            test_names: vec![],
        }
    }

    #[test]
    fn every_line_is_an_item_awaiting_receipt_before_the_lab_logs_it() {
        let order = order_of_two_lines();
        let items = items(&order, &[], &[]);
        assert_eq!(items.len(), 2);
        assert!(
            items
                .iter()
                .all(|item| item.status == "awaiting_receipt" && item.sample.is_none())
        );
        assert!(items.iter().all(|item| item.history.is_empty()));
        assert_eq!(
            items[0].expected_containers,
            ["2 mL — amber glass vial (keep cold)"]
        );
        assert_eq!(items[1].line.line_number, 2);
    }

    #[test]
    fn a_logged_sample_moves_through_testing_reporting_and_disposal_with_its_history() {
        let order = order_of_two_lines();
        let mut first = sample(1, "ACC-1");
        first.testing_started_at = Some(at(2));
        let samples = [first.clone(), sample(2, "ACC-2")];
        let coas = [CoaMark {
            accession_number: "ACC-1".into(),
            published_at: at(3),
            in_force: true,
        }];
        let listed = items(&order, &samples, &coas);
        assert_eq!((listed[0].status, listed[1].status), ("reported", "received"));
        assert_eq!(
            listed[0].history,
            [("received", at(1)), ("in_testing", at(2)), ("reported", at(3))]
        );

        let retracted = [CoaMark {
            in_force: false,
            ..coas[0].clone()
        }];
        assert_eq!(items(&order, &samples, &retracted)[0].status, "in_testing");

        let mut disposed = first;
        disposed.disposed_at = Some(at(4));
        let samples = [disposed];
        let listed = items(&order, &samples, &coas);
        assert_eq!(listed[0].status, "disposed");
        assert_eq!(listed[0].history.last(), Some(&("disposed", at(4))));
        assert_eq!(listed[1].status, "awaiting_receipt");
    }
}

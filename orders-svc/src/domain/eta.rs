//! The non-binding ETA of an order: its stages (ordered, payment, samples received, testing,
//! reporting, completed), each done, in progress or pending, and the estimated completion, which
//! is the start of testing (or the receipt, before testing) plus the turnaround option's business
//! days (Saturdays and Sundays do not count; public holidays are not modelled). Before the
//! samples arrive there is no estimate: the clock starts at receipt.

use super::order::Order;
use super::status::OrderStatus;
use chrono::{DateTime, Datelike, Duration, Utc, Weekday};

/// One stage of the progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    pub stage: &'static str,
    /// done, in_progress, pending.
    pub state: &'static str,
    pub at: Option<DateTime<Utc>>,
    pub estimated_at: Option<DateTime<Utc>>,
}

/// The progress of an order and its estimate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eta {
    pub stages: Vec<Stage>,
    pub estimated_completion: Option<DateTime<Utc>>,
    pub basis: String,
}

/// `start` plus `days` business days (Monday to Friday).
pub fn add_business_days(start: DateTime<Utc>, days: i32) -> DateTime<Utc> {
    let mut at = start;
    let mut left = days.max(0);
    while left > 0 {
        at += Duration::days(1);
        if !matches!(at.weekday(), Weekday::Sat | Weekday::Sun) {
            left -= 1;
        }
    }
    at
}

fn entered(order: &Order, status: OrderStatus) -> Option<DateTime<Utc>> {
    order
        .status_history
        .iter()
        .find(|change| change.to == status)
        .map(|change| change.changed_at)
}

/// Computes the progress of `order` at `now`.
pub fn eta(order: &Order, now: DateTime<Utc>) -> Eta {
    let received = entered(order, OrderStatus::SampleReceived);
    let testing = entered(order, OrderStatus::InLab);
    let reporting = entered(order, OrderStatus::Reporting);
    // A completed order whose COA was retracted is back in `reporting`: not completed.
    let completed = if order.status == OrderStatus::Completed {
        order
            .status_history
            .iter()
            .rfind(|change| change.to == OrderStatus::Completed)
            .map(|change| change.changed_at)
    } else {
        None
    };
    let paid = order.payment_state() == super::order::PAYMENT_PAID;
    let estimated_completion = match (completed, testing.or(received)) {
        (Some(done), _) => Some(done),
        (None, Some(start)) => Some(add_business_days(start, order.turnaround_business_days).max(now)),
        (None, None) => None,
    };
    let state = |done: Option<DateTime<Utc>>, started: bool| match (done, started) {
        (Some(_), _) => "done",
        (None, true) => "in_progress",
        (None, false) => "pending",
    };
    let stages = vec![
        Stage {
            stage: "ordered",
            state: "done",
            at: Some(order.created_at),
            estimated_at: None,
        },
        Stage {
            stage: "payment",
            state: if paid { "done" } else { "pending" },
            at: entered(order, OrderStatus::Paid),
            estimated_at: None,
        },
        Stage {
            stage: "samples_received",
            state: state(received, false),
            at: received,
            estimated_at: None,
        },
        Stage {
            stage: "testing",
            state: state(reporting.or(completed), testing.is_some()),
            at: testing,
            estimated_at: None,
        },
        Stage {
            stage: "reporting",
            state: state(completed, reporting.is_some()),
            at: reporting,
            estimated_at: None,
        },
        Stage {
            stage: "completed",
            state: state(completed, false),
            at: completed,
            estimated_at: if completed.is_none() {
                estimated_completion
            } else {
                None
            },
        },
    ];
    let basis = match (completed, testing, received) {
        (Some(_), _, _) => "completed".to_owned(),
        (None, Some(_), _) => format!(
            "start of testing plus {} business days ({} turnaround)",
            order.turnaround_business_days, order.turnaround
        ),
        (None, None, Some(_)) => format!(
            "sample receipt plus {} business days ({} turnaround)",
            order.turnaround_business_days, order.turnaround
        ),
        (None, None, None) => format!(
            "no estimate before the samples arrive; then {} business days ({} turnaround)",
            order.turnaround_business_days, order.turnaround
        ),
    };
    Eta {
        stages,
        estimated_completion,
        basis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn business_days_skip_weekends() {
        let friday = DateTime::parse_from_rfc3339("2026-07-17T10:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(add_business_days(friday, 1).weekday(), Weekday::Mon);
        assert_eq!((add_business_days(friday, 5) - friday).num_days(), 7);
        assert_eq!(add_business_days(friday, 0), friday);
    }
}

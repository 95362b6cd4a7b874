//! The order-status state machine: the one table of allowed moves ([`TRANSITIONS`]), mirrored
//! in `docs/order-states.md` (a unit test keeps the two in step).
//!
//! Statuses are the spec's values of `order.status_changed` `from_status`/`to_status`, plus
//! `cancelled`. Every move writes a history entry and `order.status_changed` in the transaction
//! that makes it (`crate::service::transition`), with the reason that caused it.
//!
//! | from | to |
//! |---|---|
//! | invoice_sent | paid, overdue, cancelled, label_generated, sample_received |
//! | overdue | paid, cancelled, label_generated, sample_received |
//! | paid | label_generated, cancelled, sample_received |
//! | label_generated | in_transit, sample_received, cancelled |
//! | in_transit | sample_received, cancelled |
//! | sample_received | in_lab, cancelled |
//! | in_lab | reporting, cancelled |
//! | reporting | completed, cancelled |
//! | completed | reporting |
//! | cancelled | (terminal) |
//!
//! Card and invoice orders are ship-first (SPEC "Shipping rules"): their label, transit and lab
//! work may all happen before the money lands, so `paid` is only reached from the unpaid states
//! and payment after that no longer moves the status; the order's payment state (`unpaid`/`paid`)
//! stays visible apart from it, and payment gates only the COA release (results-svc holds an
//! approved COA of an unpaid order). Stablecoin orders get their label once paid
//! (`paid → label_generated`). The lab's receipt is authoritative: samples can be received from
//! any pre-lab status, also when carrier scans (`label_generated`, `in_transit`) never arrived.

use platform::error::{ApiError, ErrorCode};

/// Every allowed move: from one status to any of the listed ones. Extend it here (and in
/// `docs/order-states.md`); nothing else decides whether a move is allowed.
pub const TRANSITIONS: &[(OrderStatus, &[OrderStatus])] = {
    use OrderStatus::*;
    &[
        (
            InvoiceSent,
            &[Paid, Overdue, Cancelled, LabelGenerated, SampleReceived],
        ),
        (Overdue, &[Paid, Cancelled, LabelGenerated, SampleReceived]),
        (Paid, &[LabelGenerated, Cancelled, SampleReceived]),
        (LabelGenerated, &[InTransit, SampleReceived, Cancelled]),
        (InTransit, &[SampleReceived, Cancelled]),
        // After receipt only an approved cancellation request with a charge (docs/order-states.md).
        (SampleReceived, &[InLab, Cancelled]),
        (InLab, &[Reporting, Cancelled]),
        (Reporting, &[Completed, Cancelled]),
        // A retraction that leaves a sample without a COA in force reopens the reporting.
        (Completed, &[Reporting]),
    ]
};

/// Where an order stands: the mesh's one type (`lab.common.v1.OrderStatus`, named in
/// `proto::enums`); its rules here.
pub use proto::common::OrderStatus;

/// The state machine's questions about a status.
pub trait Lifecycle: Copy {
    /// Parses the `status` filter of a listing; `invalid_request` (field `status`) when unknown.
    fn parse_filter(name: &str) -> Result<Self, ApiError>;
    /// True when the machine allows moving from `self` to `next` ([`TRANSITIONS`]).
    fn can_transition_to(self, next: Self) -> bool;
    /// True while the samples have not reached the lab (they may be received from here).
    fn is_before_lab(self) -> bool;
    /// True for statuses that never change again (`completed` may go back to `reporting` when
    /// a COA is retracted).
    fn is_terminal(self) -> bool;
}

impl Lifecycle for OrderStatus {
    fn parse_filter(name: &str) -> Result<OrderStatus, ApiError> {
        OrderStatus::parse(name).ok_or_else(|| {
            let allowed: Vec<&str> = OrderStatus::ALL.iter().map(|status| status.as_str()).collect();
            ApiError::field(
                ErrorCode::InvalidRequest,
                "status",
                "status is not an order status",
            )
            .with_details(serde_json::json!({ "allowed": allowed }))
        })
    }

    fn can_transition_to(self, next: OrderStatus) -> bool {
        TRANSITIONS
            .iter()
            .any(|(from, to)| *from == self && to.contains(&next))
    }

    fn is_before_lab(self) -> bool {
        self.can_transition_to(OrderStatus::SampleReceived)
    }

    fn is_terminal(self) -> bool {
        matches!(self, OrderStatus::Cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::OrderStatus::*;
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_wire_name() {
        for &status in OrderStatus::ALL {
            assert_eq!(OrderStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(OrderStatus::parse("Paid"), None);
        assert_eq!(
            OrderStatus::parse_filter("shipped").unwrap_err().details.unwrap()["field"],
            "status"
        );
    }

    #[test]
    fn an_unpaid_order_can_be_paid_from_invoice_sent_or_overdue_only() {
        assert!(InvoiceSent.can_transition_to(Paid));
        assert!(Overdue.can_transition_to(Paid));
        for status in [
            Paid,
            LabelGenerated,
            InTransit,
            SampleReceived,
            InLab,
            Reporting,
            Completed,
            Cancelled,
        ] {
            assert!(!status.can_transition_to(Paid), "{status} -> paid");
        }
    }

    #[test]
    fn the_fulfilment_chain_moves_one_step_at_a_time() {
        let chain = [
            LabelGenerated,
            InTransit,
            SampleReceived,
            InLab,
            Reporting,
            Completed,
        ];
        for pair in chain.windows(2) {
            assert!(pair[0].can_transition_to(pair[1]), "{} -> {}", pair[0], pair[1]);
        }
        assert!(!LabelGenerated.can_transition_to(InLab));
        assert!(!InTransit.can_transition_to(Completed));
        assert!(!Reporting.can_transition_to(InLab));
    }

    #[test]
    fn samples_may_be_received_from_any_status_before_the_lab_but_not_after() {
        for status in [InvoiceSent, Overdue, Paid, LabelGenerated, InTransit] {
            assert!(status.is_before_lab(), "{status}");
        }
        for status in [SampleReceived, InLab, Reporting, Completed, Cancelled] {
            assert!(!status.is_before_lab(), "{status}");
        }
    }

    #[test]
    fn the_documented_table_matches_the_code_table() {
        let doc = include_str!("../../../docs/order-states.md");
        for &status in OrderStatus::ALL {
            let allowed: Vec<&str> = OrderStatus::ALL
                .iter()
                .filter(|next| status.can_transition_to(**next))
                .map(|next| next.as_str())
                .collect();
            let row = if allowed.is_empty() {
                format!("| {} | (terminal) |", status.as_str())
            } else {
                format!("| {} | {} |", status.as_str(), allowed.join(", "))
            };
            assert!(doc.contains(&row), "docs/order-states.md lacks the row {row}");
        }
    }

    #[test]
    fn ship_first_orders_may_get_their_label_before_payment() {
        assert!(InvoiceSent.can_transition_to(LabelGenerated));
        assert!(Overdue.can_transition_to(LabelGenerated));
        assert!(Paid.can_transition_to(LabelGenerated));
    }

    #[test]
    fn every_open_order_can_be_cancelled_and_cancelled_orders_stay_put() {
        for status in [
            InvoiceSent,
            Overdue,
            Paid,
            LabelGenerated,
            InTransit,
            SampleReceived,
            InLab,
            Reporting,
        ] {
            assert!(status.can_transition_to(Cancelled), "{status}");
        }
        assert!(!Completed.can_transition_to(Cancelled));
        for &next in OrderStatus::ALL {
            assert!(!Cancelled.can_transition_to(next));
            assert!(!next.can_transition_to(next), "{next} -> itself");
        }
        assert!(Cancelled.is_terminal() && !Completed.is_terminal() && !Paid.is_terminal());
    }

    #[test]
    fn a_completed_order_can_only_go_back_to_reporting() {
        let allowed: Vec<OrderStatus> = OrderStatus::ALL
            .iter()
            .copied()
            .filter(|next| Completed.can_transition_to(*next))
            .collect();
        assert_eq!(allowed, vec![Reporting]);
    }
}

//! The order-status state machine.
//!
//! Statuses are the spec's values of `order.status_changed` `from_status`/`to_status`, plus
//! `cancelled`. Allowed transitions:
//!
//! | from | to |
//! |---|---|
//! | invoice_sent | paid, overdue, cancelled, label_generated |
//! | overdue | paid, cancelled, label_generated |
//! | paid | label_generated, cancelled |
//! | label_generated | in_transit |
//! | in_transit | sample_received |
//! | sample_received | in_lab |
//! | in_lab | reporting |
//! | reporting | completed |
//! | completed, cancelled | (terminal) |
//!
//! Card and invoice orders are ship-first (SPEC "Shipping rules"): their prepaid label may be
//! bought before the money lands, so an unpaid order (`invoice_sent`, `overdue`) may move straight
//! to `label_generated`; payment then gates only the COA release and no longer moves the status.
//! Stablecoin orders get their label once paid, through `paid → label_generated`.

use platform::error::{ApiError, ErrorCode};
use std::fmt;

/// Where an order stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    InvoiceSent,
    Overdue,
    Paid,
    LabelGenerated,
    InTransit,
    SampleReceived,
    InLab,
    Reporting,
    Completed,
    Cancelled,
}

impl OrderStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [OrderStatus; 10] = [
        OrderStatus::InvoiceSent,
        OrderStatus::Overdue,
        OrderStatus::Paid,
        OrderStatus::LabelGenerated,
        OrderStatus::InTransit,
        OrderStatus::SampleReceived,
        OrderStatus::InLab,
        OrderStatus::Reporting,
        OrderStatus::Completed,
        OrderStatus::Cancelled,
    ];

    /// The wire name (`invoice_sent`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::InvoiceSent => "invoice_sent",
            OrderStatus::Overdue => "overdue",
            OrderStatus::Paid => "paid",
            OrderStatus::LabelGenerated => "label_generated",
            OrderStatus::InTransit => "in_transit",
            OrderStatus::SampleReceived => "sample_received",
            OrderStatus::InLab => "in_lab",
            OrderStatus::Reporting => "reporting",
            OrderStatus::Completed => "completed",
            OrderStatus::Cancelled => "cancelled",
        }
    }

    /// Looks a status up by its wire name.
    pub fn parse(name: &str) -> Option<OrderStatus> {
        OrderStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    /// Parses the `status` filter of a listing; `invalid_request` (field `status`) when unknown.
    pub fn parse_filter(name: &str) -> Result<OrderStatus, ApiError> {
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

    /// True when the machine allows moving from `self` to `next`.
    pub fn can_transition_to(self, next: OrderStatus) -> bool {
        use OrderStatus::*;
        matches!(
            (self, next),
            (InvoiceSent, Paid | Overdue | Cancelled | LabelGenerated)
                | (Overdue, Paid | Cancelled | LabelGenerated)
                | (Paid, LabelGenerated | Cancelled)
                | (LabelGenerated, InTransit)
                | (InTransit, SampleReceived)
                | (SampleReceived, InLab)
                | (InLab, Reporting)
                | (Reporting, Completed)
        )
    }

    /// True for statuses that never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, OrderStatus::Completed | OrderStatus::Cancelled)
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::OrderStatus::*;
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_wire_name() {
        for status in OrderStatus::ALL {
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
    fn ship_first_orders_may_get_their_label_before_payment() {
        assert!(InvoiceSent.can_transition_to(LabelGenerated));
        assert!(Overdue.can_transition_to(LabelGenerated));
        assert!(Paid.can_transition_to(LabelGenerated));
    }

    #[test]
    fn cancellation_is_possible_only_before_the_label_and_terminal_states_stay_put() {
        assert!(InvoiceSent.can_transition_to(Cancelled));
        assert!(Overdue.can_transition_to(Cancelled));
        assert!(Paid.can_transition_to(Cancelled));
        assert!(!LabelGenerated.can_transition_to(Cancelled));
        for next in OrderStatus::ALL {
            assert!(!Completed.can_transition_to(next));
            assert!(!Cancelled.can_transition_to(next));
            assert!(!next.can_transition_to(next), "{next} -> itself");
        }
        assert!(Completed.is_terminal() && Cancelled.is_terminal() && !Paid.is_terminal());
    }
}

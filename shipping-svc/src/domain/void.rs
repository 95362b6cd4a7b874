//! A cancelled order's label: what the carrier answered to its void (the refund of the postage)
//! and the voided label a shipment then carries. Before the carrier accepts the parcel the label
//! is voided; once the carrier has it (in transit or later) the label was used and is left alone.

use chrono::{DateTime, Utc};

/// The carrier's answer to a void, as EasyPost names its `refund_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefundStatus {
    /// The refund is pending with the carrier (it settles later).
    Submitted,
    /// The postage was refunded.
    Refunded,
    /// The carrier refused the refund; the label is withdrawn from the customer all the same.
    Rejected,
}

impl RefundStatus {
    /// Every status.
    pub const ALL: [RefundStatus; 3] = [
        RefundStatus::Submitted,
        RefundStatus::Refunded,
        RefundStatus::Rejected,
    ];

    /// The name (SQL, events).
    pub fn as_str(self) -> &'static str {
        match self {
            RefundStatus::Submitted => "submitted",
            RefundStatus::Refunded => "refunded",
            RefundStatus::Rejected => "rejected",
        }
    }

    /// Reads a name; `None` for anything else (EasyPost's `not_applicable` among them).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }
}

/// A label voided because its order was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VoidedLabel {
    pub refund_status: RefundStatus,
    pub voided_at: DateTime<Utc>,
}

/// What an order's cancellation did to its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelledLabel {
    /// No label was bought (none is bought from now on).
    NoLabel,
    /// The sample reached the lab or the carrier has the parcel: the label was used.
    Used,
    /// Voided now, or by an earlier delivery of the same cancellation.
    Voided(VoidedLabel),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refund_statuses_round_trip_and_unknown_ones_are_none() {
        for status in RefundStatus::ALL {
            assert_eq!(RefundStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(RefundStatus::parse("not_applicable"), None);
    }
}

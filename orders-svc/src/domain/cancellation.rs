//! Cancellation requests: a customer asks, a human decides (docs/order-states.md,
//! "Cancellation"). The rules here decide what may be filed and what a decision does; the use
//! case (`crate::service::cancellation`) applies them inside the order's lock.
//!
//! - A request is filed with a reason (1 to [`MAX_TEXT`] characters) and `confirm: true`, for an
//!   order that is neither `cancelled` nor `completed`; one pending request per order.
//! - Approval before the sample is received cancels the order with nothing charged.
//! - After receipt (`sample_received`, `in_lab`, `reporting`) the default answer is a decline;
//!   approval needs an explicit charge of 0 up to the order total (the work already done), which
//!   payments-svc keeps while it voids or refunds the rest.
//! - Deciding a request a second time the same way changes nothing (`unchanged`); the other way
//!   is a conflict.

use super::status::OrderStatus;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest reason or note, in characters.
pub const MAX_TEXT: usize = 2000;

/// Where a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    Pending,
    Approved,
    Declined,
}

impl RequestStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Approved => "approved",
            RequestStatus::Declined => "declined",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(RequestStatus::Pending),
            "approved" => Some(RequestStatus::Approved),
            "declined" => Some(RequestStatus::Declined),
            _ => None,
        }
    }

    /// Parses the `status` filter of a listing; `invalid_request` (field `status`) when unknown.
    pub fn parse_filter(text: &str) -> Result<Self, ApiError> {
        Self::parse(text).ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                "status",
                "status must be pending, approved or declined",
            )
        })
    }
}

/// A cancellation request as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    pub id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub status: RequestStatus,
    pub reason: String,
    /// The order's status when the request was filed.
    pub order_status: OrderStatus,
    pub requested_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub charge_cents: Option<i64>,
}

/// What staff decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Decline,
}

impl Decision {
    pub fn status(self) -> RequestStatus {
        match self {
            Decision::Approve => RequestStatus::Approved,
            Decision::Decline => RequestStatus::Declined,
        }
    }
}

/// Trims and checks a reason or note: 1 to [`MAX_TEXT`] characters, else `invalid_request`
/// naming `field`.
pub fn text(field: &'static str, value: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > MAX_TEXT {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            field,
            format!("{field} must be 1 to {MAX_TEXT} characters"),
        ));
    }
    Ok(value.to_owned())
}

/// True once the lab holds the sample: a cancellation then needs staff to set a charge.
pub fn after_receipt(status: OrderStatus) -> bool {
    matches!(
        status,
        OrderStatus::SampleReceived | OrderStatus::InLab | OrderStatus::Reporting
    )
}

/// Refuses a request for an order that can no longer be cancelled.
pub fn check_fileable(status: OrderStatus, order_number: &str) -> Result<(), ApiError> {
    match status {
        OrderStatus::Cancelled => Err(ApiError::new(
            ErrorCode::OrderNotCancellable,
            format!("order {order_number} is already cancelled"),
        )),
        OrderStatus::Completed => Err(ApiError::new(
            ErrorCode::OrderNotCancellable,
            format!(
                "order {order_number} is completed: its results are published; open a support ticket about it instead"
            ),
        )),
        _ => Ok(()),
    }
}

/// The charge an approval keeps for an order in `status` with `total`: none before receipt
/// (a charge given then is refused), an explicit 0..=total after it (missing is refused).
pub fn approval_charge(status: OrderStatus, total: Cents, charge: Option<i64>) -> Result<Cents, ApiError> {
    if matches!(status, OrderStatus::Cancelled | OrderStatus::Completed) {
        return Err(ApiError::new(
            ErrorCode::OrderNotCancellable,
            format!(
                "the order is {} now; decline the request instead",
                status.as_str()
            ),
        ));
    }
    match (after_receipt(status), charge) {
        (false, None | Some(0)) => Ok(Cents(0)),
        (false, Some(_)) => Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "chargeCents",
            "nothing is charged for an order cancelled before its sample is received",
        )),
        (true, None) => Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "chargeCents",
            "the lab holds the sample: approving needs chargeCents, 0 up to the order total, for the work already done",
        )),
        (true, Some(cents)) if cents < 0 || cents > total.0 => Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "chargeCents",
            format!("chargeCents must be 0 up to the order total ({})", total.0),
        )),
        (true, Some(cents)) => Ok(Cents(cents)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OrderStatus::*;

    #[test]
    fn a_reason_is_trimmed_and_must_be_one_to_two_thousand_characters() {
        assert_eq!(text("reason", "  changed my mind ").unwrap(), "changed my mind");
        for bad in ["", "   ", &"x".repeat(MAX_TEXT + 1)] {
            let error = text("reason", bad).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest);
        }
        assert!(text("reason", &"é".repeat(MAX_TEXT)).is_ok());
    }

    #[test]
    fn cancelled_and_completed_orders_take_no_request_and_every_other_status_does() {
        for status in [Cancelled, Completed] {
            assert_eq!(
                check_fileable(status, "ORD-1").unwrap_err().code,
                ErrorCode::OrderNotCancellable
            );
        }
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
            assert!(check_fileable(status, "ORD-1").is_ok(), "{status:?}");
        }
    }

    #[test]
    fn before_receipt_an_approval_charges_nothing_and_refuses_a_charge() {
        for status in [InvoiceSent, Overdue, Paid, LabelGenerated, InTransit] {
            assert_eq!(approval_charge(status, Cents(900), None).unwrap(), Cents(0));
            assert_eq!(approval_charge(status, Cents(900), Some(0)).unwrap(), Cents(0));
            assert_eq!(
                approval_charge(status, Cents(900), Some(100)).unwrap_err().code,
                ErrorCode::InvalidRequest
            );
        }
    }

    #[test]
    fn after_receipt_an_approval_needs_a_charge_within_the_order_total() {
        for status in [SampleReceived, InLab, Reporting] {
            assert_eq!(
                approval_charge(status, Cents(900), None).unwrap_err().code,
                ErrorCode::InvalidRequest
            );
            assert_eq!(approval_charge(status, Cents(900), Some(0)).unwrap(), Cents(0));
            assert_eq!(
                approval_charge(status, Cents(900), Some(900)).unwrap(),
                Cents(900)
            );
            for bad in [-1, 901] {
                assert_eq!(
                    approval_charge(status, Cents(900), Some(bad)).unwrap_err().code,
                    ErrorCode::InvalidRequest
                );
            }
        }
        assert_eq!(
            approval_charge(Completed, Cents(900), Some(0)).unwrap_err().code,
            ErrorCode::OrderNotCancellable
        );
    }
}

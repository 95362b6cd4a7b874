//! Payments: the validated staff command that records a bank transfer, the recorded payment,
//! and the settlement arithmetic that moves an invoice from `open` to `paid`.

use crate::domain::invoice::{InvoiceStatus, PaymentMethod};
use crate::domain::reference::InvoiceReference;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use uuid::Uuid;

/// Status of a settled payment (the bank rail records only money that arrived).
pub const STATUS_SUCCEEDED: &str = "succeeded";
/// Status of card money captured for an invoice that was already paid or void (a late success
/// of an older session): kept on record for staff to refund, the invoice unchanged.
pub const STATUS_REFUND_DUE: &str = "refund_due";
/// Longest bank reference, in characters.
pub const MAX_BANK_REFERENCE_CHARS: usize = 200;

/// A validated request to record money received by bank transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankPayment {
    pub invoice: InvoiceReference,
    pub amount: Cents,
    /// The bank's reference of the transfer, trimmed; unique among bank payments.
    pub bank_reference: String,
    /// When the money arrived; the recording time when absent.
    pub received_at: Option<DateTime<Utc>>,
}

impl BankPayment {
    /// Validates the staff input: a reference, a positive amount and a 1..=200 character bank reference.
    pub fn parse(
        invoice_reference: &str,
        amount_cents: i64,
        bank_reference: &str,
        received_at: Option<DateTime<Utc>>,
    ) -> Result<Self, ApiError> {
        let invoice = InvoiceReference::parse_required("invoiceReference", invoice_reference)?;
        if amount_cents <= 0 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "amountCents",
                "amountCents must be greater than 0",
            ));
        }
        let bank_reference = bank_reference.trim();
        if bank_reference.is_empty() || bank_reference.chars().count() > MAX_BANK_REFERENCE_CHARS {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "bankReference",
                "bankReference must be 1 to 200 characters",
            ));
        }
        Ok(Self {
            invoice,
            amount: Cents(amount_cents),
            bank_reference: bank_reference.to_owned(),
            received_at,
        })
    }
}

impl BankPayment {
    /// True when `recorded`, the payment that already holds this bank reference, is this same
    /// transfer recorded again: against the same invoice (named by id or number) for the same
    /// amount. The arrival time is not compared: a correction of it is not another transfer.
    pub fn is_recorded_as(&self, recorded: &Payment) -> bool {
        let same_invoice = match &self.invoice {
            InvoiceReference::Id(id) => *id == recorded.invoice_id,
            InvoiceReference::Text(number) => *number == recorded.invoice_number,
        };
        same_invoice && self.amount == recorded.amount
    }

    /// The 409 for a bank reference already recorded against another invoice or amount, naming
    /// the recorded payment (staff only see this answer).
    pub fn conflict_with(&self, recorded: &Payment) -> ApiError {
        ApiError::new(
            ErrorCode::BankReferenceConflict,
            format!(
                "bank reference {:?} was already recorded for invoice {} with {} cents",
                self.bank_reference, recorded.invoice_number, recorded.amount.0
            ),
        )
        .with_details(serde_json::json!({
            "field": "bankReference",
            "paymentId": recorded.id,
            "invoiceNumber": recorded.invoice_number,
            "amountCents": recorded.amount.0,
        }))
    }
}

/// A recorded payment, with the invoice and order it settles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payment {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub invoice_id: Uuid,
    pub invoice_number: String,
    pub order_id: Uuid,
    pub order_number: String,
    pub rail: PaymentMethod,
    pub status: String,
    pub amount: Cents,
    pub currency: String,
    pub external_reference: String,
    pub received_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    /// The operator who recorded a bank payment.
    pub recorded_by: Option<String>,
}

/// The money state of an invoice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Balance {
    pub status: InvoiceStatus,
    pub total: Cents,
    pub paid: Cents,
    pub due: Cents,
}

/// The money state after a payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settlement {
    pub paid: Cents,
    /// Never below zero, even when the invoice is overpaid.
    pub due: Cents,
    /// True when this payment brought the invoice to `paid`.
    pub completes: bool,
}

impl Balance {
    /// Applies a payment of `amount` to an open (or overdue) invoice against what is due; a paid
    /// or void invoice is a conflict.
    pub fn settle(self, invoice_number: &str, amount: Cents) -> Result<Settlement, ApiError> {
        if !matches!(self.status, InvoiceStatus::Open | InvoiceStatus::Overdue) {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "invoice {invoice_number} is {} and accepts no payment",
                    self.status.as_str()
                ),
            )
            .with_details(serde_json::json!({ "status": self.status.as_str() })));
        }
        let paid = self.paid.checked_add(amount).ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                "amountCents",
                "amountCents is too large",
            )
        })?;
        // What is due, not the total: a cancelled order's invoice is credited down to the charge
        // kept (`domain::cancellation`), so its due amount is less than total − paid.
        let due = Cents((self.due.0 - amount.0).max(0));
        Ok(Settlement {
            paid,
            due,
            completes: amount >= self.due,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(total: i64, paid: i64) -> Balance {
        Balance {
            status: InvoiceStatus::Open,
            total: Cents(total),
            paid: Cents(paid),
            due: Cents(total - paid),
        }
    }

    #[test]
    fn a_partial_payment_keeps_the_invoice_open() {
        let settlement = open(1000, 0).settle("INV-1", Cents(400)).unwrap();
        assert_eq!(
            settlement,
            Settlement {
                paid: Cents(400),
                due: Cents(600),
                completes: false
            }
        );
    }

    #[test]
    fn the_payment_that_reaches_the_total_completes_it_and_overpayment_leaves_nothing_due() {
        assert!(open(1000, 600).settle("INV-1", Cents(400)).unwrap().completes);
        let over = open(1000, 600).settle("INV-1", Cents(900)).unwrap();
        assert_eq!(
            over,
            Settlement {
                paid: Cents(1500),
                due: Cents(0),
                completes: true
            }
        );
    }

    #[test]
    fn paid_and_void_invoices_accept_no_payment() {
        for status in [InvoiceStatus::Paid, InvoiceStatus::Void] {
            let balance = Balance {
                status,
                ..open(1000, 1000)
            };
            assert_eq!(
                balance.settle("INV-1", Cents(1)).unwrap_err().code,
                ErrorCode::Conflict
            );
        }
    }

    fn recorded(invoice_id: Uuid, amount: i64) -> Payment {
        Payment {
            id: Uuid::now_v7(),
            customer_id: Uuid::now_v7(),
            invoice_id,
            invoice_number: "INV-2026-000007".into(),
            order_id: Uuid::now_v7(),
            order_number: "ORD-2026-000007".into(),
            rail: PaymentMethod::BankInvoice,
            status: STATUS_SUCCEEDED.into(),
            amount: Cents(amount),
            currency: "USD".into(),
            external_reference: "WIRE-1".into(),
            received_at: chrono::Utc::now(),
            created_at: chrono::Utc::now(),
            recorded_by: Some("dana".into()),
        }
    }

    #[test]
    fn a_bank_reference_is_the_same_transfer_only_with_the_same_invoice_and_amount() {
        let invoice_id = Uuid::now_v7();
        let earlier = recorded(invoice_id, 500);
        let again = |reference: &str, amount| BankPayment::parse(reference, amount, "WIRE-1", None).unwrap();
        assert!(again(&invoice_id.to_string(), 500).is_recorded_as(&earlier));
        assert!(again("INV-2026-000007", 500).is_recorded_as(&earlier));
        assert!(!again("INV-2026-000007", 501).is_recorded_as(&earlier));
        assert!(!again("INV-2026-000008", 500).is_recorded_as(&earlier));
        assert!(!again(&Uuid::now_v7().to_string(), 500).is_recorded_as(&earlier));
        let conflict = again("INV-2026-000008", 500).conflict_with(&earlier);
        assert_eq!(conflict.code, ErrorCode::BankReferenceConflict);
        assert_eq!(conflict.details.unwrap()["invoiceNumber"], "INV-2026-000007");
    }

    #[test]
    fn bank_payment_input_is_validated_field_by_field() {
        let id = Uuid::nil().to_string();
        let field = |error: ApiError| error.details.unwrap()["field"].as_str().unwrap().to_owned();
        assert_eq!(
            field(BankPayment::parse(&id, 0, "REF", None).unwrap_err()),
            "amountCents"
        );
        assert_eq!(
            field(BankPayment::parse(&id, 5, "  ", None).unwrap_err()),
            "bankReference"
        );
        assert_eq!(
            field(BankPayment::parse(&id, 5, &"x".repeat(201), None).unwrap_err()),
            "bankReference"
        );
        assert_eq!(
            BankPayment::parse(&id, 5, " REF-1 ", None)
                .unwrap()
                .bank_reference,
            "REF-1"
        );
    }
}

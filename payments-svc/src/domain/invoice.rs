//! Invoices: payment methods, statuses, lines, the validated request to issue one, the issued
//! record, and the invoice number format.

use chrono::{DateTime, Datelike, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Currency of every invoice: the mesh counts integer USD cents.
pub const CURRENCY: &str = "USD";
/// Most lines one invoice may carry.
pub const MAX_LINES: usize = 500;
/// Longest line description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Longest order number, in characters.
pub const MAX_ORDER_NUMBER_CHARS: usize = 100;

/// The payment rail of an invoice (and of a payment): the one type of the mesh
/// (`lab.common.v1.PaymentMethod`), stored and shown by its canonical name (`as_str`, `parse`).
pub use proto::common::PaymentMethod;

/// Status of an invoice (`lab.common.v1.InvoiceStatus`, the one type of the mesh): `open` until
/// paid in full, then `paid`; `overdue` when a bank invoice passed its due date unpaid (a later
/// payment still settles it); `void` when cancelled.
pub use proto::common::InvoiceStatus;

/// One invoice line; `amount = quantity × unit_price`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvoiceLine {
    pub description: String,
    pub quantity: i64,
    pub unit_price: Cents,
    pub amount: Cents,
}

/// Where and how to pay a bank invoice; `reference` is the invoice number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankInstructions {
    pub beneficiary: String,
    pub bank_name: String,
    pub account_number: String,
    pub routing_number: String,
    pub swift: String,
    pub reference: String,
}

/// An invoice request as received, before validation.
#[derive(Clone, Debug)]
pub struct RawInvoice {
    pub order_id: String,
    pub order_number: String,
    pub payment_method: String,
    pub currency: String,
    pub lines: Vec<InvoiceLine>,
    pub total_cents: i64,
    pub checkout_expires_at: Option<DateTime<Utc>>,
}

/// A validated request to issue the invoice of an order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewInvoice {
    pub order_id: Uuid,
    pub order_number: String,
    pub payment_method: PaymentMethod,
    pub currency: &'static str,
    pub lines: Vec<InvoiceLine>,
    pub total: Cents,
    /// When the card checkout session expires (the quote's expiry); card rail only.
    pub checkout_expires_at: Option<DateTime<Utc>>,
    /// The add-on a supplementary invoice bills (one invoice per add-on); `None` for the
    /// order's own invoice (one per order).
    pub addon_id: Option<Uuid>,
    /// A sandbox customer's order (docs/sandbox.md): sandbox processor, demo bank account.
    pub sandbox: bool,
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message)
}

impl NewInvoice {
    /// Validates a raw request: order id and number, canonical payment method, USD, at least one
    /// line, positive quantities, `amount = quantity × unit price`, lines summing to a positive total.
    pub fn parse(raw: RawInvoice) -> Result<Self, ApiError> {
        let order_id = platform::ids::parse_uuid("orderId", &raw.order_id)?;
        let order_number = raw.order_number.trim().to_owned();
        if order_number.is_empty() || order_number.chars().count() > MAX_ORDER_NUMBER_CHARS {
            return Err(invalid("orderNumber", "orderNumber must be 1 to 100 characters"));
        }
        let payment_method = PaymentMethod::parse(raw.payment_method.trim()).ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidPaymentMethod,
                "paymentMethod",
                "paymentMethod must be bank_invoice, card_checkout or chain_stablecoin",
            )
        })?;
        let currency = raw.currency.trim();
        if !(currency.is_empty() || currency.eq_ignore_ascii_case(CURRENCY)) {
            return Err(invalid("currency", "currency must be USD"));
        }
        if raw.lines.is_empty() || raw.lines.len() > MAX_LINES {
            return Err(invalid("lines", "an invoice needs 1 to 500 lines"));
        }
        let mut lines = Vec::with_capacity(raw.lines.len());
        for (index, line) in raw.lines.into_iter().enumerate() {
            lines.push(validate_line(index, line)?);
        }
        let sum = Cents::sum(lines.iter().map(|line| line.amount))
            .ok_or_else(|| invalid("totalCents", "the line amounts overflow"))?;
        if raw.total_cents <= 0 {
            return Err(invalid("totalCents", "totalCents must be greater than 0"));
        }
        if sum != Cents(raw.total_cents) {
            return Err(invalid(
                "totalCents",
                "totalCents must equal the sum of the line amounts",
            ));
        }
        Ok(Self {
            order_id,
            order_number,
            payment_method,
            currency: CURRENCY,
            lines,
            total: sum,
            checkout_expires_at: raw.checkout_expires_at,
            addon_id: None,
            sandbox: false,
        })
    }
}

fn validate_line(index: usize, line: InvoiceLine) -> Result<InvoiceLine, ApiError> {
    let field = |name: &str| format!("lines[{index}].{name}");
    let description = line.description.trim().to_owned();
    if description.is_empty() || description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(invalid(
            &field("description"),
            "description must be 1 to 500 characters",
        ));
    }
    if line.quantity <= 0 {
        return Err(invalid(&field("quantity"), "quantity must be greater than 0"));
    }
    if line.unit_price.checked_mul(line.quantity) != Some(line.amount) {
        return Err(invalid(
            &field("amountCents"),
            "amountCents must equal quantity times unitPriceCents",
        ));
    }
    Ok(InvoiceLine { description, ..line })
}

/// Formats an invoice number: `INV-<year>-<sequence, at least 6 digits>`.
pub fn invoice_number(issued_at: DateTime<Utc>, sequence: i64) -> String {
    format!("INV-{}-{sequence:06}", issued_at.year())
}

/// An issued invoice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invoice {
    pub id: Uuid,
    pub invoice_number: String,
    pub customer_id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub status: InvoiceStatus,
    /// Status before the last change; `None` while never changed.
    pub previous_status: Option<InvoiceStatus>,
    pub payment_method: PaymentMethod,
    pub currency: String,
    pub lines: Vec<InvoiceLine>,
    pub total: Cents,
    pub amount_paid: Cents,
    pub amount_due: Cents,
    pub issued_at: DateTime<Utc>,
    pub due_at: DateTime<Utc>,
    pub paid_at: Option<DateTime<Utc>>,
    pub bank_instructions: Option<BankInstructions>,
    pub created_at: DateTime<Utc>,
    /// A sandbox customer's invoice (docs/sandbox.md): sandbox processor, demo bank account.
    #[serde(default)]
    pub sandbox: bool,
    /// The newest checkout session (card rail), where the use case attached it.
    #[serde(default)]
    pub checkout: Option<crate::domain::checkout::CheckoutSession>,
    /// The add-on this supplementary invoice bills; `None` for the order's own invoice.
    #[serde(default)]
    pub addon_id: Option<Uuid>,
}

impl Invoice {
    /// The spend commitment the invoice's money stands for: the add-on's (kind `addon`) for a
    /// supplementary invoice, else the order's (kind `order`).
    pub fn spend_subject(&self) -> (crate::domain::spend::SpendKind, String) {
        match self.addon_id {
            Some(addon_id) => (crate::domain::spend::SpendKind::Addon, addon_id.to_string()),
            None => (crate::domain::spend::SpendKind::Order, self.order_id.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(quantity: i64, unit: i64, amount: i64) -> InvoiceLine {
        InvoiceLine {
            description: "Caffeine: 2 analyses".into(),
            quantity,
            unit_price: Cents(unit),
            amount: Cents(amount),
        }
    }

    fn raw(lines: Vec<InvoiceLine>, total: i64) -> RawInvoice {
        RawInvoice {
            order_id: Uuid::nil().to_string(),
            order_number: "ORD-1".into(),
            payment_method: "bank_invoice".into(),
            currency: String::new(),
            lines,
            total_cents: total,
            checkout_expires_at: None,
        }
    }

    fn field_of(error: ApiError) -> String {
        error.details.unwrap()["field"].as_str().unwrap().to_owned()
    }

    #[test]
    fn a_consistent_request_is_accepted_in_usd() {
        let invoice = NewInvoice::parse(raw(vec![line(2, 500, 1000), line(1, 250, 250)], 1250)).unwrap();
        assert_eq!(invoice.total, Cents(1250));
        assert_eq!(invoice.currency, "USD");
        assert_eq!(invoice.payment_method, PaymentMethod::BankInvoice);
    }

    #[test]
    fn inconsistent_lines_and_totals_name_the_offending_field() {
        assert_eq!(field_of(NewInvoice::parse(raw(vec![], 0)).unwrap_err()), "lines");
        assert_eq!(
            field_of(NewInvoice::parse(raw(vec![line(0, 5, 0)], 5)).unwrap_err()),
            "lines[0].quantity"
        );
        assert_eq!(
            field_of(NewInvoice::parse(raw(vec![line(2, 5, 11)], 11)).unwrap_err()),
            "lines[0].amountCents"
        );
        assert_eq!(
            field_of(NewInvoice::parse(raw(vec![line(2, 5, 10)], 11)).unwrap_err()),
            "totalCents"
        );
        assert_eq!(
            field_of(NewInvoice::parse(raw(vec![line(1, 0, 0)], 0)).unwrap_err()),
            "totalCents"
        );
        assert_eq!(
            field_of(NewInvoice::parse(raw(vec![line(2, i64::MAX, 0)], 1)).unwrap_err()),
            "lines[0].amountCents"
        );
    }

    #[test]
    fn only_canonical_payment_methods_and_usd_are_accepted() {
        let mut request = raw(vec![line(1, 5, 5)], 5);
        request.payment_method = "stablecoin_erc20".into();
        assert_eq!(
            NewInvoice::parse(request.clone()).unwrap_err().code,
            ErrorCode::InvalidPaymentMethod
        );
        request.payment_method = "card_checkout".into();
        request.currency = "EUR".into();
        assert_eq!(field_of(NewInvoice::parse(request).unwrap_err()), "currency");
    }

    #[test]
    fn invoice_numbers_carry_the_year_and_six_digits() {
        let issued = DateTime::parse_from_rfc3339("2026-07-17T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(invoice_number(issued, 42), "INV-2026-000042");
        assert_eq!(invoice_number(issued, 1_234_567), "INV-2026-1234567");
    }
}

//! The order and its parts, as stored and answered: sample lines with their priced items, non-line
//! charges, the status history and the payment block (the invoice as last known here). An order
//! serializes (serde) as the stored answer of its idempotent creation.

use crate::domain::payment_method::PaymentMethod;
use crate::domain::status::OrderStatus;
use chrono::{DateTime, Datelike, Utc};
use platform::money::Cents;
use proto::common::InvoiceStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Reason recorded on the first status-history entry.
pub const REASON_CREATED: &str = "order.created";

/// One priced item on a sample line, copied from the quote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineItem {
    pub item_id: String,
    /// "test" or "bundle".
    pub kind: String,
    pub name: String,
    pub price_cents: i64,
    pub test_ids: Vec<String>,
}

/// What the customer ships for one test of a line, copied from the quote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleRequirement {
    pub container: String,
    pub amount: String,
    pub notes: String,
}

/// One sample line: one quoted compound with the overlaid lot number and matrix notes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLine {
    pub line_number: i32,
    pub compound_name: String,
    pub lot_number: Option<String>,
    pub matrix_notes: Option<String>,
    pub items: Vec<LineItem>,
    pub sample_requirements: Vec<SampleRequirement>,
    pub subtotal: Cents,
}

/// A charge outside the sample lines (turnaround surcharge, conformity samples).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    pub kind: String,
    pub description: String,
    pub quantity: i64,
    pub unit_price: Cents,
    pub amount: Cents,
}

/// One entry of the status history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChange {
    /// `None` for the first entry.
    pub from: Option<OrderStatus>,
    pub to: OrderStatus,
    pub changed_at: DateTime<Utc>,
    pub reason: String,
}

/// Where and how to pay a bank invoice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BankInstructions {
    pub beneficiary: String,
    pub bank_name: String,
    pub account_number: String,
    pub routing_number: String,
    pub swift: String,
    pub reference: String,
}

/// The payment block: the order's invoice as last known to orders-svc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentSummary {
    pub invoice_id: String,
    pub invoice_number: String,
    /// Invoice status as payments-svc last announced it.
    pub status: InvoiceStatus,
    pub amount_due: Cents,
    pub due_at: Option<DateTime<Utc>>,
    pub bank_instructions: Option<BankInstructions>,
    /// The hosted checkout link issued with the order (card rail).
    #[serde(default)]
    pub hosted_url: Option<String>,
    #[serde(default)]
    pub checkout_expires_at: Option<DateTime<Utc>>,
}

/// An order placed from a quote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub id: Uuid,
    pub order_number: String,
    pub customer_id: Uuid,
    pub quote_id: Uuid,
    pub status: OrderStatus,
    pub payment_method: PaymentMethod,
    pub catalog_revision: String,
    pub category_id: String,
    pub turnaround: String,
    pub turnaround_business_days: i32,
    pub conformity_samples: i64,
    pub client_reference: Option<String>,
    pub notes: Option<String>,
    pub publish_raw_data: bool,
    pub expected_payer_address: Option<String>,
    pub billing_address_id: Option<Uuid>,
    pub shipping_address_id: Option<Uuid>,
    /// When the quote expired (the card checkout session expires with it).
    #[serde(default)]
    pub quote_expires_at: Option<DateTime<Utc>>,
    pub lines: Vec<OrderLine>,
    pub charges: Vec<Charge>,
    pub total: Cents,
    pub currency: String,
    /// Oldest first.
    pub status_history: Vec<StatusChange>,
    pub payment: Option<PaymentSummary>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Accession numbers of the received samples, by line (empty before receipt).
    #[serde(default)]
    pub accession_numbers: Vec<String>,
    /// The stablecoin payment request issued with the order (chain_stablecoin rail only), as
    /// payments-svc answered `RequestStablecoinPayment`; the live state is payments-svc's.
    #[serde(default)]
    pub stablecoin: Option<StablecoinRequest>,
    /// The latest cancellation request (pending or decided), if any.
    #[serde(default)]
    pub cancellation: Option<super::cancellation::CancelRequest>,
    /// Add-on tests ordered on the order's retained samples, oldest first.
    #[serde(default)]
    pub addons: Vec<Addon>,
    /// Placed by a sandbox customer's key (docs/sandbox.md): only such an order is simulated.
    #[serde(default)]
    pub sandbox: bool,
}

/// The stablecoin payment request of an order (SPEC Order: `amount.atomic`, `amount.decimal`,
/// `amount.referenceAtomic`, no-rounding notice), copied from payments-svc at order time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StablecoinRequest {
    pub request_id: String,
    /// cents × 10^4 + reference, atomic units of the six-decimal token.
    pub atomic: i64,
    /// Exactly six decimals, never rounded.
    pub decimal: String,
    /// The permanent sub-cent reference (1..9999).
    pub reference_atomic: i64,
    pub notice: String,
    pub chain_id: u64,
    pub token_address: String,
    pub target_address: String,
    pub payer_address: String,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Payment state shown apart from the physical progress: `paid` once the invoice is paid.
pub const PAYMENT_PAID: &str = "paid";
/// Payment state until the invoice is paid.
pub const PAYMENT_UNPAID: &str = "unpaid";

/// What payments-svc announced about an order's invoice on its stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvoiceNews {
    /// `payment.confirmed`: the invoice is paid in full.
    PaymentConfirmed {
        invoice_id: String,
        invoice_number: String,
    },
    /// `invoice.created`: the invoice exists (the payment block, without bank instructions).
    InvoiceCreated(PaymentSummary),
    /// `invoice.updated`: the invoice's status and amount due changed.
    InvoiceUpdated {
        invoice_id: String,
        invoice_number: String,
        status: InvoiceStatus,
        amount_due: Cents,
    },
}

/// One line of the invoice issued for an order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceLine {
    pub description: String,
    pub quantity: i64,
    pub unit_price: Cents,
    pub amount: Cents,
}

/// Formats the public order number `ORD-<year>-<6-digit sequence>`.
pub fn order_number(created_at: DateTime<Utc>, sequence: i64) -> String {
    format!("ORD-{}-{sequence:06}", created_at.year())
}

impl Order {
    /// `paid` once the invoice is paid (or the order reached `paid`), else `unpaid`.
    pub fn payment_state(&self) -> &'static str {
        let invoice_paid = self
            .payment
            .as_ref()
            .is_some_and(|payment| payment.status == InvoiceStatus::Paid);
        if invoice_paid || self.status == OrderStatus::Paid {
            PAYMENT_PAID
        } else {
            PAYMENT_UNPAID
        }
    }

    /// The itemized invoice lines: one per sample line ("<compound>: <item names>", quantity 1,
    /// the line subtotal), then one per charge with its quantity and unit price. They add up to
    /// the order total because the quote's total is the sum of its subtotals and charges.
    pub fn invoice_lines(&self) -> Vec<InvoiceLine> {
        let sample_lines = self.lines.iter().map(|line| {
            let names: Vec<&str> = line.items.iter().map(|item| item.name.as_str()).collect();
            InvoiceLine {
                description: format!("{}: {}", line.compound_name, names.join(", ")),
                quantity: 1,
                unit_price: line.subtotal,
                amount: line.subtotal,
            }
        });
        let charges = self.charges.iter().map(|charge| InvoiceLine {
            description: charge.description.clone(),
            quantity: charge.quantity,
            unit_price: charge.unit_price,
            amount: charge.amount,
        });
        sample_lines.chain(charges).collect()
    }
}

/// The catalog test ids of a line's items, each once, in item order.
pub fn line_test_ids(items: &[LineItem]) -> Vec<String> {
    let mut test_ids: Vec<String> = Vec::new();
    for item in items {
        for test in &item.test_ids {
            if !test_ids.contains(test) {
                test_ids.push(test.clone());
            }
        }
    }
    test_ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_numbers_carry_the_year_and_a_zero_padded_sequence() {
        let at = DateTime::parse_from_rfc3339("2026-07-17T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(order_number(at, 42), "ORD-2026-000042");
        assert_eq!(order_number(at, 1_234_567), "ORD-2026-1234567");
    }
}

// Add-on records (their rules are `super::addon`'s): kept here, beside the order that lists
// them, so that the order's module does not depend on the add-on rules that use it.

/// Where an add-on stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AddonStatus {
    /// Priced, not stored (the answer of `confirm: false`).
    Preview,
    /// Stored, its supplementary invoice issued and unpaid.
    PendingPayment,
    /// Paid: the tests are on the lab's list of the sample; testing has not started.
    Paid,
    /// Paid and the sample's testing is under way: the lab runs the tests.
    InTesting,
    /// A COA of the sample that includes the tests was published.
    Reported,
    /// Unpaid when its order was cancelled: payments-svc voided its invoice; never tested.
    Cancelled,
}

impl AddonStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AddonStatus::Preview => "preview",
            AddonStatus::PendingPayment => "pending_payment",
            AddonStatus::Paid => "paid",
            AddonStatus::InTesting => "in_testing",
            AddonStatus::Reported => "reported",
            AddonStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            AddonStatus::Preview,
            AddonStatus::PendingPayment,
            AddonStatus::Paid,
            AddonStatus::InTesting,
            AddonStatus::Reported,
            AddonStatus::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// One priced test of an add-on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddonTest {
    pub test_id: String,
    pub name: String,
    pub price_cents: i64,
}

/// The supplementary invoice of an add-on as last known here.
pub type AddonInvoice = PaymentSummary;

/// An add-on as stored (or previewed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addon {
    /// `Uuid::nil()` in a preview.
    pub id: Uuid,
    pub order_id: Uuid,
    pub order_number: String,
    pub line_number: i32,
    pub accession_number: String,
    pub status: AddonStatus,
    pub tests: Vec<AddonTest>,
    pub total: Cents,
    pub currency: String,
    pub catalog_revision: String,
    pub requested_at: Option<DateTime<Utc>>,
    pub paid_at: Option<DateTime<Utc>>,
    pub reported_at: Option<DateTime<Utc>>,
    pub invoice: Option<AddonInvoice>,
}

impl Addon {
    pub fn test_ids(&self) -> Vec<String> {
        self.tests.iter().map(|test| test.test_id.clone()).collect()
    }

    pub fn test_names(&self) -> Vec<String> {
        self.tests.iter().map(|test| test.name.clone()).collect()
    }
}

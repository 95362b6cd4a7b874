//! Invoice and payment shapes and their list queries.

use super::common::{
    list_envelope, non_empty, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope,
};
use super::orders::BankInstructions;
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::common::{InvoiceStatus, PaymentMethod};
use proto::enums::{or_legacy, shown};
use proto::payments as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Query of `GET /invoices`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InvoicesQuery {
    /// Only invoices in this status (`open`, `overdue`, `paid`, `void`).
    pub status: Option<String>,
    /// Only the invoices of this order.
    pub order_id: Option<Uuid>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

/// Query of `GET /payments`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PaymentsQuery {
    /// Only the payments of this invoice.
    pub invoice_id: Option<Uuid>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

/// An itemized invoice (bank, card or stablecoin rail).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invoice {
    pub id: String,
    /// Public invoice number (`INV-…`).
    pub invoice_number: String,
    pub order_id: String,
    pub order_number: String,
    /// `open`, `overdue` (bank rail, past its due date), `paid` or `void`.
    pub status: String,
    /// Status before the last change, or `null`.
    pub previous_status: Option<String>,
    pub payment_method: String,
    pub currency: String,
    pub lines: Vec<InvoiceLine>,
    pub total_cents: i64,
    pub amount_paid_cents: i64,
    pub amount_due_cents: i64,
    #[serde(serialize_with = "rfc3339")]
    pub issued_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub due_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub paid_at: Option<DateTime<Utc>>,
    pub bank_instructions: Option<BankInstructions>,
    /// Card rail: the current hosted checkout session, else `null`.
    pub checkout: Option<Checkout>,
}

/// A hosted card checkout session: single use, locked to `amountCents`, expiring at `expiresAt`.
/// Card details are typed on the hosted page only, never sent to this API.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checkout {
    /// `{site_url}/pay/cs_…`: where the account owner pays.
    pub hosted_url: String,
    /// `open`, `completed` or `expired`.
    pub status: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub expires_at: Option<DateTime<Utc>>,
    pub amount_cents: i64,
    pub currency: String,
}

impl From<pb::CheckoutSession> for Checkout {
    fn from(session: pb::CheckoutSession) -> Self {
        Self {
            expires_at: optional_time(session.expires_at.as_ref()),
            hosted_url: session.hosted_url,
            status: session.status,
            amount_cents: session.amount_cents,
            currency: session.currency,
        }
    }
}

single_envelope!(InvoiceEnvelope, InvoiceData, invoice: Invoice);
list_envelope!(InvoiceList, Invoice);

impl TryFrom<pb::Invoice> for Invoice {
    type Error = ApiError;

    fn try_from(invoice: pb::Invoice) -> Result<Self, ApiError> {
        Ok(Self {
            issued_at: required_time(invoice.issued_at.as_ref(), "invoice issuedAt")?,
            due_at: optional_time(invoice.due_at.as_ref()),
            paid_at: optional_time(invoice.paid_at.as_ref()),
            id: invoice.id,
            invoice_number: invoice.invoice_number,
            order_id: invoice.order_id,
            order_number: invoice.order_number,
            status: shown::<InvoiceStatus>(invoice.status, invoice.legacy_status),
            previous_status: non_empty(shown::<InvoiceStatus>(
                invoice.previous_status,
                invoice.legacy_previous_status,
            )),
            payment_method: shown::<PaymentMethod>(invoice.payment_method, invoice.legacy_payment_method),
            currency: invoice.currency,
            lines: invoice.lines.into_iter().map(InvoiceLine::from).collect(),
            total_cents: invoice.total_cents,
            amount_paid_cents: invoice.amount_paid_cents,
            amount_due_cents: invoice.amount_due_cents,
            bank_instructions: invoice.bank_instructions.map(|bank| BankInstructions {
                beneficiary: bank.beneficiary,
                bank_name: bank.bank_name,
                account_number: bank.account_number,
                routing_number: bank.routing_number,
                swift: bank.swift,
                reference: bank.reference,
            }),
            checkout: invoice.checkout.map(Checkout::from),
        })
    }
}

/// The calling key's spend envelope: its caps (per order, per UTC day, per UTC month) and what
/// remains of them now. A cap that is `null` is not set.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpendEnvelope {
    pub key_id: String,
    /// False when the lab never set an envelope for this key: `withoutEnvelope` then says
    /// whether the key may commit spend at all (`refuse`) or without limit (`allow`).
    pub configured: bool,
    pub per_order_cap_cents: Option<i64>,
    pub daily_cap_cents: Option<i64>,
    pub monthly_cap_cents: Option<i64>,
    /// Committed (and not released) since 00:00 UTC today.
    pub spent_today_cents: i64,
    /// Committed (and not released) since the first of this month, 00:00 UTC.
    pub spent_this_month_cents: i64,
    /// `null`: no daily cap.
    pub remaining_today_cents: Option<i64>,
    /// `null`: no monthly cap.
    pub remaining_this_month_cents: Option<i64>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub day_resets_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub month_resets_at: Option<DateTime<Utc>>,
    /// `refuse` or `allow`: what this deployment lets a key without an envelope commit.
    pub without_envelope: String,
}

single_envelope!(SpendEnvelopeEnvelope, SpendEnvelopeData, envelope: SpendEnvelope);

impl From<pb::SpendEnvelope> for SpendEnvelope {
    fn from(envelope: pb::SpendEnvelope) -> Self {
        Self {
            day_resets_at: optional_time(envelope.day_resets_at.as_ref()),
            month_resets_at: optional_time(envelope.month_resets_at.as_ref()),
            key_id: envelope.key_id,
            configured: envelope.configured,
            per_order_cap_cents: envelope.per_order_cap_cents,
            daily_cap_cents: envelope.daily_cap_cents,
            monthly_cap_cents: envelope.monthly_cap_cents,
            spent_today_cents: envelope.spent_today_cents,
            spent_this_month_cents: envelope.spent_this_month_cents,
            remaining_today_cents: envelope.remaining_today_cents,
            remaining_this_month_cents: envelope.remaining_this_month_cents,
            without_envelope: envelope.without_envelope,
        }
    }
}

/// Body of `POST /payments/prepare`.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreparePaymentRequest {
    /// The order to pay: its UUID, its order number (`ORD-…`) or its invoice number (`INV-…`).
    #[schema(example = "ORD-2026-000042")]
    pub order_reference: String,
}

/// How to pay an order now.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreparedPayment {
    /// `awaiting_payment`, `paid` or `void`.
    pub state: String,
    pub order_id: String,
    pub order_number: String,
    pub payment_method: String,
    pub amount_due_cents: i64,
    pub currency: String,
    /// Card rail while unpaid: the checkout link to use now (a fresh one when the previous
    /// one expired), else `null`.
    pub checkout: Option<Checkout>,
    /// Bank rail: remittance instructions, else `null`.
    pub bank_instructions: Option<BankInstructions>,
    /// Stablecoin rail: the payment request (token, target, exact six-decimal amount, permanent
    /// sub-cent reference, expiry, state), renewed when it had expired unpaid; else `null`.
    pub stablecoin: Option<super::stablecoin::StablecoinPayment>,
    /// The order's invoice as it stands.
    pub invoice: Invoice,
}

single_envelope!(PreparedPaymentEnvelope, PreparedPaymentData, payment: PreparedPayment);

impl PreparedPayment {
    /// Builds the answer from payments-svc's state and invoice.
    pub fn from_proto(
        state: String,
        invoice: pb::Invoice,
        stablecoin: Option<pb::StablecoinPayment>,
    ) -> Result<Self, ApiError> {
        // Payment instructions only for an invoice that still takes money.
        let unpaid = matches!(
            or_legacy::<InvoiceStatus>(invoice.status, &invoice.legacy_status),
            InvoiceStatus::Open | InvoiceStatus::Overdue
        );
        let invoice = Invoice::try_from(invoice)?;
        let stablecoin = stablecoin
            .map(super::stablecoin::StablecoinPayment::try_from)
            .transpose()?;
        Ok(Self {
            state,
            order_id: invoice.order_id.clone(),
            order_number: invoice.order_number.clone(),
            payment_method: invoice.payment_method.clone(),
            amount_due_cents: invoice.amount_due_cents,
            currency: invoice.currency.clone(),
            checkout: invoice
                .checkout
                .as_ref()
                .filter(|_| unpaid)
                .map(|checkout| Checkout {
                    hosted_url: checkout.hosted_url.clone(),
                    status: checkout.status.clone(),
                    expires_at: checkout.expires_at,
                    amount_cents: checkout.amount_cents,
                    currency: checkout.currency.clone(),
                }),
            bank_instructions: invoice.bank_instructions.as_ref().filter(|_| unpaid).map(|bank| {
                BankInstructions {
                    beneficiary: bank.beneficiary.clone(),
                    bank_name: bank.bank_name.clone(),
                    account_number: bank.account_number.clone(),
                    routing_number: bank.routing_number.clone(),
                    swift: bank.swift.clone(),
                    reference: bank.reference.clone(),
                }
            }),
            stablecoin,
            invoice,
        })
    }
}

/// One invoice line.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceLine {
    pub description: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub amount_cents: i64,
}

impl From<pb::InvoiceLine> for InvoiceLine {
    fn from(line: pb::InvoiceLine) -> Self {
        Self {
            description: line.description,
            quantity: line.quantity,
            unit_price_cents: line.unit_price_cents,
            amount_cents: line.amount_cents,
        }
    }
}

/// A payment received against an invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    pub id: String,
    pub invoice_id: String,
    pub invoice_number: String,
    pub order_id: String,
    pub order_number: String,
    /// `bank_invoice`, `card_checkout` or `chain_stablecoin`.
    pub rail: String,
    pub status: String,
    pub amount_cents: i64,
    pub currency: String,
    /// Bank reference of the transfer, or transaction hash; `null` when none.
    pub external_reference: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub received_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
}

single_envelope!(PaymentEnvelope, PaymentData, payment: Payment);
list_envelope!(PaymentList, Payment);

impl TryFrom<pb::Payment> for Payment {
    type Error = ApiError;

    fn try_from(payment: pb::Payment) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(payment.created_at.as_ref(), "payment createdAt")?,
            received_at: optional_time(payment.received_at.as_ref()),
            id: payment.id,
            invoice_id: payment.invoice_id,
            invoice_number: payment.invoice_number,
            order_id: payment.order_id,
            order_number: payment.order_number,
            rail: shown::<PaymentMethod>(payment.rail, payment.legacy_rail),
            status: payment.status,
            amount_cents: payment.amount_cents,
            currency: payment.currency,
            external_reference: non_empty(payment.external_reference),
        })
    }
}

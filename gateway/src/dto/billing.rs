//! Invoice and payment shapes and their list queries.

use super::common::{
    list_envelope, non_empty, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope,
};
use super::orders::BankInstructions;
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::payments as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Query of `GET /invoices`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InvoicesQuery {
    /// Only invoices in this status (`open`, `paid`, `void`).
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
    /// `open`, `paid` or `void`.
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
            status: invoice.status,
            previous_status: non_empty(invoice.previous_status),
            payment_method: invoice.payment_method,
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
            rail: payment.rail,
            status: payment.status,
            amount_cents: payment.amount_cents,
            currency: payment.currency,
            external_reference: non_empty(payment.external_reference),
        })
    }
}

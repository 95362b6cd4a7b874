//! Conversions between the gRPC messages of `lab.payments.v1` (and orders-svc's `order.created`)
//! and the domain.

use crate::domain::backstop::{OrderLine, backstop_lines};
use crate::domain::reference::optional_uuid;
use crate::domain::{
    BankPayment, Invoice, InvoiceLine, InvoiceReference, InvoiceStatus, NewInvoice, Payment, RawInvoice,
};
use crate::repo::invoices::InvoiceFilter;
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use platform::time::{to_timestamp, to_timestamp_opt};
use proto::payments as pb;
use uuid::Uuid;

impl TryFrom<pb::CreateInvoiceRequest> for NewInvoice {
    type Error = ApiError;

    fn try_from(request: pb::CreateInvoiceRequest) -> Result<Self, ApiError> {
        let lines = request
            .lines
            .into_iter()
            .map(|line| InvoiceLine {
                description: line.description,
                quantity: line.quantity,
                unit_price: Cents(line.unit_price_cents),
                amount: Cents(line.amount_cents),
            })
            .collect();
        NewInvoice::parse(RawInvoice {
            order_id: request.order_id,
            order_number: request.order_number,
            payment_method: request.payment_method,
            currency: request.currency,
            lines,
            total_cents: request.total_cents,
        })
    }
}

/// The invoice the `order.created` backstop issues for `order`, its lines built from the event
/// (`domain::backstop`).
pub fn backstop_invoice(order: &proto::orders::OrderCreated) -> Result<NewInvoice, ApiError> {
    let order_lines: Vec<OrderLine> = order
        .lines
        .iter()
        .map(|line| OrderLine {
            compound_name: line.compound_name.clone(),
            analyses: line.item_ids.len(),
            amount: Cents(line.amount_cents),
        })
        .collect();
    NewInvoice::parse(RawInvoice {
        order_id: order.order_id.clone(),
        order_number: order.order_number.clone(),
        payment_method: order.payment_method.clone(),
        currency: order.currency.clone(),
        lines: backstop_lines(&order.order_number, Cents(order.total_cents), &order_lines),
        total_cents: order.total_cents,
    })
}

impl TryFrom<pb::RecordBankPaymentRequest> for BankPayment {
    type Error = ApiError;

    fn try_from(request: pb::RecordBankPaymentRequest) -> Result<Self, ApiError> {
        let received_at = match request.received_at.as_ref() {
            None => None,
            Some(timestamp) => Some(platform::time::from_timestamp(timestamp).ok_or_else(|| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "receivedAt",
                    "receivedAt is not a valid time",
                )
            })?),
        };
        BankPayment::parse(
            &request.invoice_reference,
            request.amount_cents,
            &request.bank_reference,
            received_at,
        )
    }
}

/// The reference of a GetInvoice call.
pub fn invoice_reference(request: &pb::GetInvoiceRequest) -> Result<InvoiceReference, ApiError> {
    InvoiceReference::parse(&request.reference, "reference")
}

/// The filters of a ListInvoices call: status open|paid|void, order id a UUID.
pub fn invoice_filter(request: &pb::ListInvoicesRequest) -> Result<InvoiceFilter, ApiError> {
    let status = match request
        .status
        .as_deref()
        .map(str::trim)
        .filter(|status| !status.is_empty())
    {
        None => None,
        Some(status) => Some(InvoiceStatus::parse(status).ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                "status",
                "status must be open, paid or void",
            )
        })?),
    };
    Ok(InvoiceFilter {
        status,
        order_id: optional_uuid(request.order_id.as_deref(), "orderId")?,
    })
}

/// The invoice filter of a ListPayments call.
pub fn payment_invoice_filter(request: &pb::ListPaymentsRequest) -> Result<Option<Uuid>, ApiError> {
    optional_uuid(request.invoice_id.as_deref(), "invoiceId")
}

impl From<Invoice> for pb::Invoice {
    fn from(invoice: Invoice) -> Self {
        pb::Invoice {
            id: invoice.id.to_string(),
            invoice_number: invoice.invoice_number,
            customer_id: invoice.customer_id.to_string(),
            order_id: invoice.order_id.to_string(),
            order_number: invoice.order_number,
            status: invoice.status.as_str().to_owned(),
            previous_status: invoice
                .previous_status
                .map(|status| status.as_str().to_owned())
                .unwrap_or_default(),
            payment_method: invoice.payment_method.as_str().to_owned(),
            currency: invoice.currency,
            lines: invoice
                .lines
                .into_iter()
                .map(|line| pb::InvoiceLine {
                    description: line.description,
                    quantity: line.quantity,
                    unit_price_cents: line.unit_price.0,
                    amount_cents: line.amount.0,
                })
                .collect(),
            total_cents: invoice.total.0,
            amount_paid_cents: invoice.amount_paid.0,
            amount_due_cents: invoice.amount_due.0,
            issued_at: Some(to_timestamp(invoice.issued_at)),
            due_at: Some(to_timestamp(invoice.due_at)),
            paid_at: to_timestamp_opt(invoice.paid_at),
            bank_instructions: invoice.bank_instructions.map(|bank| pb::BankInstructions {
                beneficiary: bank.beneficiary,
                bank_name: bank.bank_name,
                account_number: bank.account_number,
                routing_number: bank.routing_number,
                swift: bank.swift,
                reference: bank.reference,
            }),
        }
    }
}

impl From<Payment> for pb::Payment {
    fn from(payment: Payment) -> Self {
        pb::Payment {
            id: payment.id.to_string(),
            customer_id: payment.customer_id.to_string(),
            invoice_id: payment.invoice_id.to_string(),
            invoice_number: payment.invoice_number,
            order_id: payment.order_id.to_string(),
            order_number: payment.order_number,
            rail: payment.rail.as_str().to_owned(),
            status: payment.status,
            amount_cents: payment.amount.0,
            currency: payment.currency,
            external_reference: payment.external_reference,
            received_at: Some(to_timestamp(payment.received_at)),
            created_at: Some(to_timestamp(payment.created_at)),
            recorded_by: payment.recorded_by,
        }
    }
}

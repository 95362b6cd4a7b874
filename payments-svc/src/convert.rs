//! Conversions between the gRPC messages of `lab.payments.v1` (and orders-svc's `order.created`)
//! and the domain.

use crate::domain::backstop::{OrderLine, backstop_lines};
use crate::domain::checkout::{CheckoutPage, CheckoutSession, PayOutcome, PaymentSource, TestCard};
use crate::domain::spend::EnvelopeView;
use crate::domain::{
    BankPayment, Invoice, InvoiceLine, InvoiceReference, InvoiceStatus, NewInvoice, Payment, RawInvoice,
};
use crate::repo::invoices::InvoiceFilter;
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use platform::time::{to_timestamp, to_timestamp_opt};
use proto::common::PaymentMethod;
use proto::enums::or_legacy;
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
        let addon_id = request
            .addon_id
            .as_deref()
            .map(|id| platform::ids::parse_uuid("addonId", id))
            .transpose()?;
        let mut new = NewInvoice::parse(RawInvoice {
            order_id: request.order_id,
            order_number: request.order_number,
            // The enum, or the text an orders-svc of the release before sends.
            payment_method: or_legacy::<PaymentMethod>(
                request.payment_method,
                &request.legacy_payment_method,
            )
            .as_str()
            .to_owned(),
            currency: request.currency,
            lines,
            total_cents: request.total_cents,
            checkout_expires_at: request
                .checkout_expires_at
                .as_ref()
                .and_then(platform::time::from_timestamp),
        })?;
        new.addon_id = addon_id;
        new.sandbox = request.sandbox;
        Ok(new)
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
        payment_method: or_legacy::<PaymentMethod>(order.payment_method, &order.legacy_payment_method)
            .as_str()
            .to_owned(),
        currency: order.currency.clone(),
        lines: backstop_lines(&order.order_number, Cents(order.total_cents), &order_lines),
        total_cents: order.total_cents,
        checkout_expires_at: None,
    })
    .map(|mut invoice| {
        invoice.sandbox = order.sandbox;
        invoice
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
    InvoiceReference::parse_required("reference", &request.reference)
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
                "status must be open, overdue, paid or void",
            )
        })?),
    };
    Ok(InvoiceFilter {
        status,
        order_id: platform::ids::parse_optional_uuid("orderId", request.order_id.as_deref())?,
    })
}

/// The invoice filter of a ListPayments call.
pub fn payment_invoice_filter(request: &pb::ListPaymentsRequest) -> Result<Option<Uuid>, ApiError> {
    platform::ids::parse_optional_uuid("invoiceId", request.invoice_id.as_deref())
}

impl From<Invoice> for pb::Invoice {
    fn from(invoice: Invoice) -> Self {
        pb::Invoice {
            id: invoice.id.to_string(),
            invoice_number: invoice.invoice_number,
            customer_id: invoice.customer_id.to_string(),
            order_id: invoice.order_id.to_string(),
            order_number: invoice.order_number,
            status: invoice.status as i32,
            legacy_status: invoice.status.as_str().to_owned(),
            previous_status: invoice.previous_status.unwrap_or_default() as i32,
            legacy_previous_status: invoice.previous_status.unwrap_or_default().as_str().to_owned(),
            payment_method: invoice.payment_method as i32,
            legacy_payment_method: invoice.payment_method.as_str().to_owned(),
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
            checkout: invoice.checkout.map(Into::into),
            addon_id: invoice.addon_id.map(|id| id.to_string()),
        }
    }
}

impl From<CheckoutSession> for pb::CheckoutSession {
    fn from(session: CheckoutSession) -> Self {
        let now = platform::time::now();
        pb::CheckoutSession {
            status: session.status_at(now).as_str().to_owned(),
            id: session.id,
            hosted_url: session.hosted_url,
            expires_at: Some(to_timestamp(session.expires_at)),
            amount_cents: session.amount.0,
            currency: session.currency,
            processor: session.processor.as_str().to_owned(),
            processor_url: session.processor_url,
        }
    }
}

impl From<CheckoutPage> for pb::CheckoutPage {
    fn from(page: CheckoutPage) -> Self {
        pb::CheckoutPage {
            purpose: page.session.subject.purpose().to_owned(),
            last_error: page.session.last_error.clone(),
            awaiting_confirmation: page.awaiting_confirmation,
            stablecoin: None,
            stablecoin_offered: false,
            session: Some(page.session.into()),
            order_number: page.order_number,
            invoice_number: page.invoice_number,
            lines: page
                .lines
                .into_iter()
                .map(|line| pb::InvoiceLine {
                    description: line.description,
                    quantity: line.quantity,
                    unit_price_cents: line.unit_price.0,
                    amount_cents: line.amount.0,
                })
                .collect(),
            total_cents: page.total.0,
            saved_cards: page
                .saved_cards
                .into_iter()
                .map(|card| pb::SavedCard {
                    token: card.token,
                    brand: card.brand,
                    last4: card.last4,
                    exp_month: card.exp_month,
                    exp_year: card.exp_year,
                })
                .collect(),
        }
    }
}

/// The payment source of a PayCheckout call: a typed card (validated) or a saved card's token.
pub fn payment_source(request: &pb::PayCheckoutRequest) -> Result<PaymentSource, ApiError> {
    match (&request.card, request.saved_card_token.as_deref()) {
        (Some(card), None) => Ok(PaymentSource::Card {
            card: TestCard::parse(&card.number, card.exp_month, card.exp_year, &card.cvc)?,
            save: request.save_card,
        }),
        (None, Some(token)) if !token.trim().is_empty() => Ok(PaymentSource::Saved {
            token: token.trim().to_owned(),
        }),
        _ => Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "card",
            "pay with either a card or a saved card",
        )),
    }
}

/// The PayCheckout / ConfirmCheckout answer.
pub fn pay_response(outcome: PayOutcome, page: CheckoutPage) -> pb::PayCheckoutResponse {
    let (decline_code, message) = match &outcome {
        PayOutcome::Paid => (None, "Payment received. Thank you.".to_owned()),
        PayOutcome::AlreadyPaid => (None, "This checkout has already been paid.".to_owned()),
        PayOutcome::Declined { code, message } => (Some((*code).to_owned()), message.clone()),
        PayOutcome::RequiresConfirmation => (None, "Your bank asks you to confirm this payment.".to_owned()),
        PayOutcome::Expired => (None, "This checkout link has expired.".to_owned()),
    };
    pb::PayCheckoutResponse {
        outcome: outcome.as_str().to_owned(),
        decline_code,
        message,
        page: Some(page.into()),
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
            rail: payment.rail as i32,
            legacy_rail: payment.rail.as_str().to_owned(),
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

/// A required non-empty text field of at most 200 characters.
pub fn required_text(value: &str, field: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > 200 {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            field,
            format!("{field} must be 1 to 200 characters"),
        ));
    }
    Ok(value.to_owned())
}

impl From<EnvelopeView> for pb::SpendEnvelope {
    fn from(view: EnvelopeView) -> Self {
        pb::SpendEnvelope {
            remaining_today_cents: view.remaining_today().map(|cents| cents.0),
            remaining_this_month_cents: view.remaining_this_month().map(|cents| cents.0),
            key_id: view.key_id,
            customer_id: view.customer_id.to_string(),
            configured: view.caps.is_some(),
            per_order_cap_cents: view.caps.and_then(|caps| caps.per_order).map(|cents| cents.0),
            daily_cap_cents: view.caps.and_then(|caps| caps.daily).map(|cents| cents.0),
            monthly_cap_cents: view.caps.and_then(|caps| caps.monthly).map(|cents| cents.0),
            spent_today_cents: view.committed.today.0,
            spent_this_month_cents: view.committed.this_month.0,
            day_resets_at: Some(to_timestamp(view.windows.day_end)),
            month_resets_at: Some(to_timestamp(view.windows.month_end)),
            without_envelope: view.without_envelope.as_str().to_owned(),
        }
    }
}

/// The OpenPickupCheckout request as the use case takes it.
pub fn new_pickup_checkout(
    request: pb::OpenPickupCheckoutRequest,
) -> Result<crate::service::NewPickupCheckout, ApiError> {
    let pay_by = match &request.pay_by {
        Some(timestamp) => Some(platform::time::from_timestamp(timestamp).ok_or_else(|| {
            ApiError::field(ErrorCode::InvalidRequest, "payBy", "payBy is not a valid time")
        })?),
        None => None,
    };
    Ok(crate::service::NewPickupCheckout {
        charge: crate::domain::checkout::PickupCharge {
            pickup_id: platform::ids::parse_uuid("pickupId", &request.pickup_id)?,
            order_id: platform::ids::parse_uuid("orderId", &request.order_id)?,
            order_number: request.order_number.trim().to_owned(),
            description: request.description.trim().to_owned(),
        },
        amount: Cents(request.amount_cents),
        currency: request.currency,
        key_id: request.key_id,
        pay_by,
        sandbox: request.sandbox,
    })
}

/// A refund as staff see it.
pub fn refund(refund: &crate::repo::refunds::Refund) -> pb::Refund {
    pb::Refund {
        id: refund.id.to_string(),
        payment_id: refund.payment_id.to_string(),
        invoice_id: refund.invoice_id.to_string(),
        invoice_number: refund.invoice_number.clone(),
        order_id: refund.order_id.to_string(),
        order_number: refund.order_number.clone(),
        rail: refund.rail as i32,
        amount_cents: refund.amount.0,
        currency: refund.currency.clone(),
        status: refund.status.clone(),
        reference: refund.reference(),
        paid_with: refund.paid_with.clone(),
        failure: refund.failure.clone().unwrap_or_default(),
        recorded_by: refund.recorded_by.clone().unwrap_or_default(),
        created_at: Some(platform::time::to_timestamp(refund.created_at)),
        completed_at: refund.completed_at.map(platform::time::to_timestamp),
    }
}

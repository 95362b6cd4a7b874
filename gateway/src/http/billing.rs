//! REST handlers of invoices and payments.

use crate::caller::Caller;
use crate::dto::billing::{
    InvoiceEnvelope, InvoiceList, InvoicesQuery, PaymentEnvelope, PaymentList, PaymentsQuery,
};
use crate::http::AppState;
use crate::http::error::ErrorResponse;
use crate::http::extract::{ApiQuery, Reference};
use crate::operations;
use axum::Json;
use axum::extract::State;

/// Lists the customer's invoices, newest first.
#[utoipa::path(get, path = "/invoices", tag = "billing", operation_id = "listInvoices", params(InvoicesQuery),
    responses((status = 200, description = "one page of invoices", body = InvoiceList)))]
pub async fn list_invoices(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<InvoicesQuery>,
) -> Result<Json<InvoiceList>, ErrorResponse> {
    Ok(Json(
        operations::list_invoices(&state.peers, &caller, query).await?,
    ))
}

/// Reads one invoice.
#[utoipa::path(get, path = "/invoices/{reference}", tag = "billing", operation_id = "getInvoice",
    params(("reference" = String, Path, description = "invoice UUID, invoice number (INV-…) or order UUID")),
    responses((status = 200, description = "the invoice", body = InvoiceEnvelope)))]
pub async fn get_invoice(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<InvoiceEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_invoice(&state.peers, &caller, reference).await?,
    ))
}

/// Lists the customer's payments, newest first.
#[utoipa::path(get, path = "/payments", tag = "billing", operation_id = "listPayments", params(PaymentsQuery),
    responses((status = 200, description = "one page of payments", body = PaymentList)))]
pub async fn list_payments(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<PaymentsQuery>,
) -> Result<Json<PaymentList>, ErrorResponse> {
    Ok(Json(
        operations::list_payments(&state.peers, &caller, query).await?,
    ))
}

/// Reads one payment state.
#[utoipa::path(get, path = "/payments/{reference}", tag = "billing", operation_id = "getPayment",
    params(("reference" = String, Path, description = "payment UUID")),
    responses((status = 200, description = "the payment", body = PaymentEnvelope)))]
pub async fn get_payment(
    State(state): State<AppState>,
    caller: Caller,
    Reference(reference): Reference,
) -> Result<Json<PaymentEnvelope>, ErrorResponse> {
    Ok(Json(
        operations::get_payment(&state.peers, &caller, reference).await?,
    ))
}

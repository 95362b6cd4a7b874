//! The gRPC adapter of `lab.payments.v1.PaymentsService`: principal checks, proto to domain,
//! the use case, domain back to proto.

use crate::convert;
use crate::domain::{BankPayment, NewInvoice};
use crate::service::PaymentsService;
use platform::grpc::principal;
use platform::principal::roles;
use proto::payments as pb;
use proto::payments::payments_service_server::PaymentsService as PaymentsApi;
use tonic::{Request, Response, Status};

/// Scope of the invoice reads.
pub const SCOPE_INVOICES_READ: &str = proto::scopes::INVOICES_READ;
/// Scope of the payment reads.
pub const SCOPE_PAYMENTS_READ: &str = proto::scopes::PAYMENTS_READ;

/// Serves the payments API over the use cases.
pub struct PaymentsGrpc {
    service: PaymentsService,
}

impl PaymentsGrpc {
    pub fn new(service: PaymentsService) -> Self {
        Self { service }
    }
}

#[tonic::async_trait]
impl PaymentsApi for PaymentsGrpc {
    async fn create_invoice(
        &self,
        request: Request<pb::CreateInvoiceRequest>,
    ) -> Result<Response<pb::CreateInvoiceResponse>, Status> {
        let caller = principal(&request)?;
        caller.require_service()?;
        let invoice = self
            .service
            .create_invoice(caller.customer()?, NewInvoice::try_from(request.into_inner())?)
            .await?;
        Ok(Response::new(pb::CreateInvoiceResponse {
            invoice: Some(invoice.into()),
        }))
    }

    async fn get_invoice(
        &self,
        request: Request<pb::GetInvoiceRequest>,
    ) -> Result<Response<pb::GetInvoiceResponse>, Status> {
        let caller = principal(&request)?;
        caller.require_scope(SCOPE_INVOICES_READ)?;
        let invoice = self
            .service
            .get_invoice(
                caller.customer()?,
                &convert::invoice_reference(request.get_ref())?,
            )
            .await?;
        Ok(Response::new(pb::GetInvoiceResponse {
            invoice: Some(invoice.into()),
        }))
    }

    async fn list_invoices(
        &self,
        request: Request<pb::ListInvoicesRequest>,
    ) -> Result<Response<pb::ListInvoicesResponse>, Status> {
        let caller = principal(&request)?;
        caller.require_scope(SCOPE_INVOICES_READ)?;
        let message = request.get_ref();
        let (filter, page) = (
            convert::invoice_filter(message)?,
            convert::page_request(message.limit, message.cursor.as_deref())?,
        );
        let page = self
            .service
            .list_invoices(caller.customer()?, &filter, &page)
            .await?;
        let invoices = page.items.into_iter().map(Into::into).collect();
        Ok(Response::new(pb::ListInvoicesResponse {
            invoices,
            next_cursor: page.next_cursor,
        }))
    }

    async fn get_payment(
        &self,
        request: Request<pb::GetPaymentRequest>,
    ) -> Result<Response<pb::GetPaymentResponse>, Status> {
        let caller = principal(&request)?;
        caller.require_scope(SCOPE_PAYMENTS_READ)?;
        let payment = self
            .service
            .get_payment(caller.customer()?, &request.get_ref().reference)
            .await?;
        Ok(Response::new(pb::GetPaymentResponse {
            payment: Some(payment.into()),
        }))
    }

    async fn list_payments(
        &self,
        request: Request<pb::ListPaymentsRequest>,
    ) -> Result<Response<pb::ListPaymentsResponse>, Status> {
        let caller = principal(&request)?;
        caller.require_scope(SCOPE_PAYMENTS_READ)?;
        let message = request.get_ref();
        let invoice_id = convert::payment_invoice_filter(message)?;
        let page = convert::page_request(message.limit, message.cursor.as_deref())?;
        let page = self
            .service
            .list_payments(caller.customer()?, invoice_id, &page)
            .await?;
        let payments = page.items.into_iter().map(Into::into).collect();
        Ok(Response::new(pb::ListPaymentsResponse {
            payments,
            next_cursor: page.next_cursor,
        }))
    }

    async fn record_bank_payment(
        &self,
        request: Request<pb::RecordBankPaymentRequest>,
    ) -> Result<Response<pb::RecordBankPaymentResponse>, Status> {
        principal(&request)?.require_role(roles::PAYMENTS_ADMIN)?;
        let recorded = self
            .service
            .record_bank_payment(BankPayment::try_from(request.into_inner())?)
            .await?;
        Ok(Response::new(pb::RecordBankPaymentResponse {
            payment: Some(recorded.payment.into()),
            invoice: Some(recorded.invoice.into()),
            already_recorded: recorded.already_recorded,
        }))
    }
}

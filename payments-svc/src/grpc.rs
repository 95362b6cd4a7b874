//! The gRPC adapter of `lab.payments.v1.PaymentsService`: who may call each rpc ([`ACCESS`],
//! enforced by the platform's access layer), then per rpc: proto to domain, the use case, domain
//! back to proto.

use crate::convert;
use crate::domain::{BankPayment, NewInvoice};
use crate::service::PaymentsService;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::pagination::PageRequest;
use platform::principal::roles;
use proto::payments as pb;
use proto::payments::payments_service_server::PaymentsService as PaymentsApi;
use proto::scopes::{INVOICES_READ, PAYMENTS_READ};
use tonic::{Request, Response, Status};

/// Who may call each rpc: orders-svc issues an order's invoice; API keys read with their scope;
/// operators with `payments.admin` record bank payments.
pub const ACCESS: AccessTable = &[
    ("CreateInvoice", access::services(&["orders-svc"])),
    ("GetInvoice", access::customer(&[INVOICES_READ])),
    ("ListInvoices", access::customer(&[INVOICES_READ])),
    ("GetPayment", access::customer(&[PAYMENTS_READ])),
    ("ListPayments", access::customer(&[PAYMENTS_READ])),
    ("RecordBankPayment", access::staff(roles::PAYMENTS_ADMIN)),
];

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
        let message = request.get_ref();
        let (filter, page) = (
            convert::invoice_filter(message)?,
            PageRequest::new(message.limit, message.cursor.clone())?,
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
        let message = request.get_ref();
        let invoice_id = convert::payment_invoice_filter(message)?;
        let page = PageRequest::new(message.limit, message.cursor.clone())?;
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
        let operator = principal(&request)?.subject;
        let recorded = self
            .service
            .record_bank_payment(&operator, BankPayment::try_from(request.into_inner())?)
            .await?;
        Ok(Response::new(pb::RecordBankPaymentResponse {
            payment: Some(recorded.payment.into()),
            invoice: Some(recorded.invoice.into()),
            already_recorded: recorded.already_recorded,
        }))
    }
}

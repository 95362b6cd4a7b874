//! The gRPC adapter of `lab.payments.v1.PaymentsService`: who may call each rpc ([`ACCESS`],
//! enforced by the platform's access layer), then per rpc: proto to domain, the use case, domain
//! back to proto.

use crate::convert;
use crate::domain::spend::{Caps, SpendKind};
use crate::domain::{BankPayment, InvoiceReference, NewInvoice};
use crate::service::PaymentsService;
use crate::service::SpendCommitment;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::money::Cents;
use platform::pagination::PageRequest;
use platform::principal::PrincipalKind;
use platform::principal::roles;
use proto::payments as pb;
use proto::payments::payments_service_server::PaymentsService as PaymentsApi;
use proto::scopes::{INVOICES_READ, PAYMENTS_READ, PAYMENTS_WRITE};
use tonic::{Request, Response, Status};

/// Who may call each rpc: orders-svc issues an order's invoice; API keys read with their scope;
/// operators with `payments.admin` record bank payments; the gateway serves the pay page and
/// passes processor webhooks on (the session id in the hosted URL, or the webhook signature,
/// authenticates the payer or the processor; the gateway's token only says who relays).
pub const ACCESS: AccessTable = &[
    ("CreateInvoice", access::services(&["orders-svc"])),
    ("GetInvoice", access::customer(&[INVOICES_READ])),
    ("ListInvoices", access::customer(&[INVOICES_READ])),
    ("GetPayment", access::customer(&[PAYMENTS_READ])),
    ("ListPayments", access::customer(&[PAYMENTS_READ])),
    ("RecordBankPayment", access::staff(roles::PAYMENTS_ADMIN)),
    // The stablecoin rail: orders-svc requests at order creation, API keys with payments:write
    // (re)prepare and submit, payments:read reads.
    (
        "RequestStablecoinPayment",
        access::customer(&[PAYMENTS_WRITE]).or_services(&["orders-svc"]),
    ),
    ("GetStablecoinPayment", access::customer(&[PAYMENTS_READ])),
    ("SubmitStablecoinTransaction", access::customer(&[PAYMENTS_WRITE])),
    ("CheckStablecoinRail", access::services(&["orders-svc"])),
    ("CheckoutStablecoin", access::services(&["gateway"])),
    ("GetCheckout", access::services(&["gateway"])),
    ("PayCheckout", access::services(&["gateway"])),
    ("ConfirmCheckout", access::services(&["gateway"])),
    ("HandleProcessorWebhook", access::services(&["gateway"])),
    ("PreparePayment", access::customer(&[PAYMENTS_WRITE])),
    ("CommitSpend", access::services(&["orders-svc"])),
    ("ReleaseSpend", access::services(&["orders-svc"])),
    ("SetSpendEnvelope", access::staff(roles::PAYMENTS_ADMIN)),
    (
        "GetSpendEnvelope",
        access::customer(&[PAYMENTS_READ]).or_staff(roles::PAYMENTS_ADMIN),
    ),
    // shipping-svc opens a door pickup's hosted payment, acting for the pickup's customer.
    ("OpenPickupCheckout", access::services(&["shipping-svc"])),
    // Refunds of cancelled orders: any operator lists them, payments.admin records the bank and
    // stablecoin ones staff carried out.
    ("ListRefunds", access::ANY_OPERATOR),
    ("RecordRefund", access::staff(roles::PAYMENTS_ADMIN)),
    // The sandbox simulation of payment outcomes (docs/sandbox.md).
    (
        "SimulatePayment",
        access::customer(&[proto::scopes::ORDERS_WRITE]).sandbox_only(),
    ),
];

/// Serves the payments API over the use cases.
pub struct PaymentsGrpc {
    service: PaymentsService,
    /// The stablecoin rail, when this deployment offers it.
    stablecoin: Option<crate::stablecoin::StablecoinRail>,
    /// Whether sandbox customers may use the stablecoin rail (development mode only: elsewhere
    /// the rail watches a real chain, where nothing is a sandbox).
    stablecoin_for_sandbox: bool,
    idempotency: platform::idempotency::IdempotencyStore,
}

impl PaymentsGrpc {
    pub fn new(service: PaymentsService) -> Self {
        Self {
            service,
            stablecoin: None,
            stablecoin_for_sandbox: true,
            idempotency: platform::idempotency::IdempotencyStore::new(crate::SCHEMA),
        }
    }

    /// Whether sandbox customers may use the stablecoin rail (`dev_mode`).
    pub fn with_stablecoin_for_sandbox(mut self, allowed: bool) -> Self {
        self.stablecoin_for_sandbox = allowed;
        self
    }

    /// The stablecoin rail as offered to a payer: none for a sandbox customer's checkout when
    /// sandbox customers may not use it.
    fn stablecoin_for(&self, sandbox: bool) -> Option<&crate::stablecoin::StablecoinRail> {
        self.stablecoin
            .as_ref()
            .filter(|_| !sandbox || self.stablecoin_for_sandbox)
    }

    /// Offers the stablecoin rail.
    pub fn with_stablecoin(mut self, rail: Option<crate::stablecoin::StablecoinRail>) -> Self {
        self.stablecoin = rail;
        self
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

    async fn simulate_payment(
        &self,
        request: Request<pb::SimulatePaymentRequest>,
    ) -> Result<Response<pb::SimulatePaymentResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.get_ref();
        let order_id = platform::ids::parse_uuid("orderId", &message.order_id)?;
        let simulation = match message.scenario.trim() {
            "card_declined" => self.service.simulate_card_declined(customer_id, order_id).await?,
            "stablecoin_reorg" => {
                crate::stablecoin::grpc::rail(self.stablecoin.as_ref())?
                    .simulate_reorg(customer_id, order_id)
                    .await?
            }
            _ => {
                return Err(platform::error::ApiError::field(
                    platform::error::ErrorCode::InvalidRequest,
                    "scenario",
                    "payments-svc plays the scenarios card_declined and stablecoin_reorg",
                )
                .into());
            }
        };
        Ok(Response::new(pb::SimulatePaymentResponse {
            simulation: Some(simulation),
        }))
    }

    async fn request_stablecoin_payment(
        &self,
        request: Request<pb::RequestStablecoinPaymentRequest>,
    ) -> Result<Response<pb::StablecoinPaymentResponse>, Status> {
        crate::stablecoin::grpc::request_payment(self.stablecoin.as_ref(), request).await
    }

    async fn get_stablecoin_payment(
        &self,
        request: Request<pb::GetStablecoinPaymentRequest>,
    ) -> Result<Response<pb::StablecoinPaymentResponse>, Status> {
        crate::stablecoin::grpc::get_payment(self.stablecoin.as_ref(), request).await
    }

    async fn submit_stablecoin_transaction(
        &self,
        request: Request<pb::SubmitStablecoinTransactionRequest>,
    ) -> Result<Response<pb::StablecoinPaymentResponse>, Status> {
        crate::stablecoin::grpc::submit(self.stablecoin.as_ref(), &self.idempotency, request).await
    }

    async fn check_stablecoin_rail(
        &self,
        request: Request<pb::CheckStablecoinRailRequest>,
    ) -> Result<Response<pb::CheckStablecoinRailResponse>, Status> {
        if request.get_ref().sandbox && self.stablecoin.is_some() && !self.stablecoin_for_sandbox {
            return Err(platform::error::ApiError::new(
                platform::error::ErrorCode::PaymentMethodUnavailable,
                "the stablecoin rail settles on a real chain and is not offered to sandbox customers outside development mode: pay by card (test cards) or bank invoice (the demo account)",
            )
            .with_details(serde_json::json!({
                "field": "paymentMethod",
                "availableMethods": [
                    crate::domain::PaymentMethod::BankInvoice.as_str(),
                    crate::domain::PaymentMethod::CardCheckout.as_str()
                ]
            }))
            .into());
        }
        crate::stablecoin::grpc::check_rail(self.stablecoin.as_ref(), request)
    }

    async fn get_checkout(
        &self,
        request: Request<pb::GetCheckoutRequest>,
    ) -> Result<Response<pb::GetCheckoutResponse>, Status> {
        let page = self.service.checkout_page(&request.get_ref().session_id).await?;
        let (customer, invoice) = (page.session.customer_id, page.session.invoice_id());
        let sandbox = page.session.processor == crate::domain::checkout::ProcessorKind::Sandbox;
        let mut page = pb::CheckoutPage::from(page);
        // A door pickup is paid by card only: the stablecoin rail pays invoices.
        if let Some(invoice) = invoice {
            let rail = self.stablecoin_for(sandbox);
            page.stablecoin = crate::stablecoin::grpc::of_checkout(rail, customer, invoice).await;
            page.stablecoin_offered = rail.is_some();
        }
        Ok(Response::new(pb::GetCheckoutResponse { page: Some(page) }))
    }

    async fn checkout_stablecoin(
        &self,
        request: Request<pb::CheckoutStablecoinRequest>,
    ) -> Result<Response<pb::CheckoutStablecoinResponse>, Status> {
        let message = request.into_inner();
        let page = self.service.checkout_page(&message.session_id).await?;
        let customer = page.session.customer_id;
        let sandbox = page.session.processor == crate::domain::checkout::ProcessorKind::Sandbox;
        let Some(invoice) = page.session.invoice_id() else {
            return Err(platform::error::ApiError::new(
                platform::error::ErrorCode::Conflict,
                "a door pickup is paid by card; the stablecoin rail pays order invoices",
            )
            .into());
        };
        if message.expected_payer_address.is_some() && !page.session.is_payable(platform::time::now()) {
            return Err(platform::error::ApiError::new(
                platform::error::ErrorCode::Conflict,
                "this checkout can no longer be paid",
            )
            .into());
        }
        crate::stablecoin::grpc::checkout_action(
            self.stablecoin_for(sandbox),
            customer,
            invoice,
            message.expected_payer_address.as_deref(),
            message.transaction_hash.as_deref(),
        )
        .await?;
        let page = self.service.checkout_page(&message.session_id).await?;
        let mut page = pb::CheckoutPage::from(page);
        let rail = self.stablecoin_for(sandbox);
        page.stablecoin = crate::stablecoin::grpc::of_checkout(rail, customer, invoice).await;
        page.stablecoin_offered = rail.is_some();
        Ok(Response::new(pb::CheckoutStablecoinResponse { page: Some(page) }))
    }

    async fn pay_checkout(
        &self,
        request: Request<pb::PayCheckoutRequest>,
    ) -> Result<Response<pb::PayCheckoutResponse>, Status> {
        let source = convert::payment_source(request.get_ref())?;
        let (outcome, page) = self
            .service
            .pay_checkout(&request.get_ref().session_id, source)
            .await?;
        Ok(Response::new(convert::pay_response(outcome, page)))
    }

    async fn confirm_checkout(
        &self,
        request: Request<pb::ConfirmCheckoutRequest>,
    ) -> Result<Response<pb::PayCheckoutResponse>, Status> {
        let message = request.get_ref();
        let (outcome, page) = self
            .service
            .confirm_checkout(&message.session_id, message.approve)
            .await?;
        Ok(Response::new(convert::pay_response(outcome, page)))
    }

    async fn handle_processor_webhook(
        &self,
        request: Request<pb::HandleProcessorWebhookRequest>,
    ) -> Result<Response<pb::HandleProcessorWebhookResponse>, Status> {
        let message = request.get_ref();
        let outcome = self
            .service
            .handle_processor_webhook(&message.processor, &message.payload, &message.signature)
            .await?;
        Ok(Response::new(pb::HandleProcessorWebhookResponse {
            outcome: outcome.to_owned(),
        }))
    }

    async fn prepare_payment(
        &self,
        request: Request<pb::PreparePaymentRequest>,
    ) -> Result<Response<pb::PreparePaymentResponse>, Status> {
        let caller = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let reference =
            InvoiceReference::parse_required("orderReference", &request.get_ref().order_reference)?;
        let customer = caller.customer()?;
        let mut response = self
            .service
            .prepare_payment(customer, &caller.subject, key, reference)
            .await
            .into_response(|prepared| {
                let stablecoin =
                    prepared.invoice.payment_method == crate::domain::PaymentMethod::ChainStablecoin;
                (
                    stablecoin.then_some(prepared.invoice.id),
                    pb::PreparePaymentResponse {
                        state: prepared.state().to_owned(),
                        invoice: Some(prepared.invoice.into()),
                        stablecoin: None,
                    },
                )
            })?;
        // The stablecoin rail: the order's payment request, renewed when it expired unpaid
        // (idempotent per order by itself: the same open request is answered every time).
        let (stablecoin_invoice, answer) = response.get_mut();
        if let Some(invoice_id) = *stablecoin_invoice {
            answer.stablecoin =
                Some(crate::stablecoin::grpc::prepare(self.stablecoin.as_ref(), customer, invoice_id).await?);
        }
        let (metadata, (_, answer), extensions) = response.into_parts();
        Ok(Response::from_parts(metadata, answer, extensions))
    }

    async fn commit_spend(
        &self,
        request: Request<pb::CommitSpendRequest>,
    ) -> Result<Response<pb::CommitSpendResponse>, Status> {
        let caller = principal(&request)?;
        let message = request.into_inner();
        let commitment = SpendCommitment {
            customer_id: caller.customer()?,
            key_id: message.key_id,
            kind: SpendKind::parse(&message.kind)?,
            subject_id: message.subject_id,
            amount: Cents(message.amount_cents),
        };
        let already_committed = self.service.commit_spend(&commitment).await?;
        Ok(Response::new(pb::CommitSpendResponse { already_committed }))
    }

    async fn release_spend(
        &self,
        request: Request<pb::ReleaseSpendRequest>,
    ) -> Result<Response<pb::ReleaseSpendResponse>, Status> {
        let caller = principal(&request)?;
        let message = request.get_ref();
        let released = self
            .service
            .release_spend(
                caller.customer()?,
                SpendKind::parse(&message.kind)?,
                &message.subject_id,
            )
            .await?;
        Ok(Response::new(pb::ReleaseSpendResponse { released }))
    }

    async fn set_spend_envelope(
        &self,
        request: Request<pb::SetSpendEnvelopeRequest>,
    ) -> Result<Response<pb::SpendEnvelopeResponse>, Status> {
        let operator = principal(&request)?.subject;
        let message = request.into_inner();
        let customer_id = platform::ids::parse_uuid("customerId", &message.customer_id)?;
        let key_id = convert::required_text(&message.key_id, "keyId")?;
        let caps = Caps::parse(
            message.per_order_cap_cents,
            message.daily_cap_cents,
            message.monthly_cap_cents,
        )?;
        let view = self
            .service
            .set_envelope(&operator, customer_id, &key_id, caps)
            .await?;
        Ok(Response::new(pb::SpendEnvelopeResponse {
            envelope: Some(view.into()),
        }))
    }

    async fn open_pickup_checkout(
        &self,
        request: Request<pb::OpenPickupCheckoutRequest>,
    ) -> Result<Response<pb::OpenPickupCheckoutResponse>, Status> {
        let caller = principal(&request)?;
        let customer_id = caller.customer()?;
        let new = convert::new_pickup_checkout(request.into_inner())?;
        let session = self.service.open_pickup_checkout(customer_id, new).await?;
        Ok(Response::new(pb::OpenPickupCheckoutResponse {
            session: Some(session.into()),
        }))
    }

    async fn get_spend_envelope(
        &self,
        request: Request<pb::GetSpendEnvelopeRequest>,
    ) -> Result<Response<pb::SpendEnvelopeResponse>, Status> {
        let caller = principal(&request)?;
        let message = request.get_ref();
        let (customer_id, key_id) = match caller.kind {
            PrincipalKind::Staff => (
                platform::ids::parse_uuid("customerId", message.customer_id.as_deref().unwrap_or_default())?,
                convert::required_text(message.key_id.as_deref().unwrap_or_default(), "keyId")?,
            ),
            _ => (caller.customer()?, caller.subject.clone()),
        };
        let view = self.service.envelope(customer_id, &key_id).await?;
        Ok(Response::new(pb::SpendEnvelopeResponse {
            envelope: Some(view.into()),
        }))
    }

    async fn list_refunds(
        &self,
        request: Request<pb::ListRefundsRequest>,
    ) -> Result<Response<pb::ListRefundsResponse>, Status> {
        let message = request.get_ref();
        let refunds = self
            .service
            .list_refunds(message.status.as_deref(), message.limit)
            .await?;
        Ok(Response::new(pb::ListRefundsResponse {
            refunds: refunds.iter().map(convert::refund).collect(),
        }))
    }

    async fn record_refund(
        &self,
        request: Request<pb::RecordRefundRequest>,
    ) -> Result<Response<pb::RecordRefundResponse>, Status> {
        let operator = principal(&request)?.subject;
        let message = request.get_ref();
        let recorded = self
            .service
            .record_refund(&operator, &message.refund_id, &message.reference)
            .await?;
        Ok(Response::new(pb::RecordRefundResponse {
            refund: Some(convert::refund(&recorded.refund)),
            already_recorded: recorded.already_recorded,
        }))
    }
}

//! Small in-test gRPC servers standing in for catalog-svc, orders-svc and payments-svc. They
//! verify the principal token exactly as the real services do (the platform access layer, each
//! with its own audience and the scopes the real service requires) and
//! record every call: the principal, the idempotency key, the traceparent and the encoded
//! request message they received. Their answers are scripted by the input (reference
//! `missing` → 404, `conflict` → 409, `slow-<ms>` → late, …). The webhooks stand-in is in `webhook_fake.rs`.

use crate::fixtures::{sample_order, scripted_failure, ts};
use platform::access::{self, AccessTable};
use platform::error::{ApiError, ErrorCode};
use platform::principal::{Principal, roles};
use platform::tokens::{TokenVerifier, TrustedKeys};
use proto::catalog::catalog_service_server::{CatalogService, CatalogServiceServer};
use proto::orders::orders_service_server::{OrdersService, OrdersServiceServer};
use proto::payments::payments_service_server::{PaymentsService, PaymentsServiceServer};
use proto::scopes::*;
use proto::webhooks::webhooks_service_server::WebhooksServiceServer;
use proto::{catalog, orders, payments};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

/// One call a fake received.
#[derive(Clone, Debug)]
pub struct Call {
    pub rpc: &'static str,
    pub principal: Principal,
    pub idempotency_key: Option<String>,
    pub traceparent: Option<String>,
    /// The request message, protobuf-encoded (decode it with the rpc's request type).
    pub message: Vec<u8>,
}

/// The running fakes: one server hosting the three services and gRPC health.
pub struct FakeMesh {
    pub addr: SocketAddr,
    pub calls: Arc<Mutex<Vec<Call>>>,
    pub health: HealthReporter,
    _shutdown: tokio_util::sync::DropGuard,
}

/// The access tables of the real services (their `grpc::ACCESS`), for the doubles.
const CATALOG: AccessTable = &[
    ("ListCatalogItems", access::customer(&[CATALOG_READ])),
    ("CreateQuote", access::customer(&[QUOTES_WRITE])),
    ("GetQuote", access::customer(&[QUOTES_WRITE])),
];
const ORDERS: AccessTable = &[
    ("CreateOrder", access::customer(&[ORDERS_WRITE])),
    ("GetOrder", access::customer(&[ORDERS_READ])),
    ("GetOrderView", access::customer(&[ORDERS_READ])),
    ("ListOrders", access::customer(&[ORDERS_READ])),
];
const PAYMENTS: AccessTable = &[
    ("GetInvoice", access::customer(&[INVOICES_READ])),
    ("ListInvoices", access::customer(&[INVOICES_READ])),
    ("GetPayment", access::customer(&[PAYMENTS_READ])),
    ("ListPayments", access::customer(&[PAYMENTS_READ])),
];
const WEBHOOKS: AccessTable = &[
    ("CreateEndpoint", access::customer(&[WEBHOOKS_WRITE])),
    ("ListEndpoints", access::customer(&[WEBHOOKS_READ])),
    ("DeleteEndpoint", access::customer(&[WEBHOOKS_WRITE])),
    ("RotateSecret", access::customer(&[WEBHOOKS_WRITE])),
    ("SendTestDelivery", access::customer(&[WEBHOOKS_WRITE])),
    (
        "ListDeliveries",
        access::customer(&[WEBHOOKS_READ]).or_staff(roles::WEBHOOKS_ADMIN),
    ),
];

fn verifier(audience: &str) -> TokenVerifier {
    TokenVerifier::new(audience, TrustedKeys::development())
}

impl FakeMesh {
    pub async fn start() -> Self {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let fake = Fake {
            calls: Arc::clone(&calls),
        };
        let (health, health_service) = tonic_health::server::health_reporter();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = platform::grpc::server_builder()
            .add_service(health_service)
            .add_service(access::guarded(
                CatalogServiceServer::new(fake.clone()),
                verifier("catalog-svc"),
                CATALOG,
            ))
            .add_service(access::guarded(
                OrdersServiceServer::new(fake.clone()),
                verifier("orders-svc"),
                ORDERS,
            ))
            .add_service(access::guarded(
                PaymentsServiceServer::new(fake.clone()),
                verifier("payments-svc"),
                PAYMENTS,
            ))
            .add_service(access::guarded(
                WebhooksServiceServer::new(fake),
                verifier("webhooks-svc"),
                WEBHOOKS,
            ));
        let shutdown = CancellationToken::new();
        tokio::spawn(platform::grpc::serve(router, listener, shutdown.clone()));
        Self {
            addr,
            calls,
            health,
            _shutdown: shutdown.drop_guard(),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The calls of one rpc.
    pub fn calls_of(&self, rpc: &str) -> Vec<Call> {
        self.calls().into_iter().filter(|call| call.rpc == rpc).collect()
    }

    pub async fn set_serving(&self, serving: bool) {
        let status = if serving {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        self.health.set_service_status("", status).await;
    }
}

#[derive(Clone)]
pub struct Fake {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Fake {
    pub fn record<T: prost::Message>(&self, rpc: &'static str, request: &Request<T>) -> Result<(), Status> {
        let principal = platform::grpc::principal(request)?;
        let text = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let call = Call {
            rpc,
            principal,
            idempotency_key: text("idempotency-key"),
            traceparent: text("traceparent"),
            message: request.get_ref().encode_to_vec(),
        };
        self.calls.lock().unwrap().push(call);
        Ok(())
    }
}

#[tonic::async_trait]
impl CatalogService for Fake {
    async fn list_catalog_items(
        &self,
        request: Request<catalog::ListCatalogItemsRequest>,
    ) -> Result<Response<catalog::ListCatalogItemsResponse>, Status> {
        self.record("ListCatalogItems", &request)?;
        let item = catalog::CatalogItem {
            id: "hplc-purity".into(),
            kind: "test".into(),
            name: "HPLC purity".into(),
            price_cents: 12_500,
            category_ids: vec!["peptides".into()],
            ..Default::default()
        };
        let category = catalog::Category {
            id: "peptides".into(),
            name: "Peptides".into(),
            ..Default::default()
        };
        Ok(Response::new(catalog::ListCatalogItemsResponse {
            catalog_revision: "rev-1".into(),
            items: vec![item],
            next_cursor: (request.get_ref().limit == Some(1)).then(|| "cursor-2".to_owned()),
            categories: vec![category],
            matrices: vec![catalog::Matrix {
                id: "powder".into(),
                ..Default::default()
            }],
            turnarounds: vec![],
        }))
    }

    async fn create_quote(
        &self,
        request: Request<catalog::CreateQuoteRequest>,
    ) -> Result<Response<catalog::CreateQuoteResponse>, Status> {
        self.record("CreateQuote", &request)?;
        if request.get_ref().category_id == "nope" {
            return Err(ApiError::field(ErrorCode::UnknownCategory, "categoryId", "unknown category").into());
        }
        let quote = catalog::Quote {
            id: "5f0c6f3e-0000-4000-8000-000000000001".into(),
            catalog_revision: "rev-1".into(),
            category_id: request.get_ref().category_id.clone(),
            turnaround: "standard".into(),
            total_cents: 12_500,
            currency: "USD".into(),
            created_at: ts(1_784_000_000),
            expires_at: ts(1_784_000_900),
            ..Default::default()
        };
        Ok(Response::new(catalog::CreateQuoteResponse { quote: Some(quote) }))
    }

    async fn get_quote(
        &self,
        _: Request<catalog::GetQuoteRequest>,
    ) -> Result<Response<catalog::GetQuoteResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn import_catalog(
        &self,
        _: Request<catalog::ImportCatalogRequest>,
    ) -> Result<Response<catalog::ImportCatalogResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }
}

/// The order a scripted reference answers: `slow-<ms>` answers after that many milliseconds
/// (timeouts, drain, concurrency), the scripted failures fail, anything else is a sample order.
async fn scripted_order(reference: &str) -> Result<orders::Order, Status> {
    if let Some(millis) = reference
        .strip_prefix("slow-")
        .and_then(|millis| millis.parse().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
    }
    if let Some(failure) = scripted_failure(reference) {
        return Err(failure);
    }
    Ok(sample_order(reference, ""))
}

#[tonic::async_trait]
impl OrdersService for Fake {
    async fn create_order(
        &self,
        request: Request<orders::CreateOrderRequest>,
    ) -> Result<Response<orders::CreateOrderResponse>, Status> {
        self.record("CreateOrder", &request)?;
        let key = platform::grpc::idempotency_key(&request)?;
        let principal = platform::grpc::principal(&request)?;
        let customer = principal.customer_id.map(|id| id.to_string()).unwrap_or_default();
        let order = sample_order("0b7e8f52-0000-4000-8000-000000000002", &customer);
        let mut response = Response::new(orders::CreateOrderResponse {
            order: Some(order),
            view: None,
        });
        if key.starts_with("replay") {
            platform::grpc::mark_replayed(&mut response);
        }
        Ok(response)
    }

    async fn get_order(
        &self,
        request: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::GetOrderResponse>, Status> {
        self.record("GetOrder", &request)?;
        let order = scripted_order(&request.get_ref().reference).await?;
        Ok(Response::new(orders::GetOrderResponse { order: Some(order) }))
    }

    async fn get_data_release(
        &self,
        request: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::DataRelease>, Status> {
        self.record("GetDataRelease", &request)?;
        let order = scripted_order(&request.get_ref().reference).await?;
        Ok(Response::new(orders::DataRelease {
            order_id: order.id,
            order_number: order.order_number,
            publish_raw_data: order.publish_raw_data,
        }))
    }

    async fn get_order_view(
        &self,
        request: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::GetOrderViewResponse>, Status> {
        self.record("GetOrderView", &request)?;
        let order = scripted_order(&request.get_ref().reference).await?;
        let order_id = order.id.clone();
        // The REST shape, as orders-svc's read model renders it.
        let rendered =
            gateway::dto::orders::Order::try_from(order).map_err(|error| Status::internal(error.message))?;
        Ok(Response::new(orders::GetOrderViewResponse {
            json: serde_json::to_vec(&rendered).map_err(|error| Status::internal(error.to_string()))?,
            shipping_unknown: false,
            shipping_offset: 0,
            order_id,
        }))
    }

    async fn list_orders(
        &self,
        request: Request<orders::ListOrdersRequest>,
    ) -> Result<Response<orders::ListOrdersResponse>, Status> {
        self.record("ListOrders", &request)?;
        let orders = vec![sample_order("0b7e8f52-0000-4000-8000-000000000002", "")];
        Ok(Response::new(orders::ListOrdersResponse {
            orders,
            next_cursor: None,
        }))
    }

    async fn receive_samples(
        &self,
        _: Request<orders::ReceiveSamplesRequest>,
    ) -> Result<Response<orders::ReceiveSamplesResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn start_testing(
        &self,
        _: Request<orders::StartTestingRequest>,
    ) -> Result<Response<orders::StartTestingResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn get_lab_order(
        &self,
        _: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::GetOrderResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn list_samples(
        &self,
        _: Request<orders::ListSamplesRequest>,
    ) -> Result<Response<orders::ListSamplesResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn get_eta(
        &self,
        _: Request<orders::GetOrderRequest>,
    ) -> Result<Response<orders::GetEtaResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn get_custody(
        &self,
        _: Request<orders::GetCustodyRequest>,
    ) -> Result<Response<orders::GetCustodyResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn dispose_sample(
        &self,
        _: Request<orders::DisposeSampleRequest>,
    ) -> Result<Response<orders::DisposeSampleResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn find_sandbox_order(
        &self,
        _: Request<orders::FindSandboxOrderRequest>,
    ) -> Result<Response<orders::FindSandboxOrderResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn simulate_lab_step(
        &self,
        _: Request<orders::SimulateLabStepRequest>,
    ) -> Result<Response<orders::SimulateLabStepResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn request_cancellation(
        &self,
        _: Request<orders::RequestCancellationRequest>,
    ) -> Result<Response<orders::RequestCancellationResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn request_addon(
        &self,
        _: Request<orders::RequestAddonRequest>,
    ) -> Result<Response<orders::RequestAddonResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn list_cancel_requests(
        &self,
        _: Request<orders::ListCancelRequestsRequest>,
    ) -> Result<Response<orders::ListCancelRequestsResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }

    async fn decide_cancel_request(
        &self,
        _: Request<orders::DecideCancelRequestRequest>,
    ) -> Result<Response<orders::DecideCancelRequestResponse>, Status> {
        Err(Status::unimplemented("not faked in the gateway tests"))
    }
}

#[tonic::async_trait]
impl PaymentsService for Fake {
    async fn create_invoice(
        &self,
        _: Request<payments::CreateInvoiceRequest>,
    ) -> Result<Response<payments::CreateInvoiceResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn get_invoice(
        &self,
        request: Request<payments::GetInvoiceRequest>,
    ) -> Result<Response<payments::GetInvoiceResponse>, Status> {
        self.record("GetInvoice", &request)?;
        if let Some(failure) = scripted_failure(&request.get_ref().reference) {
            return Err(failure);
        }
        let invoice = payments::Invoice {
            id: "inv-1".into(),
            invoice_number: request.get_ref().reference.clone(),
            status: proto::common::InvoiceStatus::Open as i32,
            total_cents: 12_500,
            amount_due_cents: 12_500,
            lines: vec![payments::InvoiceLine {
                description: "HPLC".into(),
                quantity: 1,
                unit_price_cents: 12_500,
                amount_cents: 12_500,
            }],
            issued_at: ts(1_784_000_000),
            ..Default::default()
        };
        Ok(Response::new(payments::GetInvoiceResponse {
            invoice: Some(invoice),
        }))
    }

    async fn list_invoices(
        &self,
        request: Request<payments::ListInvoicesRequest>,
    ) -> Result<Response<payments::ListInvoicesResponse>, Status> {
        self.record("ListInvoices", &request)?;
        Ok(Response::new(payments::ListInvoicesResponse {
            invoices: vec![],
            next_cursor: Some("page-2".into()),
        }))
    }

    async fn get_payment(
        &self,
        request: Request<payments::GetPaymentRequest>,
    ) -> Result<Response<payments::GetPaymentResponse>, Status> {
        self.record("GetPayment", &request)?;
        if let Some(failure) = scripted_failure(&request.get_ref().reference) {
            return Err(failure);
        }
        let payment = payments::Payment {
            id: request.get_ref().reference.clone(),
            rail: proto::common::PaymentMethod::BankInvoice as i32,
            status: "succeeded".into(),
            amount_cents: 12_500,
            currency: "USD".into(),
            received_at: ts(1_784_100_000),
            created_at: ts(1_784_100_000),
            ..Default::default()
        };
        Ok(Response::new(payments::GetPaymentResponse {
            payment: Some(payment),
        }))
    }

    async fn list_payments(
        &self,
        request: Request<payments::ListPaymentsRequest>,
    ) -> Result<Response<payments::ListPaymentsResponse>, Status> {
        self.record("ListPayments", &request)?;
        Ok(Response::new(payments::ListPaymentsResponse {
            payments: vec![],
            next_cursor: None,
        }))
    }

    async fn record_bank_payment(
        &self,
        _: Request<payments::RecordBankPaymentRequest>,
    ) -> Result<Response<payments::RecordBankPaymentResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn request_stablecoin_payment(
        &self,
        _: Request<payments::RequestStablecoinPaymentRequest>,
    ) -> Result<Response<payments::StablecoinPaymentResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn get_stablecoin_payment(
        &self,
        _: Request<payments::GetStablecoinPaymentRequest>,
    ) -> Result<Response<payments::StablecoinPaymentResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn submit_stablecoin_transaction(
        &self,
        _: Request<payments::SubmitStablecoinTransactionRequest>,
    ) -> Result<Response<payments::StablecoinPaymentResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn checkout_stablecoin(
        &self,
        _: Request<payments::CheckoutStablecoinRequest>,
    ) -> Result<Response<payments::CheckoutStablecoinResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn check_stablecoin_rail(
        &self,
        _: Request<payments::CheckStablecoinRailRequest>,
    ) -> Result<Response<payments::CheckStablecoinRailResponse>, Status> {
        Err(Status::unimplemented("not faked"))
    }

    async fn get_checkout(
        &self,
        _: Request<payments::GetCheckoutRequest>,
    ) -> Result<Response<payments::GetCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn pay_checkout(
        &self,
        _: Request<payments::PayCheckoutRequest>,
    ) -> Result<Response<payments::PayCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn confirm_checkout(
        &self,
        _: Request<payments::ConfirmCheckoutRequest>,
    ) -> Result<Response<payments::PayCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn handle_processor_webhook(
        &self,
        _: Request<payments::HandleProcessorWebhookRequest>,
    ) -> Result<Response<payments::HandleProcessorWebhookResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn prepare_payment(
        &self,
        _: Request<payments::PreparePaymentRequest>,
    ) -> Result<Response<payments::PreparePaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }
    async fn commit_spend(
        &self,
        _: Request<payments::CommitSpendRequest>,
    ) -> Result<Response<payments::CommitSpendResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn release_spend(
        &self,
        _: Request<payments::ReleaseSpendRequest>,
    ) -> Result<Response<payments::ReleaseSpendResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn list_refunds(
        &self,
        _: Request<proto::payments::ListRefundsRequest>,
    ) -> Result<Response<proto::payments::ListRefundsResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn simulate_payment(
        &self,
        _: Request<proto::payments::SimulatePaymentRequest>,
    ) -> Result<Response<proto::payments::SimulatePaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn record_refund(
        &self,
        _: Request<proto::payments::RecordRefundRequest>,
    ) -> Result<Response<proto::payments::RecordRefundResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn open_pickup_checkout(
        &self,
        _: Request<payments::OpenPickupCheckoutRequest>,
    ) -> Result<Response<payments::OpenPickupCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn set_spend_envelope(
        &self,
        _: Request<payments::SetSpendEnvelopeRequest>,
    ) -> Result<Response<payments::SpendEnvelopeResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_spend_envelope(
        &self,
        _: Request<payments::GetSpendEnvelopeRequest>,
    ) -> Result<Response<payments::SpendEnvelopeResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }
}

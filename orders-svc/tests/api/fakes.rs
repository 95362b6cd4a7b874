//! In-test doubles of the internal peers orders-svc calls: catalog-svc (GetQuote),
//! payments-svc (CreateInvoice) and shipping-svc (PrepareLabel). They verify the service token like the real services (a
//! `service` principal acting for the quote's or order's customer) and answer fixed data.

use platform::error::{ApiError, ErrorCode};
use platform::principal::{Principal, PrincipalKind};
use platform::tokens::{TokenVerifier, TrustedKeys};
use proto::catalog::catalog_service_server::{CatalogService, CatalogServiceServer};
use proto::catalog::*;
use proto::payments::payments_service_server::{PaymentsService, PaymentsServiceServer};
use proto::payments::*;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};
use uuid::Uuid;

fn service_principal<T>(request: &Request<T>, verifier: &TokenVerifier) -> Result<Principal, Status> {
    let token = request
        .metadata()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| Status::unauthenticated("no token"))?;
    let principal = verifier.verify(token).map_err(Status::from)?;
    if principal.kind != PrincipalKind::Service || principal.subject != "orders-svc" {
        return Err(Status::permission_denied("only orders-svc calls this double"));
    }
    Ok(principal)
}

/// State of the catalog double.
#[derive(Default)]
pub struct CatalogState {
    pub quotes: Mutex<HashMap<String, Quote>>,
    pub get_quote_calls: AtomicUsize,
    pub unavailable: AtomicBool,
    /// The catalog revisions ListCatalogItems was asked for.
    pub listed_revisions: Mutex<Vec<Option<String>>>,
}

/// The catalog revision of `data::sample_quote`, the only one the double lists.
pub const CATALOG_REVISION: &str = "rev-2026-07-01";

/// The items of [`CATALOG_REVISION`]: the quote's tests and bundle, and add-on candidates.
fn catalog_items() -> Vec<CatalogItem> {
    let test = |id: &str, price_cents: i64, categories: &[&str]| CatalogItem {
        id: id.into(),
        kind: "test".into(),
        name: id.replace('-', " "),
        category_ids: categories.iter().map(|c| (*c).to_owned()).collect(),
        price_cents,
        ..Default::default()
    };
    vec![
        test("hplc-purity", 15_000, &["peptides"]),
        test("ms-identity", 4_500, &["peptides"]),
        test("nmr-identity", 4_500, &["peptides"]),
        test("endotoxin", 7_500, &["peptides"]),
        test("heavy-metals", 9_000, &["peptides", "cannabis"]),
        test("terpenes", 8_000, &["cannabis"]),
        CatalogItem {
            kind: "bundle".into(),
            test_ids: vec!["ms-identity".into(), "nmr-identity".into()],
            ..test("identity-pack", 9_000, &["peptides"])
        },
    ]
}

#[derive(Clone)]
struct FakeCatalog {
    state: Arc<CatalogState>,
    verifier: TokenVerifier,
}

#[tonic::async_trait]
impl CatalogService for FakeCatalog {
    async fn list_catalog_items(
        &self,
        request: Request<ListCatalogItemsRequest>,
    ) -> Result<Response<ListCatalogItemsResponse>, Status> {
        service_principal(&request, &self.verifier)?;
        let revision = request.get_ref().catalog_revision.clone();
        self.state.listed_revisions.lock().unwrap().push(revision.clone());
        if revision.as_deref() != Some(CATALOG_REVISION) {
            return Err(ApiError::new(ErrorCode::InvalidRequest, "unknown catalog revision").into());
        }
        Ok(Response::new(ListCatalogItemsResponse {
            catalog_revision: CATALOG_REVISION.into(),
            items: catalog_items(),
            ..Default::default()
        }))
    }

    async fn create_quote(
        &self,
        _: Request<CreateQuoteRequest>,
    ) -> Result<Response<CreateQuoteResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_quote(
        &self,
        request: Request<GetQuoteRequest>,
    ) -> Result<Response<GetQuoteResponse>, Status> {
        self.state.get_quote_calls.fetch_add(1, Ordering::SeqCst);
        if self.state.unavailable.load(Ordering::SeqCst) {
            return Err(Status::unavailable("catalog double is down"));
        }
        let principal = service_principal(&request, &self.verifier)?;
        let customer = principal.customer_id.map(|id| id.to_string()).unwrap_or_default();
        let quote = self
            .state
            .quotes
            .lock()
            .unwrap()
            .get(&request.get_ref().quote_id)
            .cloned();
        match quote {
            Some(quote) if quote.customer_id == customer => {
                Ok(Response::new(GetQuoteResponse { quote: Some(quote) }))
            }
            _ => Err(ApiError::new(ErrorCode::QuoteNotFound, "quote not found").into()),
        }
    }

    async fn import_catalog(
        &self,
        _: Request<ImportCatalogRequest>,
    ) -> Result<Response<ImportCatalogResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }
}

/// Invoice numbers are unique across every double of the test binary.
static NEXT_INVOICE: AtomicUsize = AtomicUsize::new(1);

/// State of the payments double.
#[derive(Default)]
pub struct PaymentsState {
    /// Invoices by order id (CreateInvoice is idempotent per order).
    pub invoices: Mutex<HashMap<String, Invoice>>,
    /// Every CreateInvoice request received, with its idempotency key.
    pub requests: Mutex<Vec<(CreateInvoiceRequest, Option<String>)>>,
    pub failing: AtomicBool,
}

#[derive(Clone)]
struct FakePayments {
    state: Arc<PaymentsState>,
    verifier: TokenVerifier,
}

#[tonic::async_trait]
impl PaymentsService for FakePayments {
    async fn create_invoice(
        &self,
        request: Request<CreateInvoiceRequest>,
    ) -> Result<Response<CreateInvoiceResponse>, Status> {
        let principal = service_principal(&request, &self.verifier)?;
        let key = request
            .metadata()
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let message = request.into_inner();
        self.state.requests.lock().unwrap().push((message.clone(), key));
        if self.state.failing.load(Ordering::SeqCst) {
            return Err(Status::unavailable("payments double is down"));
        }
        let mut invoices = self.state.invoices.lock().unwrap();
        let subject = message
            .addon_id
            .clone()
            .unwrap_or_else(|| message.order_id.clone());
        let invoice = invoices.entry(subject).or_insert_with(|| {
            let now = platform::time::now();
            let number = format!("INV-2026-{:06}", NEXT_INVOICE.fetch_add(1, Ordering::SeqCst));
            Invoice {
                addon_id: message.addon_id.clone(),
                legacy_payment_method: message.legacy_payment_method.clone(),
                legacy_previous_status: String::new(),
                legacy_status: "open".into(),
                id: Uuid::now_v7().to_string(),
                invoice_number: number.clone(),
                customer_id: principal.customer_id.unwrap_or_default().to_string(),
                order_id: message.order_id.clone(),
                order_number: message.order_number.clone(),
                status: proto::common::InvoiceStatus::Open as i32,
                previous_status: 0,
                payment_method: message.payment_method,
                currency: message.currency.clone(),
                lines: message.lines.clone(),
                total_cents: message.total_cents,
                amount_paid_cents: 0,
                amount_due_cents: message.total_cents,
                issued_at: Some(platform::time::to_timestamp(now)),
                due_at: Some(platform::time::to_timestamp(now + chrono::Duration::days(30))),
                paid_at: None,
                bank_instructions: Some(BankInstructions {
                    beneficiary: "Test Lab Inc".into(),
                    bank_name: "First Test Bank".into(),
                    account_number: "000123456789".into(),
                    routing_number: "021000021".into(),
                    swift: "TESTUS33".into(),
                    reference: number,
                }),
                checkout: None,
            }
        });
        Ok(Response::new(CreateInvoiceResponse {
            invoice: Some(invoice.clone()),
        }))
    }

    async fn get_invoice(
        &self,
        _: Request<GetInvoiceRequest>,
    ) -> Result<Response<GetInvoiceResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn list_invoices(
        &self,
        _: Request<ListInvoicesRequest>,
    ) -> Result<Response<ListInvoicesResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_payment(
        &self,
        _: Request<GetPaymentRequest>,
    ) -> Result<Response<GetPaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn list_payments(
        &self,
        _: Request<ListPaymentsRequest>,
    ) -> Result<Response<ListPaymentsResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn record_bank_payment(
        &self,
        _: Request<RecordBankPaymentRequest>,
    ) -> Result<Response<RecordBankPaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn request_stablecoin_payment(
        &self,
        _: Request<RequestStablecoinPaymentRequest>,
    ) -> Result<Response<StablecoinPaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_stablecoin_payment(
        &self,
        _: Request<GetStablecoinPaymentRequest>,
    ) -> Result<Response<StablecoinPaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn submit_stablecoin_transaction(
        &self,
        _: Request<SubmitStablecoinTransactionRequest>,
    ) -> Result<Response<StablecoinPaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    /// A deployment without the stablecoin rail.
    async fn check_stablecoin_rail(
        &self,
        _: Request<CheckStablecoinRailRequest>,
    ) -> Result<Response<CheckStablecoinRailResponse>, Status> {
        Err(ApiError::new(
            ErrorCode::PaymentMethodUnavailable,
            "the stablecoin rail is not offered",
        )
        .into())
    }

    async fn checkout_stablecoin(
        &self,
        _: Request<CheckoutStablecoinRequest>,
    ) -> Result<Response<CheckoutStablecoinResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_checkout(
        &self,
        _: Request<proto::payments::GetCheckoutRequest>,
    ) -> Result<Response<proto::payments::GetCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn pay_checkout(
        &self,
        _: Request<proto::payments::PayCheckoutRequest>,
    ) -> Result<Response<proto::payments::PayCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn confirm_checkout(
        &self,
        _: Request<proto::payments::ConfirmCheckoutRequest>,
    ) -> Result<Response<proto::payments::PayCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn handle_processor_webhook(
        &self,
        _: Request<proto::payments::HandleProcessorWebhookRequest>,
    ) -> Result<Response<proto::payments::HandleProcessorWebhookResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn prepare_payment(
        &self,
        _: Request<proto::payments::PreparePaymentRequest>,
    ) -> Result<Response<proto::payments::PreparePaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }
    async fn commit_spend(
        &self,
        _: Request<proto::payments::CommitSpendRequest>,
    ) -> Result<Response<proto::payments::CommitSpendResponse>, Status> {
        Ok(Response::new(proto::payments::CommitSpendResponse {
            already_committed: false,
        }))
    }

    async fn release_spend(
        &self,
        _: Request<proto::payments::ReleaseSpendRequest>,
    ) -> Result<Response<proto::payments::ReleaseSpendResponse>, Status> {
        Ok(Response::new(proto::payments::ReleaseSpendResponse {
            released: true,
        }))
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
        _: Request<proto::payments::OpenPickupCheckoutRequest>,
    ) -> Result<Response<proto::payments::OpenPickupCheckoutResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn set_spend_envelope(
        &self,
        _: Request<proto::payments::SetSpendEnvelopeRequest>,
    ) -> Result<Response<proto::payments::SpendEnvelopeResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_spend_envelope(
        &self,
        _: Request<proto::payments::GetSpendEnvelopeRequest>,
    ) -> Result<Response<proto::payments::SpendEnvelopeResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }
}

/// What the shipping double does when asked for a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LabelMode {
    /// Answers `unavailable` (the default: most tests place orders without a label).
    #[default]
    Unavailable,
    /// Buys a label at once.
    Buy,
    /// Never answers (a carrier slower than any wait).
    Stall,
}

/// State of the shipping double.
#[derive(Default)]
pub struct ShippingState {
    pub mode: Mutex<LabelMode>,
    pub prepare_label_calls: AtomicUsize,
    /// The customer of the last PrepareLabel call.
    pub last_customer: Mutex<Option<Uuid>>,
}

/// The tracking number of every label the shipping double buys.
pub const DOUBLE_TRACKING_NUMBER: &str = "1ZDOUBLE0000000001";

#[derive(Clone)]
struct FakeShipping {
    state: Arc<ShippingState>,
    verifier: TokenVerifier,
}

#[tonic::async_trait]
impl proto::shipping::shipping_service_server::ShippingService for FakeShipping {
    async fn list_shipments(
        &self,
        _: Request<proto::shipping::ListShipmentsRequest>,
    ) -> Result<Response<proto::shipping::ListShipmentsResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_shipment(
        &self,
        _: Request<proto::shipping::GetShipmentRequest>,
    ) -> Result<Response<proto::shipping::GetShipmentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_label(
        &self,
        _: Request<proto::shipping::GetLabelRequest>,
    ) -> Result<Response<proto::shipping::GetLabelResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_order_shipping(
        &self,
        _: Request<proto::shipping::GetOrderShippingRequest>,
    ) -> Result<Response<proto::shipping::GetOrderShippingResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn download_label(
        &self,
        _: Request<proto::shipping::DownloadLabelRequest>,
    ) -> Result<Response<proto::shipping::DownloadLabelResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn record_scan(
        &self,
        _: Request<proto::shipping::RecordScanRequest>,
    ) -> Result<Response<proto::shipping::RecordScanResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn simulate_scans(
        &self,
        _: Request<proto::shipping::SimulateScansRequest>,
    ) -> Result<Response<proto::shipping::SimulateScansResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn simulate_delivery(
        &self,
        _: Request<proto::shipping::SimulateDeliveryRequest>,
    ) -> Result<Response<proto::shipping::SimulateDeliveryResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn receive_carrier_webhook(
        &self,
        _: Request<proto::shipping::ReceiveCarrierWebhookRequest>,
    ) -> Result<Response<proto::shipping::ReceiveCarrierWebhookResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn get_pickup_options(
        &self,
        _: Request<proto::shipping::GetPickupOptionsRequest>,
    ) -> Result<Response<proto::shipping::GetPickupOptionsResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn request_pickup(
        &self,
        _: Request<proto::shipping::RequestPickupRequest>,
    ) -> Result<Response<proto::shipping::RequestPickupResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn confirm_pickup_payment(
        &self,
        _: Request<proto::shipping::ConfirmPickupPaymentRequest>,
    ) -> Result<Response<proto::shipping::ConfirmPickupPaymentResponse>, Status> {
        Err(Status::unimplemented("not in this double"))
    }

    async fn prepare_label(
        &self,
        request: Request<proto::shipping::PrepareLabelRequest>,
    ) -> Result<Response<proto::shipping::PrepareLabelResponse>, Status> {
        let principal = service_principal(&request, &self.verifier)?;
        self.state.prepare_label_calls.fetch_add(1, Ordering::SeqCst);
        *self.state.last_customer.lock().unwrap() = principal.customer_id;
        let mode = *self.state.mode.lock().unwrap();
        match mode {
            LabelMode::Unavailable => Err(Status::unavailable("the shipping double is down")),
            LabelMode::Stall => std::future::pending().await,
            LabelMode::Buy => {
                let order = request.into_inner();
                Ok(Response::new(proto::shipping::PrepareLabelResponse {
                    label: Some(proto::shipping::Label {
                        shipment_id: Uuid::now_v7().to_string(),
                        tracking_number: DOUBLE_TRACKING_NUMBER.to_owned(),
                        tracking_url: format!("https://carrier.example/track/{DOUBLE_TRACKING_NUMBER}"),
                        carrier_code: "ups".to_owned(),
                        service_code: "ground".to_owned(),
                        packing_steps: vec![proto::shipping::PackingStep {
                            step: 1,
                            sample_reference: format!("{}-1", order.order_number),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                    status: proto::common::ShipmentStatus::PreTransit as i32,
                }))
            }
        }
    }
}

/// The doubles, serving on loopback until the test ends.
pub struct Peers {
    pub catalog: Arc<CatalogState>,
    pub catalog_addr: SocketAddr,
    pub payments: Arc<PaymentsState>,
    pub payments_addr: SocketAddr,
    pub shipping: Arc<ShippingState>,
    pub shipping_addr: SocketAddr,
}

impl Peers {
    /// Starts both doubles on free ports.
    pub async fn start() -> Peers {
        let catalog = Arc::new(CatalogState::default());
        let payments = Arc::new(PaymentsState::default());
        let catalog_server = CatalogServiceServer::new(FakeCatalog {
            state: catalog.clone(),
            verifier: TokenVerifier::new("catalog-svc", TrustedKeys::development()),
        });
        let payments_server = PaymentsServiceServer::new(FakePayments {
            state: payments.clone(),
            verifier: TokenVerifier::new("payments-svc", TrustedKeys::development()),
        });
        let shipping = Arc::new(ShippingState::default());
        let shipping_server =
            proto::shipping::shipping_service_server::ShippingServiceServer::new(FakeShipping {
                state: shipping.clone(),
                verifier: TokenVerifier::new("shipping-svc", TrustedKeys::development()),
            });
        let catalog_addr = serve(tonic::transport::Server::builder().add_service(catalog_server)).await;
        let payments_addr = serve(tonic::transport::Server::builder().add_service(payments_server)).await;
        let shipping_addr = serve(tonic::transport::Server::builder().add_service(shipping_server)).await;
        Peers {
            catalog,
            catalog_addr,
            payments,
            payments_addr,
            shipping,
            shipping_addr,
        }
    }

    /// Sets what the shipping double does when asked for a label.
    pub fn labels(&self, mode: LabelMode) {
        *self.shipping.mode.lock().unwrap() = mode;
    }

    /// Stores a quote in the catalog double.
    pub fn add_quote(&self, quote: Quote) -> Quote {
        self.catalog
            .quotes
            .lock()
            .unwrap()
            .insert(quote.id.clone(), quote.clone());
        quote
    }

    /// Makes payments-svc fail (or recover).
    pub fn payments_failing(&self, failing: bool) {
        self.payments.failing.store(failing, Ordering::SeqCst);
    }

    /// CreateInvoice requests received so far.
    pub fn invoice_requests(&self) -> Vec<(CreateInvoiceRequest, Option<String>)> {
        self.payments.requests.lock().unwrap().clone()
    }
}

async fn serve(router: tonic::transport::server::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a double");
    let addr = listener.local_addr().unwrap();
    tokio::spawn(router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)));
    addr
}

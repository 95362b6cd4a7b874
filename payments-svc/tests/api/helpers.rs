//! Test harness: a payments-svc on a fresh database and a unique stream prefix, a gRPC client,
//! principal tokens, typed request builders and outbox inspection.

use payments_svc::{Application, Settings};
use platform::config::CommonSettings;
use platform::principal::{Principal, PrincipalKind, roles};
use platform::tokens::testing::DevTokens;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use proto::payments as pb;
use proto::payments::payments_service_client::PaymentsServiceClient;
use sqlx::PgPool;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

/// A running payments-svc.
pub struct TestApp {
    pub client: PaymentsServiceClient<Channel>,
    pub pool: PgPool,
    pub keys: DevTokens,
    pub redis_url: String,
    pub stream_prefix: String,
    shutdown: CancellationToken,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts payments-svc on port 0 with a fresh database and compressed consumer timing.
pub async fn spawn_app() -> TestApp {
    let database_url = platform::testing::fresh_database().await;
    let redis_url = platform::testing::redis_url();
    let stream_prefix = platform::testing::unique_stream_prefix();
    let common = CommonSettings::local(&database_url, &redis_url, &stream_prefix);
    let keys = DevTokens::new("payments-svc");
    let mut settings = Settings::local(common);
    settings.consumer.reclaim_idle = Duration::from_millis(500);
    settings.consumer.block = Duration::from_millis(200);
    let application = Application::build(settings).await.expect("build payments-svc");
    let address = application.local_addr();
    let pool = application.pool().clone();
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    TestApp {
        client: PaymentsServiceClient::new(channel),
        pool,
        keys,
        redis_url,
        stream_prefix,
        shutdown,
    }
}

impl TestApp {
    /// A TestApp over an application started elsewhere (the stablecoin tests configure the rail).
    pub fn from_parts(
        client: PaymentsServiceClient<Channel>,
        pool: PgPool,
        keys: DevTokens,
        redis_url: String,
        stream_prefix: String,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            client,
            pool,
            keys,
            redis_url,
            stream_prefix,
            shutdown,
        }
    }

    /// A service token (orders-svc) acting for `customer`.
    pub fn service_token(&self, customer: Uuid) -> String {
        self.keys.mint_service("orders-svc", Some(customer))
    }

    /// A customer API key token with `scopes`.
    pub fn customer_token(&self, customer: Uuid, scopes: &[&str]) -> String {
        self.keys.mint(&Principal {
            kind: PrincipalKind::Customer,
            subject: "key-test".into(),
            customer_id: Some(customer),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            roles: vec![],
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        })
    }

    /// A customer token with both read scopes.
    pub fn reader(&self, customer: Uuid) -> String {
        self.customer_token(customer, &["invoices:read", "payments:read"])
    }

    /// A staff token with `staff_roles`.
    pub fn staff_token(&self, staff_roles: &[&str]) -> String {
        self.keys.staff("alice", staff_roles)
    }

    /// A staff token holding payments.admin.
    pub fn admin(&self) -> String {
        self.staff_token(&[roles::PAYMENTS_ADMIN])
    }

    /// Creates an invoice as orders-svc for `customer`, panicking on error.
    pub async fn create_invoice(&self, customer: Uuid, request: pb::CreateInvoiceRequest) -> pb::Invoice {
        let request = platform::tokens::testing::delegated(
            platform::grpc::outgoing(request, &self.service_token(customer)),
            customer,
        );
        self.client
            .clone()
            .create_invoice(request)
            .await
            .expect("create invoice")
            .into_inner()
            .invoice
            .unwrap()
    }

    /// Reads an invoice as `customer`.
    pub async fn get_invoice(&self, customer: Uuid, reference: &str) -> Result<pb::Invoice, tonic::Status> {
        self.get_invoice_with(&self.reader(customer), reference).await
    }

    /// Reads an invoice with `token`.
    pub async fn get_invoice_with(&self, token: &str, reference: &str) -> Result<pb::Invoice, tonic::Status> {
        let request = platform::grpc::outgoing(
            pb::GetInvoiceRequest {
                reference: reference.into(),
            },
            token,
        );
        Ok(self
            .client
            .clone()
            .get_invoice(request)
            .await?
            .into_inner()
            .invoice
            .unwrap())
    }

    /// Lists invoices as `customer`.
    pub async fn list_invoices(
        &self,
        customer: Uuid,
        request: pb::ListInvoicesRequest,
    ) -> Result<pb::ListInvoicesResponse, tonic::Status> {
        let request = platform::grpc::outgoing(request, &self.reader(customer));
        Ok(self.client.clone().list_invoices(request).await?.into_inner())
    }

    /// Records a bank payment with `token`.
    pub async fn record_with(
        &self,
        token: &str,
        invoice_reference: &str,
        amount_cents: i64,
        bank_reference: &str,
    ) -> Result<pb::RecordBankPaymentResponse, tonic::Status> {
        let message = pb::RecordBankPaymentRequest {
            invoice_reference: invoice_reference.into(),
            amount_cents,
            bank_reference: bank_reference.into(),
            received_at: None,
        };
        Ok(self
            .client
            .clone()
            .record_bank_payment(platform::grpc::outgoing(message, token))
            .await?
            .into_inner())
    }

    /// Records a bank payment as payments.admin staff.
    pub async fn record(
        &self,
        invoice_reference: &str,
        amount_cents: i64,
        bank_reference: &str,
    ) -> Result<pb::RecordBankPaymentResponse, tonic::Status> {
        self.record_with(&self.admin(), invoice_reference, amount_cents, bank_reference)
            .await
    }

    /// Every event in the outbox, oldest first.
    pub async fn outbox(&self) -> Vec<EventEnvelope> {
        platform::testing::events::outbox_events(&self.pool, payments_svc::SCHEMA).await
    }

    /// The outbox events of `event_type`, oldest first.
    pub async fn events_of(&self, event_type: &str) -> Vec<EventEnvelope> {
        platform::testing::events::outbox_events_of(&self.pool, payments_svc::SCHEMA, event_type).await
    }
}

/// A consistent create request for a new order: two lines, 12_500 cents, bank invoice.
pub fn invoice_request() -> pb::CreateInvoiceRequest {
    invoice_request_for(Uuid::now_v7(), 12_500)
}

/// A create request for `order_id` totalling `total`: two of one line plus a remainder line.
pub fn invoice_request_for(order_id: Uuid, total: i64) -> pb::CreateInvoiceRequest {
    let unit = total / 4;
    let remainder = total - 2 * unit;
    let line = |description: &str, quantity: i64, unit_price_cents: i64| pb::InvoiceLine {
        description: description.into(),
        quantity,
        unit_price_cents,
        amount_cents: quantity * unit_price_cents,
    };
    pb::CreateInvoiceRequest {
        legacy_payment_method: String::new(),
        order_id: order_id.to_string(),
        order_number: format!("ORD-{}", &order_id.simple().to_string()[24..]),
        payment_method: proto::common::PaymentMethod::BankInvoice as i32,
        currency: "USD".into(),
        lines: vec![
            line("Caffeine: 2 analyses", 2, unit),
            line("Conformity sample", 1, remainder),
        ],
        total_cents: total,
        checkout_expires_at: None,
        addon_id: None,
        sandbox: false,
    }
}

/// The error code carried by a status.
pub fn code_of(status: &tonic::Status) -> &'static str {
    platform::error::ApiError::from_status(status).code.as_str()
}

/// The `details.field` of an error status.
pub fn field_of(status: &tonic::Status) -> String {
    let error = platform::error::ApiError::from_status(status);
    error
        .details
        .and_then(|details| details["field"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The payload of an envelope, panicking when it is not of the expected variant.
pub fn data(event: &EventEnvelope) -> &Data {
    event.data.as_ref().expect("event data")
}

//! The stablecoin rail against a real anvil: payment requests, submissions verified on two
//! providers (one of them can lie, be down or serve another chain id), the finalized-log scanner,
//! reorgs, expiry, and the read-only guarantee.

mod anvil;
mod chain_id;
mod flows;
mod proxy;
mod read_only;
mod refusals;

use crate::helpers::{TestApp, invoice_request_for};
use alloy::primitives::{Address, B256};
use anvil::Anvil;
use payments_svc::chain::ChainAddress;
use payments_svc::stablecoin::StablecoinSettings;
use payments_svc::stablecoin::settings::ProviderSetting;
use payments_svc::{Application, Settings};
use platform::config::CommonSettings;
use platform::tokens::testing::DevTokens;
use proto::payments as pb;
use proto::payments::payments_service_client::PaymentsServiceClient;
use proto::scopes::{PAYMENTS_READ, PAYMENTS_WRITE};
use proxy::{Behaviour, RpcProxy};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

/// A payments-svc whose stablecoin rail reads anvil through two recording proxies.
pub struct Chain {
    pub app: TestApp,
    pub anvil: Anvil,
    pub provider_a: RpcProxy,
    pub provider_b: RpcProxy,
    pub token: Address,
    pub other_token: Address,
    pub batcher: Address,
    pub treasury: Address,
    pub payer: Address,
    pub exchange: Address,
    pub customer: Uuid,
}

/// Starts anvil, deploys the tokens and the batcher, funds the payer and the exchange, and
/// starts payments-svc with the rail configured (`ttl` for requests).
pub async fn start_chain(ttl: Duration) -> Chain {
    start_chain_with(ttl, [Behaviour::Honest, Behaviour::Honest]).await
}

/// [`start_chain`] with providers A and B behaving as `providers` from before payments-svc
/// starts.
pub async fn start_chain_with(ttl: Duration, providers: [Behaviour; 2]) -> Chain {
    let anvil = Anvil::start().await;
    let token = anvil.deploy_token("USDC").await;
    let other_token = anvil.deploy_token("FAKE").await;
    let batcher = anvil.deploy("Batcher", vec![]).await;
    let (payer, exchange, treasury) = (anvil.accounts[1], anvil.accounts[2], anvil.accounts[9]);
    for holder in [payer, exchange] {
        anvil.mint(token, holder, 1_000_000_000_000).await;
        anvil.mint(other_token, holder, 1_000_000_000_000).await;
    }
    let provider_a = RpcProxy::start(&anvil.url).await;
    let provider_b = RpcProxy::start(&anvil.url).await;
    provider_a.set(providers[0]);
    provider_b.set(providers[1]);
    let mut chain = StablecoinSettings::new(
        31_337,
        ChainAddress(token),
        ChainAddress(treasury),
        [
            ProviderSetting {
                name: "provider-a".into(),
                url: provider_a.url.clone(),
            },
            ProviderSetting {
                name: "provider-b".into(),
                url: provider_b.url.clone(),
            },
        ],
    );
    chain.request_ttl = ttl;
    chain.scan_interval = Duration::from_millis(100);
    chain.rpc_timeout = Duration::from_secs(3);
    let app = spawn_with_rail(chain).await;
    Chain {
        app,
        anvil,
        provider_a,
        provider_b,
        token,
        other_token,
        batcher,
        treasury,
        payer,
        exchange,
        customer: Uuid::now_v7(),
    }
}

async fn spawn_with_rail(chain: StablecoinSettings) -> TestApp {
    let database_url = platform::testing::fresh_database().await;
    let redis_url = platform::testing::redis_url();
    let stream_prefix = platform::testing::unique_stream_prefix();
    let common = CommonSettings::local(&database_url, &redis_url, &stream_prefix);
    let keys = DevTokens::new("payments-svc");
    let mut settings = Settings::local(common);
    settings.stablecoin = Some(chain);
    let application = Application::build(settings).await.expect("build payments-svc");
    let address = application.local_addr();
    let pool = application.pool().clone();
    let shutdown = CancellationToken::new();
    tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    TestApp::from_parts(
        PaymentsServiceClient::new(channel),
        pool,
        keys,
        redis_url,
        stream_prefix,
        shutdown,
    )
}

impl Chain {
    fn writer(&self) -> String {
        self.app
            .customer_token(self.customer, &[PAYMENTS_WRITE, PAYMENTS_READ])
    }

    /// A stablecoin invoice of `total` cents and its payment request from the payer.
    pub async fn new_request(&self, total: i64) -> pb::StablecoinPayment {
        self.new_request_from(total, self.payer).await
    }

    /// A stablecoin invoice of `total` cents and its payment request from `payer`.
    pub async fn new_request_from(&self, total: i64, payer: Address) -> pb::StablecoinPayment {
        let order_id = Uuid::now_v7();
        let mut invoice = invoice_request_for(order_id, total);
        invoice.payment_method = proto::common::PaymentMethod::ChainStablecoin as i32;
        self.app.create_invoice(self.customer, invoice).await;
        let mut request = tonic::Request::new(pb::RequestStablecoinPaymentRequest {
            reference: order_id.to_string(),
            expected_payer_address: Some(payer.to_checksum(None)),
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", self.writer()).parse().unwrap(),
        );
        self.app
            .client
            .clone()
            .request_stablecoin_payment(request)
            .await
            .unwrap()
            .into_inner()
            .payment
            .unwrap()
    }

    /// Submits `hash` for the request of `order_id` under a fresh Idempotency-Key.
    pub async fn submit(&self, order_id: &str, hash: B256) -> Result<pb::StablecoinPayment, tonic::Status> {
        self.submit_with_key(order_id, hash, &Uuid::now_v7().to_string())
            .await
    }

    /// Submits `hash` for the request of `order_id` under `key`.
    pub async fn submit_with_key(
        &self,
        order_id: &str,
        hash: B256,
        key: &str,
    ) -> Result<pb::StablecoinPayment, tonic::Status> {
        let mut request = tonic::Request::new(pb::SubmitStablecoinTransactionRequest {
            reference: order_id.to_owned(),
            transaction_hash: format!("{hash:#x}"),
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", self.writer()).parse().unwrap(),
        );
        request
            .metadata_mut()
            .insert("idempotency-key", key.parse().unwrap());
        let answer = self
            .app
            .client
            .clone()
            .submit_stablecoin_transaction(request)
            .await?;
        Ok(answer.into_inner().payment.unwrap())
    }

    /// The request of `order_id` as it stands.
    pub async fn get(&self, order_id: &str) -> pb::StablecoinPayment {
        let mut request = tonic::Request::new(pb::GetStablecoinPaymentRequest {
            reference: order_id.to_owned(),
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", self.writer()).parse().unwrap(),
        );
        self.app
            .client
            .clone()
            .get_stablecoin_payment(request)
            .await
            .unwrap()
            .into_inner()
            .payment
            .unwrap()
    }

    /// Waits until the request of `order_id` has `status`.
    pub async fn wait_for_status(&self, order_id: &str, status: &str) -> pb::StablecoinPayment {
        platform::testing::wait_for(&format!("status {status}"), Duration::from_secs(30), || async {
            let payment = self.get(order_id).await;
            (payment.status == status).then_some(payment)
        })
        .await
    }

    /// Pays `request` exactly from the payer; returns the transaction hash.
    pub async fn pay_exactly(&self, request: &pb::StablecoinPayment) -> B256 {
        let amount = u64::try_from(request.amount_atomic).unwrap();
        self.anvil
            .transfer(self.token, self.payer, self.treasury, amount)
            .await
    }

    /// The event types of the outbox for request `id`, in order.
    pub async fn event_types_of(&self, id: &str) -> Vec<String> {
        self.app
            .outbox()
            .await
            .into_iter()
            .filter(|event| event.subject_id == id || event.r#type == "payment.confirmed")
            .map(|event| event.r#type)
            .collect()
    }
}

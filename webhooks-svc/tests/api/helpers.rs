//! Test harness: webhooks-svc on a fresh database and a unique stream prefix, an HTTPS test
//! receiver whose CA the service trusts, a gRPC client with minted principals, event envelopes
//! published with XADD, and signature checks done the way a customer would.

use platform::config::CommonSettings;
use platform::principal::{Principal, PrincipalKind, roles};
use platform::test_receiver::{Behaviour, TestReceiver};
use platform::tokens::testing::DevTokens;
use prost::Message;
use proto::events::EventEnvelope;
use proto::webhooks as pb;
use proto::webhooks::webhooks_service_client::WebhooksServiceClient;
use sqlx::PgPool;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;
use webhooks_svc::domain::RetrySchedule;
use webhooks_svc::{Application, Settings};

/// Every read scope of the event kinds, plus both webhook scopes.
pub const ALL_SCOPES: [&str; 8] = [
    "webhooks:read",
    "webhooks:write",
    "orders:read",
    "invoices:read",
    "payments:read",
    "shipments:read",
    "results:read",
    "raw_data:read",
];
/// Time limit of one attempt in tests.
pub const REQUEST_TIMEOUT: Duration = Duration::from_millis(800);
/// How long tests wait for something to happen.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How a test service is configured.
#[derive(Clone, Debug)]
pub struct Options {
    pub allow_loopback: bool,
    pub dns_overrides: HashMap<String, Vec<IpAddr>>,
    /// Retry waits in milliseconds.
    pub schedule_ms: Vec<u64>,
    pub rotation_overlap: Duration,
    pub lease: Duration,
    pub shutdown_grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            allow_loopback: true,
            dns_overrides: HashMap::new(),
            schedule_ms: vec![100, 200, 300],
            rotation_overlap: Duration::from_secs(86_400),
            lease: Duration::from_secs(3),
            shutdown_grace: Duration::ZERO,
        }
    }
}

/// A running webhooks-svc and its receiver.
pub struct TestApp {
    pub client: WebhooksServiceClient<Channel>,
    pub pool: PgPool,
    pub keys: DevTokens,
    pub receiver: TestReceiver,
    /// Scripted answers per receiver path.
    scripts: Scripts,
    pub redis_url: String,
    pub stream_prefix: String,
    database_url: String,
    shutdown: CancellationToken,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts webhooks-svc with the default test options.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

/// Starts webhooks-svc with `options` and a fresh receiver.
pub async fn spawn_app_with(options: Options) -> TestApp {
    let _telemetry = platform::telemetry::init_for_tests("webhooks-svc-tests");
    let receiver = TestReceiver::start().await;
    let scripts = Scripts::default();
    let responder = scripts.clone();
    receiver.respond_by(move |request| responder.next(&request.path));
    let database_url = platform::testing::fresh_database().await;
    let redis_url = platform::testing::redis_url();
    let stream_prefix = platform::testing::unique_stream_prefix();
    let keys = DevTokens::new("webhooks-svc");
    let (client, pool, shutdown, task) =
        start(&database_url, &redis_url, &stream_prefix, &receiver, &options).await;
    TestApp {
        client,
        pool,
        keys,
        receiver,
        scripts,
        redis_url,
        stream_prefix,
        database_url,
        shutdown,
        task: Some(task),
    }
}

type Started = (
    WebhooksServiceClient<Channel>,
    PgPool,
    CancellationToken,
    JoinHandle<anyhow::Result<()>>,
);

async fn start(
    database_url: &str,
    redis_url: &str,
    stream_prefix: &str,
    receiver: &TestReceiver,
    options: &Options,
) -> Started {
    let mut settings = Settings::local(CommonSettings::local(database_url, redis_url, stream_prefix));
    settings.allow_loopback_targets = options.allow_loopback;
    settings.dns_overrides = options.dns_overrides.clone();
    settings.extra_root_certificates_pem = vec![receiver.ca_pem()];
    settings.delivery.request_timeout = REQUEST_TIMEOUT;
    settings.delivery.retry_schedule = RetrySchedule::new(
        options
            .schedule_ms
            .iter()
            .copied()
            .map(Duration::from_millis)
            .collect(),
    );
    settings.delivery.poll_interval = Duration::from_millis(100);
    settings.delivery.lease = options.lease;
    settings.delivery.shutdown_grace = options.shutdown_grace;
    settings.delivery.rotation_overlap = options.rotation_overlap;
    settings.consumer.reclaim_idle = Duration::from_millis(500);
    settings.consumer.block = Duration::from_millis(100);
    settings.idempotency.lease = Duration::from_secs(2);
    settings.idempotency.wait = Duration::from_secs(2);
    let application = Application::build(settings).await.expect("build webhooks-svc");
    let address = application.local_addr();
    let pool = application.pool().clone();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    (WebhooksServiceClient::new(channel), pool, shutdown, task)
}

impl TestApp {
    /// Stops the service (its in-flight attempts are dropped) and waits until it has stopped.
    pub async fn stop(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(15), task).await;
        }
    }

    /// Starts a new service on the same database and streams with `options`.
    pub async fn start_again(&mut self, options: Options) {
        self.stop().await;
        let (client, pool, shutdown, task) = start(
            &self.database_url,
            &self.redis_url,
            &self.stream_prefix,
            &self.receiver,
            &options,
        )
        .await;
        self.client = client;
        self.pool = pool;
        self.shutdown = shutdown;
        self.task = Some(task);
    }

    /// Answers the next requests on `path` with `behaviours`, one each, then with the path's
    /// default (200 unless set with [`respond`](Self::respond)).
    pub fn script(&self, path: &str, behaviours: impl IntoIterator<Item = Behaviour>) {
        let mut scripts = self.scripts.0.lock().unwrap();
        scripts.entry(path.to_owned()).or_default().0.extend(behaviours);
    }

    /// Answers every unscripted request on `path` with `behaviour` from now on.
    pub fn respond(&self, path: &str, behaviour: Behaviour) {
        let mut scripts = self.scripts.0.lock().unwrap();
        scripts.entry(path.to_owned()).or_default().1 = Some(behaviour);
    }

    /// A customer API key token (key id `key_id`) with `scopes`.
    pub fn customer_token(&self, customer: Uuid, key_id: &str, scopes: &[&str]) -> String {
        self.keys.mint(&Principal {
            kind: PrincipalKind::Customer,
            subject: key_id.to_owned(),
            customer_id: Some(customer),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            roles: vec![],
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        })
    }

    /// The customer's key `key-main` holding every scope.
    pub fn token(&self, customer: Uuid) -> String {
        self.customer_token(customer, "key-main", &ALL_SCOPES)
    }

    /// A staff token with webhooks.admin.
    pub fn staff(&self) -> String {
        self.keys.staff("alice", &[roles::WEBHOOKS_ADMIN])
    }

    /// CreateEndpoint with `token` and idempotency `key`.
    pub async fn create_with(
        &self,
        token: &str,
        key: &str,
        request: pb::CreateEndpointRequest,
    ) -> Result<tonic::Response<pb::CreateEndpointResponse>, tonic::Status> {
        let request = platform::grpc::outgoing_idempotent(request, token, key);
        self.client.clone().create_endpoint(request).await
    }

    /// Registers `path` on the receiver for `events`; panics on error.
    pub async fn register(&self, customer: Uuid, path: &str, events: &[&str]) -> pb::CreateEndpointResponse {
        let request = pb::CreateEndpointRequest {
            url: self.receiver.url(path),
            events: events.iter().map(|event| (*event).to_owned()).collect(),
            description: Some(format!("test endpoint {path}")),
        };
        self.create_with(&self.token(customer), &new_key(), request)
            .await
            .expect("create endpoint")
            .into_inner()
    }

    /// Every delivery of an endpoint, as the customer sees them (newest first).
    pub async fn deliveries(&self, customer: Uuid, endpoint_id: &str) -> Vec<pb::Delivery> {
        let request = pb::ListDeliveriesRequest {
            endpoint_id: endpoint_id.to_owned(),
            status: None,
            limit: Some(200),
            cursor: None,
        };
        let request = platform::grpc::outgoing(request, &self.token(customer));
        self.client
            .clone()
            .list_deliveries(request)
            .await
            .expect("list deliveries")
            .into_inner()
            .deliveries
    }

    /// Publishes an envelope on a domain stream as that domain's relay would.
    pub async fn publish(&self, domain: &str, envelope: &EventEnvelope) {
        self.publish_together(domain, &[envelope]).await;
    }

    /// Publishes `envelopes` to the stream of `domain` in one atomic `MULTI`, so that a
    /// consumer's next read returns them together (one batch). Like the domain's relay, it
    /// stamps each envelope with the domain's owner as `source`.
    pub async fn publish_together(&self, domain: &str, envelopes: &[&EventEnvelope]) {
        let client = redis::Client::open(self.redis_url.as_str()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let stream = platform::streams::stream_name(&self.stream_prefix, domain);
        let owner = platform::streams::owner_of_domain(domain).expect("a domain of the mesh");
        let mut pipeline = redis::pipe();
        pipeline.atomic();
        for envelope in envelopes {
            let envelope = EventEnvelope {
                source: owner.to_owned(),
                ..(*envelope).clone()
            };
            let fields = platform::testing::events::signed_fields(&stream, envelope.encode_to_vec(), owner);
            pipeline.xadd(&stream, "*", &fields).ignore();
        }
        let (): () = pipeline.query_async(&mut connection).await.unwrap();
    }

    /// Waits until the receiver got `count` requests on `path`; returns them.
    pub async fn wait_for_requests(
        &self,
        path: &str,
        count: usize,
    ) -> Vec<platform::test_receiver::RecordedRequest> {
        platform::testing::wait_for(&format!("{count} requests on {path}"), PATIENCE, || async {
            let requests = self.receiver.requests_to(path);
            (requests.len() >= count).then_some(requests)
        })
        .await
    }

    /// Waits until the endpoint's deliveries satisfy `done`.
    pub async fn wait_for_deliveries(
        &self,
        customer: Uuid,
        endpoint_id: &str,
        what: &str,
        done: impl Fn(&[pb::Delivery]) -> bool,
    ) -> Vec<pb::Delivery> {
        platform::testing::wait_for(what, PATIENCE, || async {
            let deliveries = self.deliveries(customer, endpoint_id).await;
            done(&deliveries).then_some(deliveries)
        })
        .await
    }
}

/// A fresh idempotency key.
pub fn new_key() -> String {
    format!("key-{}", Uuid::new_v4())
}

/// A fresh receiver path.
pub fn new_path() -> String {
    format!("/hooks/{}", Uuid::new_v4().simple())
}

/// The error code of a status.
pub fn code_of(status: &tonic::Status) -> &'static str {
    platform::error::ApiError::from_status(status).code.as_str()
}

/// The details of an error status.
pub fn details_of(status: &tonic::Status) -> serde_json::Value {
    platform::error::ApiError::from_status(status)
        .details
        .unwrap_or_default()
}

/// Scripted answers per path: a queue, then a default.
#[derive(Clone, Default)]
struct Scripts(Arc<Mutex<HashMap<String, PathScript>>>);

/// The queued answers of one path and its default.
type PathScript = (VecDeque<Behaviour>, Option<Behaviour>);

impl Scripts {
    fn next(&self, path: &str) -> Option<Behaviour> {
        let mut scripts = self.0.lock().unwrap();
        let (queue, default) = scripts.get_mut(path)?;
        queue.pop_front().or_else(|| default.clone())
    }
}

//! `spawn_app()`: a gateway on free ports with a real identity-svc (fresh database), a unique
//! stream prefix and the fake peers; typed helpers for REST calls. identity-svc's gRPC API (its
//! customers and keys, as an admin) is `platform::testing::identity`, shared with identity-svc's
//! own tests.

use crate::fakes::FakeMesh;
use gateway::{Application, PeerAddrs, Settings};
use platform::testing::identity::IdentityAdmin;
use std::sync::Once;
use tokio_util::sync::CancellationToken;

/// A running gateway and what a test needs around it.
pub struct TestApp {
    pub base_url: String,
    /// The gateway's internal operations API.
    pub grpc_url: String,
    /// identity-svc, which verifies this gateway's keys: its API as an admin calls it.
    pub identity: IdentityAdmin,
    pub pool: sqlx::PgPool,
    pub http: reqwest::Client,
    pub fakes: FakeMesh,
    pub database_url: String,
    pub stream_prefix: String,
    /// The gateway's authenticator: its key-store lookup counter and cache sizes.
    pub authenticator: gateway::authenticator::Authenticator,
    /// Fires the gateway's shutdown (drain tests); dropping the app fires it too.
    pub shutdown: CancellationToken,
    /// The gateway's serving task.
    pub server: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// identity-svc's serving task (stopped with the gateway).
    _identity_server: tokio::task::JoinHandle<anyhow::Result<()>>,
    _shutdown: tokio_util::sync::DropGuard,
}

/// Installs, once per test binary, the platform's subscriber (no exporter here: the W3C
/// context requests bring is passed on as it is, which the trace-context tests check).
pub fn init_tracing() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::mem::forget(platform::telemetry::init_for_tests("gateway-tests"));
    });
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Spawns a gateway whose settings `adjust` may change (peers default to the fakes).
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let database_url = platform::testing::fresh_database().await;
    spawn_on(database_url, platform::testing::unique_stream_prefix(), adjust).await
}

/// Spawns a gateway on an existing database and stream prefix, with fakes of its own.
async fn spawn_on(
    database_url: String,
    stream_prefix: String,
    adjust: impl FnOnce(&mut Settings),
) -> TestApp {
    init_tracing();
    let fakes = FakeMesh::start().await;
    let identity = identity_svc::Application::build(identity_svc::Settings::local(
        &database_url,
        &platform::testing::redis_url(),
        &stream_prefix,
    ))
    .await
    .expect("identity-svc builds");
    let identity_url = format!("http://{}", identity.local_addr());
    let peers = PeerAddrs {
        identity: identity_url.clone(),
        catalog: fakes.url(),
        orders: fakes.url(),
        payments: fakes.url(),
        shipping: fakes.url(),
        webhooks: fakes.url(),
        results: fakes.url(),
    };
    let mut settings = Settings::local(&platform::testing::redis_url(), &stream_prefix, peers);
    adjust(&mut settings);
    let application = Application::build(settings).await.expect("the gateway builds");
    let base_url = format!("http://{}", application.http_addr());
    let grpc_url = format!("http://{}", application.grpc_addr());
    let authenticator = application.authenticator();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(application.run_until_stopped(shutdown.clone()));
    let identity_server = tokio::spawn(identity.run_until_stopped(shutdown.clone()));
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    TestApp {
        base_url,
        grpc_url,
        identity: IdentityAdmin::new(identity_url),
        pool,
        http,
        fakes,
        database_url,
        stream_prefix,
        authenticator,
        shutdown: shutdown.clone(),
        server,
        _identity_server: identity_server,
        _shutdown: shutdown.drop_guard(),
    }
}

impl TestApp {
    /// A second gateway replica on the same database, Redis and stream prefix.
    pub async fn replica(&self, adjust: impl FnOnce(&mut Settings)) -> TestApp {
        spawn_on(self.database_url.clone(), self.stream_prefix.clone(), adjust).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub fn agent(&self, path: &str) -> String {
        format!("{}/api/v1/agent{path}", self.base_url)
    }

    pub async fn get(&self, path: &str, key: &str) -> reqwest::Response {
        self.http
            .get(self.agent(path))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
    }

    /// A request with the key's bearer credential.
    pub fn authorized(&self, method: reqwest::Method, path: &str, key: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.agent(path)).bearer_auth(key)
    }

    pub async fn post_json(
        &self,
        path: &str,
        key: &str,
        body: &serde_json::Value,
        idempotency_key: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self.http.post(self.agent(path)).bearer_auth(key).json(body);
        if let Some(idempotency_key) = idempotency_key {
            request = request.header("Idempotency-Key", idempotency_key);
        }
        request.send().await.unwrap()
    }
}

/// Reads a response as JSON, asserting its status.
pub async fn json_with_status(response: reqwest::Response, status: u16) -> serde_json::Value {
    let actual = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(actual, status, "unexpected status, body: {body}");
    serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON: {body}"))
}

/// Asserts an error envelope with `code` and returns it.
pub async fn error_envelope(response: reqwest::Response, status: u16, code: &str) -> serde_json::Value {
    let body = json_with_status(response, status).await;
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    body
}

/// A well-formed create-order body.
pub fn order_body() -> serde_json::Value {
    serde_json::json!({
        "quoteId": "5f0c6f3e-0000-4000-8000-000000000001",
        "paymentMethod": "bank_invoice",
        "confirm": true,
        "clientReference": "po-7",
        "sampleMetadata": [{ "compoundName": "BPC-157", "lotNumber": "LOT-1" }]
    })
}

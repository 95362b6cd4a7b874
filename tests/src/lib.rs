//! Sandbox for end-to-end tests: a whole mesh (labd) on free loopback ports with a fresh
//! database and its own Redis stream prefix, the real catalog imported with labctl, and helpers
//! to create customers and keys and to call the REST API as an agent would.

pub mod easypost;
pub mod otlp;
pub mod processes;
pub mod smtp;

use clap::Parser;
use labd::{Mesh, MeshSettings};
use serde_json::Value;
use std::time::Duration;

/// How a sandbox's mesh runs.
pub enum Running {
    /// Every service in this test's process (labd).
    InProcess(Mesh),
    /// Every service in a process of its own ([`processes::ProcessMesh`]).
    Processes(processes::ProcessMesh),
}

/// A running mesh for one test.
pub struct Sandbox {
    pub mesh: Running,
    pub http: reqwest::Client,
    pub base_url: String,
    pub database_url: String,
    pub redis_url: String,
    pub stream_prefix: String,
    /// The operator credential labctl uses (the development operator unless the sandbox runs
    /// outside development mode).
    pub credential: String,
}

/// A customer with one API key.
#[derive(Clone, Debug)]
pub struct Customer {
    pub id: String,
    pub key: String,
}

/// An HTTP answer: status, headers and JSON body (Null when the body is not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The `error.code` of an error envelope.
    pub fn error_code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }

    /// A response header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// Path of the catalog document shipped with catalog-svc.
pub fn catalog_document() -> String {
    format!("{}/../catalog-svc/data/catalog.json", env!("CARGO_MANIFEST_DIR"))
}

impl Sandbox {
    /// Starts a mesh with default sandbox settings and imports the shipped catalog.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a mesh as a deployment runs it, outside development mode: a signing key of its own
    /// for the gateway, identity-svc and orders-svc, a trust set of their public keys, a real
    /// pepper and sealing key, and a first operator registered with
    /// `identity-svc bootstrap-operator`.
    pub async fn start_outside_development_mode() -> Self {
        use platform::tokens::SigningKey;
        let (gateway_key, gateway_private) = SigningKey::generate("gateway-test-1");
        let (identity_key, identity_private) = SigningKey::generate("identity-svc-test-1");
        let (orders_key, orders_private) = SigningKey::generate("orders-svc-test-1");
        let (shipping_key, shipping_private) = SigningKey::generate("shipping-svc-test-1");
        // The services that emit events sign them with their own keys.
        let (catalog_key, catalog_private) = SigningKey::generate("catalog-svc-test-1");
        let (payments_key, payments_private) = SigningKey::generate("payments-svc-test-1");
        let (results_key, results_private) = SigningKey::generate("results-svc-test-1");
        let trusted = serde_json::json!({
            "keys": [
                gateway_key.public_jwk("gateway"),
                identity_key.public_jwk("identity-svc"),
                orders_key.public_jwk("orders-svc"),
                shipping_key.public_jwk("shipping-svc"),
                catalog_key.public_jwk("catalog-svc"),
                payments_key.public_jwk("payments-svc"),
                results_key.public_jwk("results-svc")
            ]
        })
        .to_string();
        let sealing: [u8; 32] = rand::random();
        let keyring = format!(
            "prod1:{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, sealing)
        );
        Self::start_configured(
            |settings| {
                for common in [
                    &mut settings.gateway.common,
                    &mut settings.identity.common,
                    &mut settings.catalog.common,
                    &mut settings.orders.common,
                    &mut settings.payments.common,
                    &mut settings.shipping.common,
                    &mut settings.results.common,
                    &mut settings.webhooks.common,
                ] {
                    common.dev_mode = false;
                    common.token_trusted_keys = Some(trusted.clone());
                }
                settings.gateway.common.token_signing_key = Some(gateway_private);
                settings.identity.common.token_signing_key = Some(identity_private);
                settings.orders.common.token_signing_key = Some(orders_private);
                settings.shipping.common.token_signing_key = Some(shipping_private);
                settings.catalog.common.token_signing_key = Some(catalog_private);
                settings.payments.common.token_signing_key = Some(payments_private);
                settings.results.common.token_signing_key = Some(results_private);
                settings.shipping.signing_key =
                    Some("a-shipping-signing-key-of-this-test-deployment".to_owned().into());
                let (_, coa_private) = SigningKey::generate("coa-test-1");
                settings.results.coa_signing_key = Some(coa_private);
                settings.results.notifications.unsubscribe_key =
                    Some("an-unsubscribe-key-of-this-test-deployment".to_owned().into());
                settings.identity.api_key_pepper = "a-pepper-of-this-test-deployment".to_owned().into();
                settings.webhooks.secret_keys =
                    webhooks_svc::keyring::Keyring::parse(&keyring).expect("a keyring");
            },
            true,
        )
        .await
    }

    /// Starts a mesh after `adjust` changed its settings, and imports the shipped catalog.
    pub async fn start_with(adjust: impl FnOnce(&mut MeshSettings)) -> Self {
        Self::start_configured(adjust, false).await
    }

    /// Starts a mesh after `adjust`; with `bootstrap` (outside development mode) it registers the
    /// first operator before the mesh starts and labctl acts as them.
    async fn start_configured(adjust: impl FnOnce(&mut MeshSettings), bootstrap: bool) -> Self {
        // Installs the trace-context propagator and tracing layers, as labd's main does, so trace
        // context flows through the sandbox exactly as in a deployment. Later calls are no-ops.
        std::mem::forget(platform::telemetry::init_for_tests("sandbox"));
        let database_url = platform::testing::fresh_database().await;
        let redis_url = platform::testing::redis_url();
        let stream_prefix = platform::testing::unique_stream_prefix();
        let mut settings = MeshSettings::sandbox(&database_url, &redis_url, &stream_prefix);
        adjust(&mut settings);
        let mut credential = identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL.to_owned();
        if bootstrap {
            let all = ["all".to_owned()];
            credential = identity_svc::bootstrap_operator(&settings.identity, "root", &all)
                .await
                .expect("the first operator registers");
        }
        let mesh = labd::start(settings).await.expect("the mesh starts");
        Self::ready(
            Running::InProcess(mesh),
            database_url,
            redis_url,
            stream_prefix,
            credential,
        )
        .await
    }

    /// Starts the mesh as separate processes ([`processes::ProcessMesh`]) as `plan` says, in
    /// development mode, and imports the shipped catalog.
    pub async fn start_processes(plan: &processes::Plan) -> Self {
        std::mem::forget(platform::telemetry::init_for_tests("sandbox"));
        let database_url = platform::testing::fresh_database().await;
        let redis_url = platform::testing::redis_url();
        let stream_prefix = platform::testing::unique_stream_prefix();
        let mesh = processes::ProcessMesh::start(plan, &database_url, &redis_url, &stream_prefix).await;
        let credential = identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL.to_owned();
        Self::ready(
            Running::Processes(mesh),
            database_url,
            redis_url,
            stream_prefix,
            credential,
        )
        .await
    }

    /// Stops this in-process sandbox's mesh and starts it again, in development mode, on the same
    /// database, Redis and stream prefix after `adjust` changed its settings: a deployment
    /// restarted with new settings. What was stored (catalog, customers, keys, operators, orders,
    /// COAs) stays; the addresses change.
    pub async fn restart_with(self, adjust: impl FnOnce(&mut MeshSettings)) -> Self {
        let Sandbox {
            mesh,
            http,
            database_url,
            redis_url,
            stream_prefix,
            credential,
            ..
        } = self;
        let Running::InProcess(mesh) = mesh else {
            panic!("only a sandbox running in this process restarts");
        };
        mesh.stop().await;
        let mut settings = MeshSettings::sandbox(&database_url, &redis_url, &stream_prefix);
        adjust(&mut settings);
        let mesh = labd::start(settings).await.expect("the mesh starts again");
        let sandbox = Self {
            base_url: format!("http://{}", mesh.http_addr),
            mesh: Running::InProcess(mesh),
            http,
            database_url,
            redis_url,
            stream_prefix,
            credential,
        };
        sandbox.wait_ready().await;
        sandbox
    }

    /// The labd mesh of a sandbox started in this process.
    pub fn in_process(&self) -> &Mesh {
        match &self.mesh {
            Running::InProcess(mesh) => mesh,
            Running::Processes(_) => panic!("this sandbox runs separate processes"),
        }
    }

    /// The process mesh of a sandbox started with [`Self::start_processes`].
    pub fn processes(&self) -> &processes::ProcessMesh {
        match &self.mesh {
            Running::Processes(mesh) => mesh,
            Running::InProcess(_) => panic!("this sandbox runs in one process"),
        }
    }

    async fn ready(
        mesh: Running,
        database_url: String,
        redis_url: String,
        stream_prefix: String,
        credential: String,
    ) -> Self {
        let http_addr = match &mesh {
            Running::InProcess(mesh) => mesh.http_addr,
            Running::Processes(mesh) => mesh.http_addr,
        };
        let base_url = format!("http://{http_addr}");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let sandbox = Self {
            mesh,
            http,
            base_url,
            database_url,
            redis_url,
            stream_prefix,
            credential,
        };
        sandbox
            .labctl(&["catalog", "import", &catalog_document()])
            .await
            .expect("the catalog imports");
        sandbox.wait_ready().await;
        sandbox
    }

    async fn wait_ready(&self) {
        let url = format!("{}/api/ready", self.base_url);
        platform::testing::wait_for("the mesh to be ready", Duration::from_secs(30), || {
            let request = self.http.get(&url).send();
            async move {
                request
                    .await
                    .ok()
                    .filter(|response| response.status() == 200)
                    .map(|_| ())
            }
        })
        .await;
        // `/api/ready` is the gateway's own; the peers are ready when `labctl health` says so.
        platform::testing::wait_for("every peer to serve", Duration::from_secs(30), || async {
            let report = self.labctl(&["health"]).await.ok()?;
            (report["healthy"] == true).then_some(())
        })
        .await;
    }

    /// Runs a labctl command against this mesh as the sandbox's operator (every role) and
    /// returns its JSON result.
    pub async fn labctl(&self, args: &[&str]) -> anyhow::Result<Value> {
        self.labctl_as(&self.credential, args).await
    }

    /// Runs a labctl command as the operator whose credential is `credential`.
    pub async fn labctl_as(&self, credential: &str, args: &[&str]) -> anyhow::Result<Value> {
        let argv = match &self.mesh {
            Running::InProcess(mesh) => mesh.labctl_argv(credential, args),
            Running::Processes(mesh) => mesh.labctl_argv(credential, args),
        };
        labctl::execute(labctl::Cli::try_parse_from(argv)?).await
    }

    /// Creates a customer and a key with `scopes` (comma-separated, or "all").
    pub async fn customer(&self, name: &str, scopes: &str) -> Customer {
        let email = format!("{}@example.com", name.to_lowercase().replace(' ', "."));
        let customer = self
            .labctl(&["customers", "ensure", "--name", name, "--email", &email])
            .await
            .unwrap();
        let id = customer["id"].as_str().unwrap().to_owned();
        let key = self
            .labctl(&[
                "keys",
                "create",
                "--customer",
                &id,
                "--name",
                "test",
                "--scopes",
                scopes,
            ])
            .await
            .unwrap();
        Customer {
            id,
            key: key["key"].as_str().unwrap().to_owned(),
        }
    }

    /// A customer `name` with a key of every scope and one bank-rail order (BPC-157, two
    /// peptide tests), placed with `idempotency_key`: the seed of the benchmarks. Returns the
    /// customer and the order's id.
    pub async fn seeded_bank_order(&self, name: &str, idempotency_key: &str) -> (Customer, String) {
        let agent = self.customer(name, "all").await;
        let page = self.get(&agent.key, "/catalog?category=peptides&limit=2").await;
        let tests: Vec<String> = page.body["data"]
            .as_array()
            .expect("catalog items")
            .iter()
            .map(|item| item["id"].as_str().unwrap().to_owned())
            .collect();
        let body =
            serde_json::json!({ "categoryId": "peptides", "compoundNames": ["BPC-157"], "testIds": tests });
        let quote = self.post(&agent.key, "/quotes", &body, &[]).await;
        let order = serde_json::json!({
            "quoteId": quote.body["data"]["quote"]["id"],
            "paymentMethod": "bank_invoice",
            "confirm": true,
        });
        let created = self
            .post(
                &agent.key,
                "/orders",
                &order,
                &[("Idempotency-Key", idempotency_key)],
            )
            .await;
        let order_id = created.body["data"]["order"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("an order: {:?}", created.body))
            .to_owned();
        (agent, order_id)
    }

    /// Sends a request as `key` (None: no Authorization header) with optional JSON body and headers.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let url = if path.starts_with("/api/") {
            format!("{}{path}", self.base_url)
        } else {
            format!("{}/api/v1/agent{path}", self.base_url)
        };
        let mut request = self.http.request(method, url);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the gateway answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap_or_default();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// GET as `key`.
    pub async fn get(&self, key: &str, path: &str) -> Answer {
        self.call(reqwest::Method::GET, path, Some(key), None, &[]).await
    }

    /// POST JSON as `key` with extra headers.
    pub async fn post(&self, key: &str, path: &str, body: &Value, headers: &[(&str, &str)]) -> Answer {
        self.call(reqwest::Method::POST, path, Some(key), Some(body), headers)
            .await
    }

    /// The MCP endpoint (`{site_url}/api/mcp`).
    pub fn mcp_url(&self) -> String {
        format!("{}/api/mcp", self.base_url)
    }

    /// POSTs raw bytes to the MCP endpoint as `key` (None: no Authorization header) with
    /// `Content-Type: application/json` unless `headers` name another one.
    pub async fn mcp_raw(&self, key: Option<&str>, body: &[u8], headers: &[(&str, &str)]) -> Answer {
        let mut request = self.http.post(self.mcp_url()).body(body.to_vec());
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        {
            request = request.header("content-type", "application/json");
        }
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the gateway answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap_or_default();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// Sends one JSON-RPC message to the MCP endpoint as `key`, with the protocol-version
    /// header a client sends after `initialize`.
    pub async fn mcp(&self, key: &str, message: &Value) -> Answer {
        let body = serde_json::to_vec(message).unwrap();
        self.mcp_raw(Some(key), &body, &[("mcp-protocol-version", "2025-11-25")])
            .await
    }

    /// Calls an MCP tool as `key` and returns the JSON-RPC answer's body (`result` or `error`).
    pub async fn call_tool(&self, key: &str, name: &str, arguments: Value) -> Value {
        let message = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": { "name": name, "arguments": arguments },
        });
        let answer = self.mcp(key, &message).await;
        assert_eq!(answer.status, 200, "{name}: {:?}", answer.body);
        answer.body
    }

    /// Stops the mesh.
    pub async fn stop(self) {
        match self.mesh {
            Running::InProcess(mesh) => mesh.stop().await,
            Running::Processes(mesh) => mesh.stop().await,
        }
    }
}

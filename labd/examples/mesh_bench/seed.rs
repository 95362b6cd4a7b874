//! The benchmark's fixtures: a fresh database for the mesh, the mesh itself (sandbox settings
//! with rate limits out of the way), the shipped catalog, one customer with a key, one quote
//! body and one placed order (pgbench's scratch database: `crate::pgbench`).

use crate::Args;
use clap::Parser;
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::time::Duration;

/// Name prefix of the databases the benchmark creates (dropped at its end, or by the next run
/// after a crash).
const DATABASE_PREFIX: &str = "mesh_bench_";

/// A running, seeded mesh.
pub struct Bench {
    pub mesh: labd::Mesh,
    pub base_url: String,
    pub http: reqwest::Client,
    pub key: String,
    /// `--spend-envelope both`: a second key of the customer, without an envelope.
    pub open_key: Option<String>,
    pub customer_id: String,
    pub order_id: String,
    /// The body of `POST /quotes` for two tests of the peptides category.
    pub quote_body: Value,
    pub database_url: String,
    /// The `sslmode` the mesh's pools connect with (pgbench is given the same).
    pub pg_sslmode: String,
    admin_url: String,
    redis_url: String,
    stream_prefix: String,
}

impl Bench {
    /// Creates the database, starts the mesh and seeds it.
    pub async fn start(args: &Args) -> anyhow::Result<Self> {
        platform::grpc::in_process::set_enabled(!args.tcp_peers);
        let database_url = fresh_database(&args.admin_url).await?;
        let stream_prefix = format!("bench-{}", uuid::Uuid::new_v4().simple());
        let mut settings = labd::MeshSettings::sandbox(&database_url, &args.redis_url, &stream_prefix);
        settings.gateway.rate_limit.per_second = 1_000_000;
        settings.gateway.rate_limit.burst = 1_000_000;
        let mesh = labd::start(settings).await?;
        let base_url = format!("http://{}", mesh.http_addr);
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?;
        let pg_sslmode = libpq_sslmode(&database_url)?;
        let mut bench = Self {
            mesh,
            base_url,
            http,
            key: String::new(),
            open_key: None,
            customer_id: String::new(),
            order_id: String::new(),
            quote_body: Value::Null,
            database_url,
            pg_sslmode,
            admin_url: args.admin_url.clone(),
            redis_url: args.redis_url.clone(),
            stream_prefix,
        };
        let catalog = format!("{}/../catalog-svc/data/catalog.json", env!("CARGO_MANIFEST_DIR"));
        bench.labctl(&["catalog", "import", &catalog]).await?;
        let customer = bench
            .labctl(&[
                "customers",
                "ensure",
                "--name",
                "Bench Lab",
                "--email",
                "bench@example.com",
            ])
            .await?;
        let customer_id = customer["id"].as_str().unwrap_or_default().to_owned();
        let key = bench
            .labctl(&[
                "keys",
                "create",
                "--customer",
                &customer_id,
                "--name",
                "bench",
                "--scopes",
                "all",
            ])
            .await?;
        bench.key = key["key"].as_str().unwrap_or_default().to_owned();
        if args.spend_envelope == "both" {
            let open = bench
                .labctl(&[
                    "keys",
                    "create",
                    "--customer",
                    &customer_id,
                    "--name",
                    "bench-no-envelope",
                    "--scopes",
                    "all",
                ])
                .await?;
            bench.open_key = Some(open["key"].as_str().unwrap_or_default().to_owned());
        }
        if args.spend_envelope != "off" {
            // Caps far above the load: every order runs the whole enforcement (the key's envelope
            // row locked, the day's and month's commitments summed, the caps checked).
            let key_id = key["id"].as_str().unwrap_or_default().to_owned();
            let cap = "1000000000000000";
            bench
                .labctl(&[
                    "payments",
                    "set-envelope",
                    "--customer",
                    &customer_id,
                    "--key",
                    &key_id,
                    "--per-order-cents",
                    cap,
                    "--daily-cents",
                    cap,
                    "--monthly-cents",
                    cap,
                ])
                .await?;
        }
        bench.customer_id = customer_id;
        bench.quote_body = bench.quote_body().await?;
        bench.order_id = bench.place_order("bench-seed-order").await?;
        Ok(bench)
    }

    /// Runs a labctl command against the mesh as the development operator (the sandbox runs in
    /// development mode).
    async fn labctl(&self, args: &[&str]) -> anyhow::Result<Value> {
        let argv = self
            .mesh
            .labctl_argv(identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL, args);
        labctl::execute(labctl::Cli::try_parse_from(argv)?).await
    }

    /// POSTs JSON to an agent route and returns the body of a 2xx answer.
    pub async fn post(
        &self,
        path: &str,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> anyhow::Result<Value> {
        let mut request = self
            .http
            .post(format!("{}/api/v1/agent{path}", self.base_url))
            .bearer_auth(&self.key)
            .json(body);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status.is_success(), "POST {path} answered {status}: {body}");
        Ok(body)
    }

    /// Quotes and places one bank-rail order; returns its id.
    pub async fn place_order(&self, idempotency_key: &str) -> anyhow::Result<String> {
        let quote = self.post("/quotes", &self.quote_body, None).await?;
        let quote_id = quote["data"]["quote"]["id"].as_str().unwrap_or_default();
        let order = self
            .post("/orders", &order_body(quote_id), Some(idempotency_key))
            .await?;
        Ok(order["data"]["order"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// A quote body for the two cheapest tests of the peptides category.
    async fn quote_body(&self) -> anyhow::Result<Value> {
        let page: Value = self
            .http
            .get(format!(
                "{}/api/v1/agent/catalog?category=peptides&limit=200",
                self.base_url
            ))
            .bearer_auth(&self.key)
            .send()
            .await?
            .json()
            .await?;
        let mut tests: Vec<(i64, String)> = page["data"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|item| item["kind"] == "test")
            .filter_map(|item| Some((item["priceCents"].as_i64()?, item["id"].as_str()?.to_owned())))
            .collect();
        tests.sort();
        anyhow::ensure!(tests.len() >= 2, "the catalog has two peptide tests: {page}");
        Ok(json!({
            "categoryId": "peptides",
            "compoundNames": ["BPC-157"],
            "testIds": [tests[0].1, tests[1].1],
        }))
    }

    /// CPU seconds used so far by the PostgreSQL backends serving the mesh's database.
    pub async fn database_cpu(&self) -> f64 {
        let Ok(mut admin) = PgConnection::connect(&self.admin_url).await else {
            return 0.0;
        };
        let name = self.database_name();
        let pids: Vec<i32> = sqlx::query_scalar("SELECT pid FROM pg_stat_activity WHERE datname = $1")
            .bind(name)
            .fetch_all(&mut admin)
            .await
            .unwrap_or_default();
        pids.into_iter().map(crate::machine::process_cpu).sum()
    }

    fn database_name(&self) -> &str {
        let name = self.database_url.rsplit('/').next().unwrap_or_default();
        name.split('?').next().unwrap_or_default()
    }

    /// Stops the mesh and removes its streams and its database.
    pub async fn stop(self) {
        let statement = format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.database_name()
        );
        self.mesh.stop().await;
        if let Ok(mut admin) = PgConnection::connect(&self.admin_url).await {
            let _ = sqlx::raw_sql(AssertSqlSafe(statement)).execute(&mut admin).await;
        }
        if let Ok(client) = redis::Client::open(self.redis_url.as_str())
            && let Ok(mut connection) = client.get_multiplexed_async_connection().await
        {
            let pattern = format!("{}*", self.stream_prefix);
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query_async(&mut connection)
                .await
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: Result<(), _> = redis::cmd("DEL").arg(&keys).query_async(&mut connection).await;
            }
        }
    }
}

/// The minimal bank-rail order body for a quote.
pub fn order_body(quote_id: &str) -> Value {
    json!({ "quoteId": quote_id, "paymentMethod": "bank_invoice", "confirm": true })
}

/// Drops the databases of earlier runs and creates a fresh one; returns its URL.
async fn fresh_database(admin_url: &str) -> anyhow::Result<String> {
    let mut admin = PgConnection::connect(admin_url).await?;
    let pattern = format!("{DATABASE_PREFIX}%");
    let old: Vec<String> = sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE $1")
        .bind(&pattern)
        .fetch_all(&mut admin)
        .await?;
    for name in old
        .iter()
        .filter(|name| name.as_str() != crate::pgbench::PGBENCH_DATABASE)
    {
        // A database still in use (another bench running) is left alone.
        let _ = sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS \"{name}\"")))
            .execute(&mut admin)
            .await;
    }
    let stamp = chrono::Utc::now().format("%Y%m%d%H%M%S");
    let name = format!("{DATABASE_PREFIX}{stamp}");
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut admin)
        .await?;
    Ok(crate::pgbench::with_database(admin_url, &name))
}

/// The `sslmode` (libpq spelling) the mesh's pools use for `url`.
fn libpq_sslmode(url: &str) -> anyhow::Result<String> {
    use sqlx::postgres::PgSslMode;
    let options = platform::db::connect_options(url)?;
    Ok(match options.get_ssl_mode() {
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
        PgSslMode::VerifyCa => "verify-ca",
        PgSslMode::VerifyFull => "verify-full",
    }
    .to_owned())
}

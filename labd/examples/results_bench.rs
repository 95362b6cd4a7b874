//! results_bench: `GET /results` and `GET /results/{reference}/analytes` for one customer with
//! 100 and then 10,000 published COAs (p50, p99, requests per second), the time to render a COA
//! PDF, the plans of the two statements behind the routes, and PostgreSQL's own `pgbench -S` on
//! the same server in the same run as the reference to read the figures against.
//!
//! `cargo run --release -p labd --example results_bench -- [--seconds 10] [--connections 16]`
//! starts a mesh in this process on a fresh database of the local PostgreSQL and Redis, creates a
//! customer with a key, seeds published COAs (4 analyte rows each) straight into the `results`
//! schema (the workflow itself is not what is measured), then drives each route from
//! `--connections` concurrent clients (in this process) for `--seconds`, noting the cores the
//! mesh and PostgreSQL used. At each size it runs `EXPLAIN (ANALYZE, BUFFERS)` of the statements
//! results-svc runs for the routes (`results_svc::repo::LIST_PUBLISHED_SQL` and
//! `PUBLISHED_BY_ACCESSION_SQL`), on the first execution and on the seventh (by then PostgreSQL
//! may have switched the prepared statement to its generic plan, as in the service's pooled
//! connections), and prints their key lines. The p99 of both routes should stay flat from 100 to
//! 10,000 COAs: the listing reads the index `coas_customer_published` and a COA is found by its
//! accession. The output is Markdown, pasteable into docs/performance.md.

#![forbid(unsafe_code)]

// The machine's state and pgbench are mesh_bench's helpers, shared, not copied.
#[allow(dead_code)]
#[path = "mesh_bench/machine.rs"]
mod machine;
#[path = "mesh_bench/pgbench.rs"]
mod pgbench;

use clap::Parser;
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Parser)]
struct Args {
    /// Seconds of each measured run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// COA counts to measure at, ascending.
    #[arg(long, value_delimiter = ',', default_value = "100,10000")]
    sizes: Vec<i64>,
    /// PDF renderings to time.
    #[arg(long, default_value_t = 200)]
    renders: usize,
    #[arg(
        long,
        env = "BENCH_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    admin_url: String,
    #[arg(long, env = "BENCH_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
}

/// Latencies of one run, and the cores each party used meanwhile.
struct Run {
    latencies: Vec<Duration>,
    errors: usize,
    elapsed: Duration,
    usage: machine::Usage,
}

impl Run {
    fn percentile(&self, percent: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let index = ((self.latencies.len() as f64 - 1.0) * percent / 100.0).round() as usize;
        self.latencies[index].as_secs_f64() * 1000.0
    }

    fn row(&self, route: &str, size: i64) -> String {
        format!(
            "| {route} | {size} | {:.2} | {:.2} | {:.0} | {} | {:.2} | {:.2} |",
            self.percentile(50.0),
            self.percentile(99.0),
            self.latencies.len() as f64 / self.elapsed.as_secs_f64(),
            self.errors,
            self.usage.mesh,
            self.usage.postgres,
        )
    }
}

async fn drive(http: &reqwest::Client, key: &str, urls: Arc<Vec<String>>, args: &Args) -> Run {
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let before = machine::sample();
    let mut tasks = Vec::new();
    for worker in 0..args.connections {
        let (http, key, urls) = (http.clone(), key.to_owned(), Arc::clone(&urls));
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0;
            let mut index = worker;
            while Instant::now() < deadline {
                let url = &urls[index % urls.len()];
                index += args_stride();
                let sent = Instant::now();
                match http.get(url).bearer_auth(&key).send().await {
                    Ok(response) if response.status().is_success() => {
                        let _ = response.bytes().await;
                        latencies.push(sent.elapsed());
                    }
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let mut run = Run {
        latencies: Vec::new(),
        errors: 0,
        elapsed: Duration::ZERO,
        usage: machine::Usage::default(),
    };
    for task in tasks {
        if let Ok((latencies, errors)) = task.await {
            run.latencies.extend(latencies);
            run.errors += errors;
        }
    }
    run.elapsed = started.elapsed();
    run.usage = machine::sample().usage_since(&before);
    run.latencies.sort();
    run
}

/// The lines of a plan worth recording: scans and their indexes, sorts, limits, timing.
fn key_lines(plan: &[String]) -> Vec<String> {
    plan.iter()
        .filter(|line| {
            [
                "Scan",
                "Index Cond",
                "Sort",
                "Limit",
                "Execution Time",
                "Planning Time",
            ]
            .iter()
            .any(|word| line.contains(word))
        })
        .map(|line| line.trim_end().to_owned())
        .collect()
}

/// `EXPLAIN (ANALYZE, BUFFERS)` of the list and analytes statements of results-svc for
/// `customer_id` at this size: on the first execution and on the seventh of one prepared
/// statement (plan_cache_mode auto may choose the generic plan after five).
async fn explain(
    database_url: &str,
    customer_id: uuid::Uuid,
    accession: &str,
) -> anyhow::Result<Vec<String>> {
    let mut conn = PgConnection::connect(database_url).await?;
    let statements = [
        (
            "list",
            format!(
                "PREPARE list_published (uuid, uuid, text, text, timestamptz, timestamptz, timestamptz, uuid, \
                 bigint) AS {}",
                results_svc::repo::LIST_PUBLISHED_SQL
            ),
            format!("EXECUTE list_published ('{customer_id}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 51)"),
        ),
        (
            "analytes",
            format!(
                "PREPARE by_accession (uuid, text) AS {}",
                results_svc::repo::PUBLISHED_BY_ACCESSION_SQL
            ),
            format!("EXECUTE by_accession ('{customer_id}', '{accession}')"),
        ),
    ];
    let mut out = Vec::new();
    for (name, prepare, execute) in statements {
        sqlx::raw_sql(AssertSqlSafe(prepare)).execute(&mut conn).await?;
        for execution in 1..=7 {
            let explained = format!("EXPLAIN (ANALYZE, BUFFERS) {execute}");
            let plan: Vec<String> = sqlx::query_scalar(AssertSqlSafe(explained))
                .fetch_all(&mut conn)
                .await?;
            if execution == 1 || execution == 7 {
                out.push(format!("{name}, execution {execution}:"));
                out.extend(key_lines(&plan).into_iter().map(|line| format!("    {line}")));
            }
        }
    }
    Ok(out)
}

/// Workers step through the URLs with a prime stride so they do not read the same COA in step.
fn args_stride() -> usize {
    7919
}

async fn fresh_database(admin_url: &str) -> anyhow::Result<String> {
    let mut admin = PgConnection::connect(admin_url).await?;
    let name = format!("results_bench_{}", chrono::Utc::now().format("%Y%m%d%H%M%S"));
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut admin)
        .await?;
    let (base, _) = admin_url.rsplit_once('/').unwrap_or((admin_url, ""));
    Ok(format!("{base}/{name}"))
}

/// Seeds published COAs `from..to` of `customer_id` (one order, 4 analyte rows each).
async fn seed(database_url: &str, customer_id: uuid::Uuid, from: i64, to: i64) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(database_url).await?;
    let order_id = uuid::Uuid::nil();
    sqlx::query(
        "INSERT INTO results.samples (accession_number, customer_id, order_id, order_number, line_number, compound, \
           lot_number, test_ids, test_names, received_at, testing_started_at) \
         SELECT 'ACC-BENCH-' || lpad(i::text, 6, '0'), $1, $2, 'ORD-BENCH-000001', 1, 'BPC-157', 'LOT-' || (i % 50), \
           ARRAY['hplc-purity', 'heavy-metals-icpms'], ARRAY['HPLC purity', 'Heavy metals'], now() - interval '3 days', \
           now() - interval '2 days' \
         FROM generate_series($3::bigint, $4::bigint - 1) i",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(from)
    .bind(to)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO results.coas (id, submission_id, accession_number, customer_id, order_id, version, status, \
           submitted_by, approved_by, approved_at, published_at, verification_code, signed_content, signature, \
           signing_key_id, created_at, updated_at) \
         SELECT gen_random_uuid(), gen_random_uuid(), 'ACC-BENCH-' || lpad(i::text, 6, '0'), $1, $2, 1, 'published', \
           'bench-analyst', 'bench-qa', now() - make_interval(secs => i), now() - make_interval(secs => i), \
           'BENCHCODE1', '{}', 'bench', 'coa-dev', now() - make_interval(secs => i), now() \
         FROM generate_series($3::bigint, $4::bigint - 1) i",
    )
    .bind(customer_id)
    .bind(order_id)
    .bind(from)
    .bind(to)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO results.analyte_results (coa_id, customer_id, position, analyte, test_id, value, qualifier, unit, \
           loq, specification, outcome, method, instrument, analyst, measured_at) \
         SELECT c.id, c.customer_id, p, (ARRAY['Purity', 'Lead (Pb)', 'Arsenic (As)', 'Cadmium (Cd)'])[p], \
           CASE WHEN p = 1 THEN 'hplc-purity' ELSE 'heavy-metals-icpms' END, \
           CASE WHEN p = 1 THEN '99.1' ELSE NULL END, CASE WHEN p = 1 THEN NULL ELSE '<LOQ' END, \
           CASE WHEN p = 1 THEN '%' ELSE 'ppm' END, '0.05', '<= 0.5', 'pass', 'USP', 'INSTR-01', 'bench-analyst', now() \
         FROM results.coas c CROSS JOIN generate_series(1, 4) p \
         WHERE c.customer_id = $1 AND c.accession_number >= 'ACC-BENCH-' || lpad($2::text, 6, '0') \
           AND c.accession_number < 'ACC-BENCH-' || lpad($3::text, 6, '0')",
    )
    .bind(customer_id)
    .bind(from)
    .bind(to)
    .execute(&mut conn)
    .await?;
    sqlx::raw_sql("ANALYZE results.coas; ANALYZE results.analyte_results; ANALYZE results.samples")
        .execute(&mut conn)
        .await?;
    Ok(())
}

async fn labctl(mesh: &labd::Mesh, args: &[&str]) -> anyhow::Result<serde_json::Value> {
    let argv = mesh.labctl_argv(identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL, args);
    labctl::execute(<labctl::Cli as clap::Parser>::try_parse_from(argv)?).await
}

fn render_times(renders: usize) -> (f64, f64) {
    use results_svc::domain::coa::{AnalyteRow, Coa, CoaStatus};
    let now = chrono::Utc::now();
    let row = |index: usize| AnalyteRow {
        analyte: format!("Analyte {index}"),
        test_id: "hplc-purity".into(),
        value: Some("99.1".into()),
        qualifier: None,
        unit: "%".into(),
        loq: Some("0.05".into()),
        lod: None,
        specification: Some(">= 98.0".into()),
        outcome: Some("pass".into()),
        method: "HPLC-UV (USP <621>)".into(),
        instrument: "HPLC-02".into(),
        analyst: "bench-analyst".into(),
        analyst_id: None,
        measured_at: now,
    };
    let coa = Coa {
        id: uuid::Uuid::now_v7(),
        submission_id: uuid::Uuid::now_v7(),
        accession_number: "ACC-2026-000001".into(),
        customer_id: uuid::Uuid::nil(),
        order_id: uuid::Uuid::nil(),
        order_number: "ORD-2026-000001".into(),
        compound: "BPC-157".into(),
        lot_number: Some("LOT-A1".into()),
        version: 1,
        status: CoaStatus::Published,
        submitted_by: Some("bench-analyst".into()),
        submitted_by_id: None,
        approved_by: Some("bench-qa".into()),
        approved_by_id: None,
        approved_at: Some(now),
        published_at: Some(now),
        retracted_at: None,
        retraction_reason: None,
        send_back_reason: None,
        amends: None,
        amendment_reason: None,
        superseded_by: None,
        verification_code: "BENCHCODE1".into(),
        signed_content: String::new(),
        signature: String::new(),
        signing_key_id: "coa-dev".into(),
        received_at: now,
        testing_started_at: Some(now),
        created_at: now,
        results: (0..20).map(row).collect(),
    };
    let letterhead = results_svc::document::Letterhead::default();
    let mut times: Vec<f64> = (0..renders.max(1))
        .map(|_| {
            let started = Instant::now();
            let pdf = results_svc::document::render(&coa, &letterhead);
            std::hint::black_box(pdf);
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let p50 = times[times.len() / 2];
    let p99 = times[((times.len() - 1) as f64 * 0.99).round() as usize];
    (p50, p99)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let database_url = fresh_database(&args.admin_url).await?;
    let prefix = format!("results-bench-{}", uuid::Uuid::new_v4().simple());
    let mut settings = labd::MeshSettings::sandbox(&database_url, &args.redis_url, &prefix);
    settings.gateway.rate_limit.per_second = 1_000_000;
    settings.gateway.rate_limit.burst = 1_000_000;
    let mesh = labd::start(settings).await?;
    let base = format!("http://{}/api/v1/agent", mesh.http_addr);
    let customer = labctl(
        &mesh,
        &[
            "customers",
            "ensure",
            "--name",
            "Bench",
            "--email",
            "bench@example.com",
        ],
    )
    .await?;
    let customer_id: uuid::Uuid = customer["id"].as_str().unwrap_or_default().parse()?;
    let key = labctl(
        &mesh,
        &[
            "keys",
            "create",
            "--customer",
            &customer_id.to_string(),
            "--scopes",
            "all",
        ],
    )
    .await?;
    let key = key["key"].as_str().unwrap_or_default().to_owned();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.connections)
        .build()?;

    println!("Machine before: {}", machine::describe());
    println!();
    println!("| Route | COAs | p50 ms | p99 ms | requests/s | errors | mesh cores | PostgreSQL cores |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut seeded = 0;
    let mut plans = Vec::new();
    for &size in &args.sizes {
        seed(&database_url, customer_id, seeded, size).await?;
        seeded = size;
        plans.push(format!("At {size} COAs:"));
        let newest = format!("ACC-BENCH-{:06}", size - 1);
        plans.extend(explain(&database_url, customer_id, &newest).await?);
        let list = Arc::new(vec![
            format!("{base}/results?limit=50"),
            format!("{base}/results?limit=50&compound=BPC-157"),
        ]);
        println!(
            "{}",
            drive(&http, &key, list, &args)
                .await
                .row("GET /results?limit=50", size)
        );
        let analytes: Vec<String> = (0..size)
            .map(|index| format!("{base}/results/ACC-BENCH-{index:06}/analytes"))
            .collect();
        let run = drive(&http, &key, Arc::new(analytes), &args).await;
        println!("{}", run.row("GET /results/{accession}/analytes", size));
    }
    // The reference: PostgreSQL's own read-only transactions on the same server, same run.
    let scratch = pgbench::scratch_database(&args.admin_url, "prefer").await?;
    let before = machine::sample();
    let reference = pgbench::run(&scratch, &["-S"], Duration::from_secs(args.seconds)).await?;
    let usage = machine::sample().usage_since(&before);
    println!(
        "| pgbench -S -c16 -j2 (reference) | — | avg {:.2} | — | {:.0} TPS | 0 | — | {:.2} |",
        reference.latency_ms, reference.tps, usage.postgres
    );
    let (p50, p99) = render_times(args.renders);
    println!();
    println!(
        "COA PDF rendering (20 analyte rows, {} renders): p50 {p50:.2} ms, p99 {p99:.2} ms",
        args.renders
    );
    println!();
    println!("Plans (EXPLAIN ANALYZE, key lines):");
    println!();
    println!("```");
    for line in &plans {
        println!("{line}");
    }
    println!("```");
    println!();
    println!("Machine after: {}", machine::describe());
    mesh.stop().await;
    Ok(())
}

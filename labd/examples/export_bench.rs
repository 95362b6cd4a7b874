//! export_bench: `GET /export/coas?format=csv` paged through 5,000 and then 50,000 rows (10 analyte
//! rows per COA), with the memory it took, against PostgreSQL's own `COPY (…) TO STDOUT` of the
//! same rows on the same server in the same run.
//!
//! `cargo run --release -p labd --example export_bench -- [--sizes 5000,50000] [--repeat 3]`
//! starts a mesh in this process on a fresh database of the local PostgreSQL and Redis, creates a
//! customer with a key, seeds published COAs straight into the `results` schema (ties included:
//! every 25 COAs share one `publishedAt`), then pages the export as a client does (`since` =
//! `nextSince` until `truncated` is false), reading each body as a stream and keeping nothing but
//! a byte count. Before each size it resets the process's peak resident set (`/proc/self/clear_refs`)
//! and reports the peak afterwards: the mesh and the client live in this process, so the peak
//! bounds what the gateway and results-svc held. Bounded memory means the peak does not grow with
//! the rows exported. The output is Markdown, pasteable into docs/performance.md.

#![forbid(unsafe_code)]

#[allow(dead_code)]
#[path = "mesh_bench/machine.rs"]
mod machine;

use clap::Parser;
use futures::StreamExt;
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Parser)]
struct Args {
    /// Row counts to export, ascending (10 rows per COA).
    #[arg(long, value_delimiter = ',', default_value = "5000,50000")]
    sizes: Vec<i64>,
    /// Runs per size (the best time is reported, and the highest peak).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(
        long,
        env = "BENCH_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    admin_url: String,
    #[arg(long, env = "BENCH_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
}

/// A `kB` field of /proc/self/status.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with(field))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

/// Resets the peak resident set to the current one (Linux, `clear_refs` value 5).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

async fn fresh_database(admin_url: &str) -> anyhow::Result<String> {
    let mut admin = PgConnection::connect(admin_url).await?;
    let name = format!("export_bench_{}", chrono::Utc::now().format("%Y%m%d%H%M%S"));
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut admin)
        .await?;
    let (base, _) = admin_url.rsplit_once('/').unwrap_or((admin_url, ""));
    Ok(format!("{base}/{name}"))
}

/// Seeds COAs `from..to` of `customer_id` with 10 analyte rows each; every 25 share a time.
async fn seed(database_url: &str, customer_id: uuid::Uuid, from: i64, to: i64) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(database_url).await?;
    sqlx::query(
        "INSERT INTO results.samples (accession_number, customer_id, order_id, order_number, line_number, compound, \
           lot_number, test_ids, test_names, received_at) \
         SELECT 'ACC-EXPORT-' || lpad(i::text, 6, '0'), $1, gen_random_uuid(), 'ORD-EXPORT-' || (i / 10), 1, \
           'BPC-157', 'LOT-' || (i % 50), ARRAY['hplc-purity'], ARRAY['HPLC purity'], now() \
         FROM generate_series($2::bigint, $3::bigint - 1) i",
    )
    .bind(customer_id)
    .bind(from)
    .bind(to)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO results.coas (id, submission_id, accession_number, customer_id, order_id, version, status, \
           published_at, verification_code, created_at, updated_at) \
         SELECT gen_random_uuid(), gen_random_uuid(), s.accession_number, $1, s.order_id, 1, 'published', \
           timestamptz '2026-01-01 00:00:00+00' + ((i / 25) * interval '1 second'), 'CODE', now(), now() \
         FROM generate_series($2::bigint, $3::bigint - 1) i \
         JOIN results.samples s ON s.accession_number = 'ACC-EXPORT-' || lpad(i::text, 6, '0')",
    )
    .bind(customer_id)
    .bind(from)
    .bind(to)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO results.analyte_results (coa_id, customer_id, position, analyte, test_id, value, unit, loq, \
           specification, outcome, method, instrument, analyst, measured_at) \
         SELECT c.id, c.customer_id, p, 'Analyte, \"' || p || '\"', 'hplc-purity', '99.' || p, '%', '0.05', \
           '>= 98.0', 'pass', 'USP <621>', 'HPLC-01', 'bench', now() \
         FROM results.coas c CROSS JOIN generate_series(1, 10) p \
         WHERE c.customer_id = $1 AND c.accession_number >= 'ACC-EXPORT-' || lpad($2::text, 6, '0') \
           AND c.accession_number < 'ACC-EXPORT-' || lpad($3::text, 6, '0')",
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

/// Pages the whole CSV export: (rows, bytes, calls, elapsed).
async fn export_all(
    http: &reqwest::Client,
    base: &str,
    key: &str,
) -> anyhow::Result<(u64, u64, u32, Duration)> {
    let started = Instant::now();
    let (mut rows, mut bytes, mut calls, mut since) = (0u64, 0u64, 0u32, None::<String>);
    loop {
        let mut url = format!("{base}/export/coas?format=csv");
        if let Some(since) = &since {
            url.push_str(&format!("&since={}", since.replace('+', "%2B")));
        }
        let response = http.get(url).bearer_auth(key).send().await?.error_for_status()?;
        calls += 1;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let truncated = header("x-export-truncated").as_deref() == Some("true");
        let next = header("x-export-next-since");
        rows += header("x-export-row-count")
            .and_then(|count| count.parse().ok())
            .unwrap_or(0);
        let mut response = response;
        while let Some(chunk) = response.chunk().await? {
            bytes += chunk.len() as u64;
        }
        if !truncated {
            return Ok((rows, bytes, calls, started.elapsed()));
        }
        since = next;
    }
}

/// PostgreSQL's own `COPY (the export's rows) TO STDOUT (FORMAT csv)` of the same rows, bytes
/// counted: the reference of the same run.
async fn copy_reference(database_url: &str, customer_id: uuid::Uuid) -> anyhow::Result<(u64, Duration)> {
    let mut conn = PgConnection::connect(database_url).await?;
    let started = Instant::now();
    let statement = format!(
        "COPY (SELECT c.published_at, c.id, c.submission_id, c.accession_number, c.order_id, s.order_number, \
           s.compound, s.lot_number, c.version, c.status, r.analyte, r.test_id, r.value, r.qualifier, r.unit, r.loq, \
           r.lod, r.specification, r.outcome, r.method, r.instrument, r.measured_at \
         FROM results.coas c JOIN results.samples s ON s.accession_number = c.accession_number \
         JOIN results.analyte_results r ON r.coa_id = c.id WHERE c.customer_id = '{customer_id}' \
         ORDER BY c.published_at, c.id, r.position) TO STDOUT (FORMAT csv, HEADER)"
    );
    let mut stream = conn.copy_out_raw(&statement).await?;
    let mut bytes = 0u64;
    while let Some(chunk) = stream.next().await {
        bytes += chunk?.len() as u64;
    }
    Ok((bytes, started.elapsed()))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let database_url = fresh_database(&args.admin_url).await?;
    let prefix = format!("export-bench-{}", uuid::Uuid::new_v4().simple());
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
    let http = reqwest::Client::new();

    println!("Machine before: {}", machine::describe());
    println!();
    println!(
        "| Rows | calls | CSV MB | export s (best of {}) | rows/s | peak RSS MiB (process) | RSS MiB before | COPY s (reference) | COPY MB |",
        args.repeat
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut seeded_coas = 0;
    for &rows in &args.sizes {
        let coas = rows / 10;
        seed(&database_url, customer_id, seeded_coas, coas).await?;
        seeded_coas = coas;
        let (mut best, mut peak, mut before, mut result) = (Duration::MAX, 0, 0, (0, 0, 0));
        for _ in 0..args.repeat {
            reset_peak();
            before = status_kib("VmRSS:");
            let (exported, bytes, calls, elapsed) = export_all(&http, &base, &key).await?;
            peak = peak.max(status_kib("VmHWM:"));
            best = best.min(elapsed);
            result = (exported, bytes, calls);
        }
        let (copy_bytes, copy_time) = copy_reference(&database_url, customer_id).await?;
        println!(
            "| {} | {} | {:.1} | {:.2} | {:.0} | {:.1} | {:.1} | {:.2} | {:.1} |",
            result.0,
            result.2,
            result.1 as f64 / 1e6,
            best.as_secs_f64(),
            result.0 as f64 / best.as_secs_f64(),
            peak as f64 / 1024.0,
            before as f64 / 1024.0,
            copy_time.as_secs_f64(),
            copy_bytes as f64 / 1e6,
        );
    }
    println!();
    println!("Machine after: {}", machine::describe());
    mesh.stop().await;
    let mut admin = PgConnection::connect(&args.admin_url).await?;
    let name = database_url.rsplit('/').next().unwrap_or_default().to_owned();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await?;
    Ok(())
}

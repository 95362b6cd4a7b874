//! mesh_bench: the latency and throughput of the whole mesh next to PostgreSQL's own, in one run.
//!
//! `deploy/bench/mesh.sh` (or `cargo run --release -p labd --example mesh_bench -- [--seconds 10]`)
//! starts a release mesh in this process on a fresh database of the local PostgreSQL and Redis,
//! creates a customer with a key, seeds an order, then runs side by side:
//!
//! * `wrk` with 1 and with 16 connections on `GET /orders/{id}`, `GET /catalog?limit=5`,
//!   `GET /invoices` and `GET /orders`;
//! * `pgbench -S -c16 -j2` on a scratch database of the same server;
//! * the write path, `POST /quotes` then `POST /orders` (bank rail) with a fresh
//!   `Idempotency-Key`, from 16 connections (this program again, as a child process), next to
//!   `pgbench -b simple-update -c16 -j2`;
//! * the commits one order costs, from `pg_stat_database` and `pg_stat_wal` around sequential
//!   orders (net of what the idle mesh commits in the same time).
//!
//! Every row also says how much CPU each party used (this process = the mesh, the load generator,
//! PostgreSQL, Redis, everything else) so that a busy machine shows in the figures. The output
//! is Markdown, pasteable into docs/performance.md.

#![forbid(unsafe_code)]

mod machine;
mod report;
mod seed;
mod statement;
mod tools;
mod writes;

use clap::Parser;
use std::time::Duration;

/// The same allocator as the labd binary (the mesh runs in this process).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command line of the benchmark (and of its write-load child process).
#[derive(Clone, Debug, Parser)]
struct Args {
    /// Seconds of each measured run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Seconds of unmeasured load before the runs of each route.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    /// Connections of the concurrent runs.
    #[arg(long, default_value_t = 16)]
    connections: u32,
    /// Admin URL of the PostgreSQL server (the bench creates its own databases there).
    #[arg(
        long,
        env = "BENCH_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    admin_url: String,
    /// Redis (the bench uses a stream prefix of its own).
    #[arg(long, env = "BENCH_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Which part to run: `all`, `reads` or `writes`.
    #[arg(long, default_value = "all")]
    only: String,
    /// Routes of the read runs: `all`, or `order` for `GET /orders/{id}` alone (quick A/B runs).
    #[arg(long, default_value = "all")]
    routes: String,
    /// Fail (exit status 1) when a one-connection read's p50 exceeds this many milliseconds: the
    /// regression check for a latency floor such as Nagle's 40 ms.
    #[arg(long)]
    max_p50_ms: Option<f64>,
    /// Also write the Markdown report to this file (stdout carries the mesh's log lines too).
    #[arg(long)]
    report: Option<std::path::PathBuf>,
    /// Peers over loopback TCP even where labd would reach them in memory (A/B runs).
    #[arg(long)]
    tcp_peers: bool,
    /// Sequential orders placed to count commits per order.
    #[arg(long, default_value_t = 50)]
    counted_orders: u32,
    /// Internal: run as the write-load child against `--url` with `--key`.
    #[arg(long, hide = true)]
    drive_writes: bool,
    #[arg(long, hide = true, default_value = "")]
    url: String,
    #[arg(long, hide = true, default_value = "")]
    key: String,
    #[arg(long, hide = true, default_value = "")]
    quote_body: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.drive_writes {
        return writes::drive(&args);
    }
    // The mesh gets the same runtime as labd's `#[tokio::main]`.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let _telemetry = platform::telemetry::init("labd");
    tools::require_programs()?;
    let machine_before = machine::describe();
    let bench = seed::Bench::start(&args).await?;
    eprintln!(
        "mesh ready on {}; seeded order {}",
        bench.base_url, bench.order_id
    );
    let run_seconds = Duration::from_secs(args.seconds);
    let warmup = Duration::from_secs(args.warmup);
    let mut rows = Vec::new();

    if args.only != "writes" {
        let mut routes = vec![format!("/orders/{}", bench.order_id)];
        if args.routes != "order" {
            routes.extend(["/catalog?limit=5", "/invoices", "/orders"].map(str::to_owned));
        }
        for route in &routes {
            let url = format!("{}/api/v1/agent{route}", bench.base_url);
            tools::wrk(&url, &bench.key, args.connections, warmup).await?;
            for connections in [1, args.connections] {
                let label = format!("GET {} ×{connections}", route_label(route));
                let database_before = bench.database_cpu().await;
                let mut row = tools::wrk_row(&label, &url, &bench.key, connections, run_seconds).await?;
                row.database_cpu_seconds = Some(bench.database_cpu().await - database_before);
                rows.push(row);
            }
        }
        rows.push(statement::statement_row(&bench, args.connections, run_seconds).await?);
        let database = seed::pgbench_database(&args.admin_url, &bench.pg_sslmode).await?;
        rows.push(tools::pgbench_row("pgbench -S -c16 -j2", &database, &["-S"], run_seconds).await?);
    }
    let mut commits = None;
    if args.only != "reads" {
        let database_before = bench.database_cpu().await;
        let mut row = writes::load_row(&args, &bench, run_seconds).await?;
        row.database_cpu_seconds = Some(bench.database_cpu().await - database_before);
        rows.push(row);
        let database = seed::pgbench_database(&args.admin_url, &bench.pg_sslmode).await?;
        rows.push(
            tools::pgbench_row(
                "pgbench -b simple-update -c16 -j2",
                &database,
                &["-b", "simple-update"],
                run_seconds,
            )
            .await?,
        );
        commits = Some(writes::count_commits(&bench, args.counted_orders).await?);
    }
    let machine_after = machine::describe();
    let rendered = report::render(&rows, commits.as_ref(), &machine_before, &machine_after, &bench);
    println!("{rendered}");
    if let Some(path) = &args.report {
        std::fs::write(path, &rendered)?;
    }
    bench.stop().await;
    if let Some(limit) = args.max_p50_ms {
        let slow: Vec<String> = rows
            .iter()
            .filter(|row| row.label.ends_with(" ×1") && row.p50_ms.is_some_and(|p50| p50 > limit))
            .map(|row| format!("{} (p50 {:.2} ms)", row.label, row.p50_ms.unwrap_or_default()))
            .collect();
        anyhow::ensure!(
            slow.is_empty(),
            "above the p50 limit of {limit} ms: {}",
            slow.join(", ")
        );
    }
    Ok(())
}

/// The route as the table shows it (the seeded order's id shortened to `{id}`).
fn route_label(route: &str) -> String {
    if route.starts_with("/orders/") {
        "/orders/{id}".to_owned()
    } else {
        route.to_owned()
    }
}

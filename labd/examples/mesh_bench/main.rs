//! mesh_bench: the latency and throughput of the whole mesh next to PostgreSQL's own, in one run.
//!
//! `deploy/bench/mesh.sh` (or `cargo run --release -p labd --example mesh_bench -- [--seconds 10]`)
//! starts a release mesh in this process on a fresh database of the local PostgreSQL and Redis,
//! creates a customer with a key, seeds an order, then runs side by side:
//!
//! * `wrk` with 1 and with 16 connections on `GET /orders/{id}`, its MCP twin `tools/call
//!   svc.order.get` (`POST /api/mcp`), `GET /catalog?limit=5`, `GET /invoices` and `GET /orders`;
//! * `pgbench -S -c16 -j2` on a scratch database of the same server;
//! * the write path, `POST /quotes` then `POST /orders` (bank rail) with a fresh
//!   `Idempotency-Key`, from 16 connections (this program again, as a child process), next to
//!   `pgbench -b simple-update -c16 -j2`;
//! * the commits one order costs, from `pg_stat_database` and `pg_stat_wal` around sequential
//!   orders (net of what the idle mesh commits in the same time);
//! * card checkout settlement: sequential payments of card orders on the hosted page with the
//!   sandbox's success card, timed from the pay request to its answer (the payment, the invoice
//!   `paid` and `invoice.updated` commit in that request).
//!
//! The bench key has a spend envelope (`--spend-envelope on`, the default), so every order runs
//! the whole enforcement; `--spend-envelope off` runs the same load with a key without one (the
//! sandbox allows those: the commitment is written, no cap is checked) for the A/B figure, and
//! `--spend-envelope both` runs the write load with both keys in turn in the same run.
//!
//! Every row also says how much CPU each party used (this process = the mesh, the load generator,
//! PostgreSQL, Redis, everything else) so that a busy machine shows in the figures. The output
//! is Markdown, pasteable into docs/performance.md.

#![forbid(unsafe_code)]

mod checkout;
mod machine;
mod mcp;
mod pgbench;
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
    /// Which part to run: `all`, `reads`, `writes` or `checkout`; `serve` seeds the mesh, prints
    /// the URLs, the key and a wrk script of the MCP read, and serves until interrupted (for
    /// profiling a load by hand with `perf`).
    #[arg(long, default_value = "all")]
    only: String,
    /// Routes of the read runs: `all`, or `order` for `GET /orders/{id}` and its MCP twin alone
    /// (quick A/B runs).
    #[arg(long, default_value = "all")]
    routes: String,
    /// Rounds of the `GET /orders/{id}` and MCP pair: each round measures both at 1 and at
    /// `--connections` connections, taking turns (REST first in odd rounds, MCP first in even
    /// ones) so that a machine that drifts weighs on both alike. The report adds each round's
    /// ratios, their pooled figures and, from six rounds on, a verdict from the 95 % interval of
    /// the rounds' median ratio (met, missed, or undecided when the interval straddles the
    /// target). Many short rounds (`--rounds 30 --seconds 2`) pair the loads closest in time.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// With `--rounds`: run the pair at the same time instead of in turn, each with half the
    /// connections (1 and 1, then `--connections`/2 each), so that whatever else the machine
    /// does weighs on both alike within each second; the table's CPU columns are then those
    /// of the two loads together.
    #[arg(long)]
    together: bool,
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
    /// `on`: the bench key has a spend envelope (caps far above the load); `off`: it has none;
    /// `both`: the write load runs with each (on, off, off, on) in the same mesh.
    #[arg(long, default_value = "on")]
    spend_envelope: String,
    /// Card payments settled (sequentially) for the checkout settlement row.
    #[arg(long, default_value_t = 100)]
    checkout_payments: u32,
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
    if args.only == "serve" {
        return serve(bench).await;
    }
    let run_seconds = Duration::from_secs(args.seconds);
    let mut rows = Vec::new();

    if args.only == "all" || args.only == "reads" {
        let mut routes = vec![format!("/orders/{}", bench.order_id)];
        if args.routes != "order" {
            routes.extend(["/catalog?limit=5", "/invoices", "/orders"].map(str::to_owned));
        }
        for route in &routes {
            let url = format!("{}/api/v1/agent{route}", bench.base_url);
            let label = format!("GET {}", route_label(route));
            let rest = tools::Load::get(&url);
            if !route.starts_with("/orders/") {
                measure(&bench, &args, &mut rows, &label, rest).await?;
                continue;
            }
            // The same read through MCP, measured next to its REST twin.
            let mcp_url = format!("{}/api/mcp", bench.base_url);
            let script = mcp::order_get_script(&bench).await?;
            let mcp = tools::Load {
                url: &mcp_url,
                script: Some(&script),
            };
            if args.rounds <= 1 {
                measure(&bench, &args, &mut rows, &label, rest).await?;
                measure(&bench, &args, &mut rows, mcp::ORDER_GET_LABEL, mcp).await?;
            } else {
                let pair = [(label.as_str(), rest), (mcp::ORDER_GET_LABEL, mcp)];
                measure_rounds(&bench, &args, &mut rows, pair).await?;
            }
            let _ = std::fs::remove_file(&script);
        }
        rows.push(statement::statement_row(&bench, args.connections, run_seconds).await?);
        let database = pgbench::scratch_database(&args.admin_url, &bench.pg_sslmode).await?;
        rows.push(tools::pgbench_row("pgbench -S -c16 -j2", &database, &["-S"], run_seconds).await?);
    }
    let mut commits = None;
    if args.only == "all" || args.only == "writes" {
        // `--spend-envelope both`: the enveloped key and the key without one take turns
        // (on, off, off, on), each run next to its own pgbench, so that the database growing
        // under the load weighs on both alike.
        let runs: Vec<(&str, Option<&str>)> = match &bench.open_key {
            Some(open) => vec![
                (bench.key.as_str(), Some("envelope enforced")),
                (open.as_str(), Some("no envelope")),
                (open.as_str(), Some("no envelope")),
                (bench.key.as_str(), Some("envelope enforced")),
            ],
            None => vec![(bench.key.as_str(), None)],
        };
        for (key, note) in runs {
            let database_before = bench.database_cpu().await;
            let mut row = writes::load_row(&args, &bench, key, note, run_seconds).await?;
            row.database_cpu_seconds = Some(bench.database_cpu().await - database_before);
            rows.push(row);
            let database = pgbench::scratch_database(&args.admin_url, &bench.pg_sslmode).await?;
            rows.push(
                tools::pgbench_row(
                    "pgbench -b simple-update -c16 -j2",
                    &database,
                    &["-b", "simple-update"],
                    run_seconds,
                )
                .await?,
            );
        }
        commits = Some(writes::count_commits(&bench, args.counted_orders).await?);
    }
    if args.only == "all" || args.only == "checkout" {
        rows.push(checkout::settlement_row(&bench, args.checkout_payments).await?);
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

/// Warms `load` up, then measures it with 1 and with `--connections` connections (rows labelled
/// `<label> ×<connections>`).
async fn measure(
    bench: &seed::Bench,
    args: &Args,
    rows: &mut Vec<report::Row>,
    label: &str,
    load: tools::Load<'_>,
) -> anyhow::Result<()> {
    warm_up(bench, args, load).await?;
    for connections in [1, args.connections] {
        let label = format!("{label} ×{connections}");
        rows.push(measured_row(bench, args, &label, load, connections).await?);
    }
    Ok(())
}

/// Unmeasured load on `load` for `--warmup` seconds at `--connections` connections.
async fn warm_up(bench: &seed::Bench, args: &Args, load: tools::Load<'_>) -> anyhow::Result<()> {
    let warmup = Duration::from_secs(args.warmup);
    tools::wrk(load, &bench.key, args.connections, warmup).await
}

/// One measured `wrk` run of `--seconds`, with the CPU the mesh's PostgreSQL backends spent.
async fn measured_row(
    bench: &seed::Bench,
    args: &Args,
    label: &str,
    load: tools::Load<'_>,
    connections: u32,
) -> anyhow::Result<report::Row> {
    let database_before = bench.database_cpu().await;
    let seconds = Duration::from_secs(args.seconds);
    let mut row = tools::wrk_row(label, load, &bench.key, connections, seconds).await?;
    row.database_cpu_seconds = Some(bench.database_cpu().await - database_before);
    Ok(row)
}

/// `--only serve`: the seeded mesh, until Ctrl-C.
async fn serve(bench: seed::Bench) -> anyhow::Result<()> {
    let script = mcp::order_get_script(&bench).await?;
    println!("pid {}", std::process::id());
    println!("key {}", bench.key);
    println!("rest {}/api/v1/agent/orders/{}", bench.base_url, bench.order_id);
    println!("mcp {}/api/mcp (wrk script {})", bench.base_url, script.display());
    tokio::signal::ctrl_c().await?;
    let _ = std::fs::remove_file(&script);
    bench.stop().await;
    Ok(())
}

/// Warms both loads of `pair` up, then measures them in `--rounds` rounds, taking turns (rows
/// labelled `<label> ×<connections> (round <n>)`).
async fn measure_rounds(
    bench: &seed::Bench,
    args: &Args,
    rows: &mut Vec<report::Row>,
    pair: [(&str, tools::Load<'_>); 2],
) -> anyhow::Result<()> {
    for (_, load) in pair {
        warm_up(bench, args, load).await?;
    }
    for round in 1..=args.rounds {
        if args.together {
            for connections in [1, (args.connections / 2).max(1)] {
                let [(first, first_load), (second, second_load)] = pair;
                let first = format!("{first} ×{connections} (round {round}, together)");
                let second = format!("{second} ×{connections} (round {round}, together)");
                let seconds = Duration::from_secs(args.seconds);
                let database_before = bench.database_cpu().await;
                let (first_row, second_row) = tokio::join!(
                    tools::wrk_row(&first, first_load, &bench.key, connections, seconds),
                    tools::wrk_row(&second, second_load, &bench.key, connections, seconds),
                );
                let database = bench.database_cpu().await - database_before;
                for mut row in [first_row?, second_row?] {
                    row.database_cpu_seconds = Some(database);
                    rows.push(row);
                }
            }
            continue;
        }
        for connections in [1, args.connections] {
            let mut turn = pair;
            if round % 2 == 0 {
                turn.reverse();
            }
            for (label, load) in turn {
                let label = format!("{label} ×{connections} (round {round})");
                rows.push(measured_row(bench, args, &label, load, connections).await?);
            }
        }
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

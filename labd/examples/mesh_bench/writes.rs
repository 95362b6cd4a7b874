//! The write path: `POST /quotes` then `POST /orders` (bank rail, a fresh `Idempotency-Key`)
//! from many connections, driven by this program again as a child process (so that its CPU
//! is the load generator's, not the mesh's); and the commits one order costs.

use crate::report::{Commits, Row};
use crate::seed::{Bench, order_body};
use crate::{Args, machine};
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use std::time::{Duration, Instant};

/// Runs the write load as a child process with the API key `key` and returns its row, labelled
/// with `note` (what the key is) when given.
pub async fn load_row(
    args: &Args,
    bench: &Bench,
    key: &str,
    note: Option<&str>,
    duration: Duration,
) -> anyhow::Result<Row> {
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .arg("--drive-writes")
        .arg(format!("--url={}", bench.base_url))
        .arg(format!("--key={key}"))
        .arg(format!("--quote-body={}", bench.quote_body))
        .arg(format!("--connections={}", args.connections))
        .arg(format!("--seconds={}", duration.as_secs()))
        .arg(format!("--warmup={}", args.warmup));
    let before = machine::sample();
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    let usage = machine::sample().usage_since(&before);
    anyhow::ensure!(
        output.status.success(),
        "the write driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout)?;
    let number = |name: &str| result[name].as_f64().unwrap_or_default();
    Ok(Row {
        label: match note {
            Some(note) => format!("POST /quotes + POST /orders ×{}, {note}", args.connections),
            None => format!("POST /quotes + POST /orders ×{}", args.connections),
        },
        unit: "orders/s",
        rate: number("orders") / number("seconds").max(1e-9),
        count: number("orders"),
        p50_ms: Some(number("p50_ms")),
        p99_ms: Some(number("p99_ms")),
        average_ms: None,
        errors: number("errors") as u64,
        usage,
        database_cpu_seconds: None,
    })
}

/// The child process: quote-then-order loops on `--connections` connections; prints one JSON
/// line (`orders`, `errors`, `seconds`, `p50_ms`, `p99_ms` of the quote + order pair).
pub fn drive(args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(drive_loops(args))?;
    println!("{result}");
    Ok(())
}

async fn drive_loops(args: &Args) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(args.connections as usize)
        .build()?;
    let quote_body: Value = serde_json::from_str(&args.quote_body)?;
    let start = Instant::now() + Duration::from_secs(args.warmup);
    let end = start + Duration::from_secs(args.seconds);
    let loops = (0..args.connections).map(|connection| {
        let (http, quote_body) = (http.clone(), quote_body.clone());
        let (url, key) = (args.url.clone(), args.key.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            for round in 0u64.. {
                let began = Instant::now();
                if began >= end {
                    break;
                }
                let idempotency_key = format!("bench-{}-{connection}-{round}", std::process::id());
                let placed = quote_and_order(&http, &url, &key, &quote_body, &idempotency_key).await;
                if began >= start {
                    match placed {
                        Ok(()) => latencies.push(began.elapsed()),
                        Err(_) => errors += 1,
                    }
                }
            }
            (latencies, errors)
        })
    });
    let mut latencies = Vec::new();
    let mut errors = 0;
    for joined in futures::future::join_all(loops).await {
        let (mut own, own_errors) = joined?;
        latencies.append(&mut own);
        errors += own_errors;
    }
    latencies.sort();
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map(|latency| latency.as_secs_f64() * 1000.0)
            .unwrap_or_default()
    };
    Ok(json!({
        "orders": latencies.len(),
        "errors": errors,
        "seconds": args.seconds,
        "p50_ms": percentile(0.50),
        "p99_ms": percentile(0.99),
    }))
}

async fn quote_and_order(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    quote_body: &Value,
    idempotency_key: &str,
) -> anyhow::Result<()> {
    let quote = http
        .post(format!("{url}/api/v1/agent/quotes"))
        .bearer_auth(key)
        .json(quote_body)
        .send()
        .await?
        .error_for_status()?
        .json::<Value>()
        .await?;
    let quote_id = quote["data"]["quote"]["id"].as_str().unwrap_or_default();
    http.post(format!("{url}/api/v1/agent/orders"))
        .bearer_auth(key)
        .header("Idempotency-Key", idempotency_key)
        .json(&order_body(quote_id))
        .send()
        .await?
        .error_for_status()?;
    Ok(())
}

/// Commit counters: this database's transactions, and the server's transaction ids and WAL
/// flushes (server-wide: exact only when nothing else writes).
#[derive(Clone, Copy, Debug)]
struct Counters {
    at: Instant,
    transactions: f64,
    xids: f64,
    wal_flushes: f64,
}

async fn counters(database_url: &str) -> anyhow::Result<Counters> {
    // A fresh connection each time: statistics are read as of the start of a transaction.
    let mut connection = PgConnection::connect(database_url).await?;
    let (transactions, xids, wal_flushes): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()), \
                pg_snapshot_xmax(pg_current_snapshot())::text::bigint, \
                (SELECT wal_sync FROM pg_stat_wal)",
    )
    .fetch_one(&mut connection)
    .await?;
    connection.close().await?;
    Ok(Counters {
        at: Instant::now(),
        transactions: transactions as f64,
        xids: xids as f64,
        wal_flushes: wal_flushes as f64,
    })
}

/// Waits (at most 60 s) until the mesh has worked off the events of earlier load: its
/// transactions per second settle below a few per second, or stop falling.
async fn quiet_down(database_url: &str) -> anyhow::Result<()> {
    let mut previous = f64::MAX;
    for _ in 0..30 {
        let start = counters(database_url).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let end = counters(database_url).await?;
        let rate = (end.transactions - start.transactions) / end.at.duration_since(start.at).as_secs_f64();
        if rate < 10.0 || rate > previous * 0.9 {
            return Ok(());
        }
        previous = rate;
    }
    Ok(())
}

/// Places `orders` orders one after another and counts what they cost, net of what the idle
/// mesh (relays, consumers, housekeeping) does in the same time.
pub async fn count_commits(bench: &Bench, orders: u32) -> anyhow::Result<Commits> {
    let settle = Duration::from_secs(3);
    quiet_down(&bench.database_url).await?;
    let idle_start = counters(&bench.database_url).await?;
    tokio::time::sleep(settle).await;
    let idle_end = counters(&bench.database_url).await?;
    let idle_seconds = idle_end.at.duration_since(idle_start.at).as_secs_f64();
    let rate = |pick: fn(&Counters) -> f64| (pick(&idle_end) - pick(&idle_start)) / idle_seconds;

    let start = counters(&bench.database_url).await?;
    for index in 0..orders.max(1) {
        bench.place_order(&format!("bench-counted-{index}")).await?;
    }
    // Relays and consumers finish the orders' events.
    tokio::time::sleep(settle).await;
    let end = counters(&bench.database_url).await?;
    let seconds = end.at.duration_since(start.at).as_secs_f64();
    let per_order = |pick: fn(&Counters) -> f64| {
        ((pick(&end) - pick(&start)) - rate(pick) * seconds) / f64::from(orders.max(1))
    };
    Ok(Commits {
        orders,
        transactions: per_order(|c| c.transactions),
        xids: per_order(|c| c.xids),
        wal_flushes: per_order(|c| c.wal_flushes),
        idle_transactions_per_second: rate(|c| c.transactions),
    })
}

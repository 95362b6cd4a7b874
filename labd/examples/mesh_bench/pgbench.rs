//! PostgreSQL's own figure on the same server, the reference the benchmarks' rows are read
//! against: a scratch database initialised by `pgbench -i`, a measured `pgbench` run, and the
//! parsing of its report. Self-contained (no `crate::` paths), so that the results benchmark
//! uses it too (`#[path = "mesh_bench/pgbench.rs"]`).

use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::process::Command;
use std::time::Duration;

/// The scratch database of pgbench.
pub const PGBENCH_DATABASE: &str = "mesh_bench_pgbench";

/// `url` with its database name replaced by `name` (query kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (address, query) = url.split_once('?').unwrap_or((url, ""));
    let base = address.rsplit_once('/').map(|(base, _)| base).unwrap_or(address);
    if query.is_empty() {
        format!("{base}/{name}")
    } else {
        format!("{base}/{name}?{query}")
    }
}

/// Initialises pgbench's scratch database afresh (scale 1; `pgbench -i` recreates its tables)
/// and returns its URL with `sslmode`. The database itself is kept between runs: dropping a
/// database forces a checkpoint, which takes tens of seconds on a busy disk.
pub async fn scratch_database(admin_url: &str, sslmode: &str) -> anyhow::Result<String> {
    let mut admin = PgConnection::connect(admin_url).await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(PGBENCH_DATABASE)
        .fetch_optional(&mut admin)
        .await?;
    if exists.is_none() {
        let statement = format!("CREATE DATABASE \"{PGBENCH_DATABASE}\"");
        sqlx::raw_sql(AssertSqlSafe(statement))
            .execute(&mut admin)
            .await?;
    }
    let base = with_database(admin_url, PGBENCH_DATABASE);
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}sslmode={sslmode}");
    let status = tokio::task::spawn_blocking({
        let url = url.clone();
        move || {
            Command::new("pgbench")
                .args(["-i", "-q", "-s", "1"])
                .arg(&url)
                .output()
        }
    })
    .await??;
    anyhow::ensure!(
        status.status.success(),
        "pgbench -i failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    Ok(url)
}

/// What one pgbench run reported.
#[derive(Debug, PartialEq)]
pub struct Pgbench {
    pub tps: f64,
    pub transactions: f64,
    pub latency_ms: f64,
}

/// One `pgbench` run with `options` (e.g. `-S`) at 16 clients on 2 threads for `duration`,
/// returning once its server processes have exited.
pub async fn run(database_url: &str, options: &[&str], duration: Duration) -> anyhow::Result<Pgbench> {
    let mut command = Command::new("pgbench");
    command
        .args(options)
        .args(["-c16", "-j2", "-n"])
        .arg(format!("-T{}", duration.as_secs().max(1)))
        .arg(database_url);
    let shown = format!("{command:?}");
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    anyhow::ensure!(
        output.status.success(),
        "{shown} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    wait_for_backends_to_exit(database_url).await;
    parse(&text).ok_or_else(|| anyhow::anyhow!("unreadable pgbench output:\n{text}"))
}

/// Waits (at most 2 s) until pgbench's server processes have exited, so that the CPU they used
/// has been added to the postmaster's and shows in PostgreSQL's column.
async fn wait_for_backends_to_exit(database_url: &str) {
    let Ok(mut connection) = PgConnection::connect(database_url).await else {
        return;
    };
    for _ in 0..40 {
        let others: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut connection)
        .await
        .unwrap_or_default();
        if others == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = connection.close().await;
}

fn parse(text: &str) -> Option<Pgbench> {
    let mut result = Pgbench {
        tps: 0.0,
        transactions: 0.0,
        latency_ms: 0.0,
    };
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("tps = ") {
            result.tps = rest.split_whitespace().next()?.parse().ok()?;
        } else if let Some(rest) = line.strip_prefix("latency average = ") {
            result.latency_ms = rest.split_whitespace().next()?.parse().ok()?;
        } else if let Some(rest) = line.strip_prefix("number of transactions actually processed: ") {
            result.transactions = rest.split('/').next()?.parse().ok()?;
        }
    }
    (result.tps > 0.0).then_some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_reports_parse() {
        let text = "number of transactions actually processed: 123456\n\
                    latency average = 1.296 ms\n\
                    tps = 12345.678901 (without initial connection time)\n";
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.tps, 12345.678901);
        assert_eq!(parsed.transactions, 123456.0);
        assert_eq!(parsed.latency_ms, 1.296);
    }
}

//! The external load generators: `wrk` on a route of the gateway and `pgbench` on a scratch
//! database (`crate::pgbench`), each run as a child process off the mesh's runtime threads, with
//! their output parsed into a table row.

use crate::machine;
use crate::report::Row;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Fails early, with the fix, when a load generator is missing.
pub fn require_programs() -> anyhow::Result<()> {
    for (program, package) in [
        ("wrk", "wrk"),
        ("pgbench", "postgresql (pgbench ships with the server)"),
    ] {
        let found = Command::new(program).arg("--version").output().is_ok();
        anyhow::ensure!(
            found,
            "`{program}` is missing: install the Debian package {package} (deploy/bench/mesh.sh does)"
        );
    }
    Ok(())
}

/// Runs a command to completion on a blocking thread and returns its standard output.
async fn output(mut command: Command) -> anyhow::Result<String> {
    let shown = format!("{command:?}");
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    anyhow::ensure!(
        output.status.success(),
        "{shown} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// What `wrk` sends: a GET of `url`, or (with `script`) the request that wrk Lua script sets up.
#[derive(Clone, Copy)]
pub struct Load<'a> {
    pub url: &'a str,
    pub script: Option<&'a Path>,
}

impl<'a> Load<'a> {
    /// `GET url`.
    pub fn get(url: &'a str) -> Self {
        Self { url, script: None }
    }
}

fn wrk_command(load: Load<'_>, key: &str, connections: u32, duration: Duration) -> Command {
    let mut command = Command::new("wrk");
    command
        .arg(format!("-t{}", connections.clamp(1, 2)))
        .arg(format!("-c{connections}"))
        .arg(format!("-d{}s", duration.as_secs().max(1)))
        .arg("--latency")
        .arg("-H")
        .arg(format!("Authorization: Bearer {key}"));
    if let Some(script) = load.script {
        command.arg("-s").arg(script);
    }
    command.arg(load.url);
    command
}

/// Writes a wrk Lua script that POSTs `body` as JSON with `headers` (the MCP runs), and returns
/// its path in the temporary directory.
pub fn post_script(name: &str, body: &str, headers: &[(&str, &str)]) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(!body.contains("]]"), "the body cannot sit in a Lua long string");
    let mut script = format!(
        "wrk.method = \"POST\"\nwrk.body = [[{body}]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"
    );
    for (header, value) in headers {
        script.push_str(&format!("wrk.headers[\"{header}\"] = \"{value}\"\n"));
    }
    let path = std::env::temp_dir().join(format!("mesh-bench-{}-{name}.lua", std::process::id()));
    std::fs::write(&path, script)?;
    Ok(path)
}

/// Loads without measuring (warm-up).
pub async fn wrk(load: Load<'_>, key: &str, connections: u32, duration: Duration) -> anyhow::Result<()> {
    if !duration.is_zero() {
        output(wrk_command(load, key, connections, duration)).await?;
    }
    Ok(())
}

/// One measured `wrk` run.
pub async fn wrk_row(
    label: &str,
    load: Load<'_>,
    key: &str,
    connections: u32,
    duration: Duration,
) -> anyhow::Result<Row> {
    let before = machine::sample();
    let text = output(wrk_command(load, key, connections, duration)).await?;
    let usage = machine::sample().usage_since(&before);
    let parsed = parse_wrk(&text).ok_or_else(|| anyhow::anyhow!("unreadable wrk output:\n{text}"))?;
    Ok(Row {
        label: label.to_owned(),
        unit: "req/s",
        rate: parsed.rate,
        count: parsed.requests,
        p50_ms: Some(parsed.p50_ms),
        p99_ms: Some(parsed.p99_ms),
        average_ms: None,
        errors: parsed.errors,
        usage,
        database_cpu_seconds: None,
    })
}

/// One measured `pgbench` run with `options` (e.g. `-S`) at 16 clients on 2 threads.
pub async fn pgbench_row(
    label: &str,
    database_url: &str,
    options: &[&str],
    duration: Duration,
) -> anyhow::Result<Row> {
    let before = machine::sample();
    let parsed = crate::pgbench::run(database_url, options, duration).await?;
    let usage = machine::sample().usage_since(&before);
    Ok(Row {
        label: label.to_owned(),
        unit: "TPS",
        rate: parsed.tps,
        count: parsed.transactions,
        p50_ms: None,
        p99_ms: None,
        average_ms: Some(parsed.latency_ms),
        errors: 0,
        usage,
        database_cpu_seconds: None,
    })
}

#[derive(Debug, PartialEq)]
struct WrkResult {
    rate: f64,
    requests: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn parse_wrk(text: &str) -> Option<WrkResult> {
    let mut result = WrkResult {
        rate: 0.0,
        requests: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        errors: 0,
    };
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["50%", value] => result.p50_ms = milliseconds(value)?,
            ["99%", value] => result.p99_ms = milliseconds(value)?,
            ["Requests/sec:", value] => result.rate = value.parse().ok()?,
            [count, "requests", "in", ..] => result.requests = count.parse().ok()?,
            ["Non-2xx", "or", "3xx", "responses:", count] => result.errors += count.parse::<u64>().ok()?,
            ["Socket", "errors:", ..] => {
                result.errors += line
                    .split(|c: char| !c.is_ascii_digit())
                    .filter_map(|n| n.parse::<u64>().ok())
                    .sum::<u64>()
            }
            _ => {}
        }
    }
    (result.rate > 0.0).then_some(result)
}

/// `635.00us`, `1.23ms`, `2.00s` in milliseconds.
fn milliseconds(value: &str) -> Option<f64> {
    let split = value.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    Some(match unit {
        "us" => number / 1000.0,
        "ms" => number,
        "s" => number * 1000.0,
        "m" => number * 60_000.0,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_reports_parse_into_milliseconds_and_errors() {
        let text = "Running 10s test @ http://127.0.0.1:1/x\n  1 threads and 1 connections\n  \
                    Latency Distribution\n     50%  635.00us\n     75%    1.00ms\n     99%    2.50ms\n  \
                    6999 requests in 10.00s, 1.00MB read\n  Non-2xx or 3xx responses: 3\n\
                    Requests/sec:    699.90\nTransfer/sec:    100.00KB\n";
        let parsed = parse_wrk(text).unwrap();
        assert_eq!(parsed.p50_ms, 0.635);
        assert_eq!(parsed.p99_ms, 2.5);
        assert_eq!(parsed.rate, 699.9);
        assert_eq!(parsed.requests, 6999.0);
        assert_eq!(parsed.errors, 3);
    }
}

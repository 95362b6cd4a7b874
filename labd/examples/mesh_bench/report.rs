//! The benchmark's Markdown report: one row per run with CPU use by party, the ratios the
//! targets are stated in, the commits one order costs, and the machine's state.

use crate::machine::Usage;
use crate::seed::Bench;
use std::fmt::Write;

/// Label of the MCP rows (the report compares them with `GET /orders/{id}`).
pub const ORDER_GET_LABEL: &str = "tools/call svc.order.get";

/// The MCP budget against REST (issue 26; issue 8's targets were 1.05× and 0.95×): MCP's p50 at
/// one connection at most this many times REST's.
const MCP_P50_BUDGET: f64 = 1.15;
/// The MCP budget against REST: MCP's throughput at `--connections` at least this share of REST's.
const MCP_RATE_BUDGET: f64 = 0.85;

/// One measured run.
#[derive(Clone, Debug)]
pub struct Row {
    pub label: String,
    /// `req/s`, `queries/s`, `TPS` or `orders/s`.
    pub unit: &'static str,
    pub rate: f64,
    /// Requests, transactions or orders completed in the run.
    pub count: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// pgbench reports only the average.
    pub average_ms: Option<f64>,
    pub errors: u64,
    pub usage: Usage,
    /// CPU seconds of the PostgreSQL backends serving the mesh's database during the run.
    pub database_cpu_seconds: Option<f64>,
}

/// What one order costs in the database, per order, net of the idle mesh.
#[derive(Clone, Debug)]
pub struct Commits {
    pub orders: u32,
    /// Transactions committed in the mesh's database (read-only ones included).
    pub transactions: f64,
    /// Transaction ids assigned server-wide: the transactions that wrote.
    pub xids: f64,
    /// WAL flushes server-wide (fsyncs of commits; group commit can merge several).
    pub wal_flushes: f64,
    pub idle_transactions_per_second: f64,
}

fn milliseconds(value: Option<f64>) -> String {
    value
        .map(|ms| format!("{ms:.2} ms"))
        .unwrap_or_else(|| "—".to_owned())
}

/// The runs of `label` at one connection (`one`) or at more, in order: rows labelled
/// `<label> ×<connections>`, with ` (round <n>)` after it in a run of several rounds.
fn runs<'a>(rows: &'a [Row], label: &str, one: bool) -> Vec<&'a Row> {
    rows.iter()
        .filter(|row| {
            let Some(rest) = row
                .label
                .strip_prefix(label)
                .and_then(|rest| rest.strip_prefix(" ×"))
            else {
                return false;
            };
            let connections = rest.split(' ').next().unwrap_or_default();
            !connections.is_empty()
                && connections.bytes().all(|byte| byte.is_ascii_digit())
                && (connections == "1") == one
        })
        .collect()
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0.0), |(sum, count), value| (sum + value, count + 1.0));
    sum / count
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// A distribution-free 95 % confidence interval for the median of `values` (the rounds' paired
/// ratios): the `k`-th smallest and the `k`-th largest value, with `k` the largest rank such
/// that a binomial(n, ½) count falls below it with probability at most 2.5 %. `None` below six
/// values, where no such `k` exists.
fn median_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    // P(count ≤ j) for j = 0, 1, …: the first j where it passes 2.5 % gives k = j.
    let mut probability = 0.5_f64.powi(i32::try_from(n).ok()?);
    let mut below = 0.0;
    let mut k = 0;
    for j in 0..n {
        below += probability;
        if below > 0.025 {
            break;
        }
        k = j + 1;
        // C(n, j + 1) / C(n, j) = (n - j) / (j + 1).
        probability *= (n - j) as f64 / (j + 1) as f64;
    }
    (k >= 1).then(|| (sorted[k - 1], sorted[n - k]))
}

/// The verdict on a target from the rounds' paired ratios: met only when the whole 95 % interval
/// of their median meets it, missed only when none of it does, and undecided (the machine's noise
/// is larger than the gap) in between; with fewer than six rounds, `estimate` alone decides.
fn verdict(estimate: f64, ratios: &[f64], meets: impl Fn(f64) -> bool) -> String {
    match median_interval(ratios) {
        None if meets(estimate) => "✔".to_owned(),
        None => "✘".to_owned(),
        Some((low, high)) => {
            let mark = match (meets(low), meets(high)) {
                (true, true) => "✔",
                (false, false) => "✘",
                _ => "undecided",
            };
            format!("{mark} (95 % interval of the rounds' median {low:.3}–{high:.3})")
        }
    }
}

fn find<'a>(rows: &'a [Row], prefix: &str) -> Option<&'a Row> {
    rows.iter().find(|row| row.label.starts_with(prefix))
}

/// Renders the whole report.
pub fn render(
    rows: &[Row],
    commits: Option<&Commits>,
    machine_before: &str,
    machine_after: &str,
    bench: &Bench,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| Run | Rate | p50 | p99 | Errors | CPU per request: mesh / its PostgreSQL backends | Cores used: mesh / load generator / PostgreSQL / Redis / rest of the machine |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for row in rows {
        let latency_p50 = match (row.p50_ms, row.average_ms) {
            (Some(p50), _) => milliseconds(Some(p50)),
            (None, Some(average)) => format!("avg {}", milliseconds(Some(average))),
            (None, None) => "—".to_owned(),
        };
        let cpu_per_request = if row.unit == "TPS" || row.count <= 0.0 {
            "—".to_owned()
        } else if row.label.ends_with(", together)") {
            // The CPU of both loads that ran at once: not one route's.
            "— (both loads)".to_owned()
        } else {
            let unit = match row.unit {
                "orders/s" => "order",
                "queries/s" => "query",
                _ => "req",
            };
            let done = (row.rate * row.usage.seconds).max(1.0);
            let database = row
                .database_cpu_seconds
                .map(|seconds| format!("{:.0}", seconds * 1e6 / done))
                .unwrap_or_else(|| "—".to_owned());
            format!(
                "{:.0} / {database} µs/{unit}",
                row.usage.mesh_cpu_seconds * 1e6 / done
            )
        };
        let usage = &row.usage;
        let _ = writeln!(
            out,
            "| {} | {:.0} {} | {} | {} | {} | {} | {:.2} / {:.2} / {:.2} / {:.2} / {:.2} |",
            row.label,
            row.rate,
            row.unit,
            latency_p50,
            milliseconds(row.p99_ms),
            row.errors,
            cpu_per_request,
            usage.mesh,
            usage.load,
            usage.postgres,
            usage.redis,
            usage.other
        );
    }
    let _ = writeln!(out);
    let rest_one = runs(rows, "GET /orders/{id}", true);
    let rest_many = runs(rows, "GET /orders/{id}", false);
    let many = rest_many.first().copied();
    let select = find(rows, "pgbench -S");
    let writes = find(rows, "POST /quotes");
    let update = find(rows, "pgbench -b simple-update");
    if !rest_one.is_empty() {
        let p50 = median(rest_one.iter().filter_map(|row| row.p50_ms));
        let verdict = if p50 <= 2.0 { "✔" } else { "✘" };
        let _ = writeln!(
            out,
            "* `GET /orders/{{id}}`, 1 connection: p50 {p50:.2} ms (target ≤ 2 ms {verdict})"
        );
    }
    if let (false, Some(select)) = (rest_many.is_empty(), select) {
        let rate = mean(rest_many.iter().map(|row| row.rate));
        let ratio = rate / select.rate;
        let verdict = if ratio >= 0.25 { "✔" } else { "✘" };
        let _ = writeln!(
            out,
            "* `GET /orders/{{id}}`, 16 connections: {rate:.0} req/s = **{ratio:.3}×** `pgbench -S -c16 -j2` ({:.0} TPS) (target ≥ 0.25× {verdict})",
            select.rate
        );
    }
    let mcp_label = ORDER_GET_LABEL;
    let mcp_one = runs(rows, mcp_label, true);
    let mcp_many = runs(rows, mcp_label, false);
    let each = |ratios: &[f64]| {
        if ratios.len() < 2 {
            return String::new();
        }
        let listed: Vec<String> = ratios.iter().map(|ratio| format!("{ratio:.3}")).collect();
        format!("; {} rounds: {}", ratios.len(), listed.join(", "))
    };
    if !rest_one.is_empty() && !mcp_one.is_empty() {
        // Each round's MCP p50 over its REST p50; the verdict on their median.
        let ratios: Vec<f64> = rest_one
            .iter()
            .zip(&mcp_one)
            .map(|(rest, mcp)| mcp.p50_ms.unwrap_or_default() / rest.p50_ms.unwrap_or(f64::NAN))
            .collect();
        let ratio = median(ratios.iter().copied());
        let verdict = verdict(ratio, &ratios, |ratio| ratio <= MCP_P50_BUDGET);
        let _ = writeln!(
            out,
            "* MCP `{mcp_label}` vs `GET /orders/{{id}}`, 1 connection: p50 {:.2} ms vs {:.2} ms = **{ratio:.3}×** (target ≤ {MCP_P50_BUDGET:.2}×: {verdict}{})",
            median(mcp_one.iter().filter_map(|row| row.p50_ms)),
            median(rest_one.iter().filter_map(|row| row.p50_ms)),
            each(&ratios)
        );
    }
    if !rest_many.is_empty() && !mcp_many.is_empty() {
        // The rounds pooled: every MCP request over every REST request (equal durations).
        let ratios: Vec<f64> = rest_many
            .iter()
            .zip(&mcp_many)
            .map(|(rest, mcp)| mcp.rate / rest.rate)
            .collect();
        let (rest_rate, mcp_rate) = (
            mean(rest_many.iter().map(|row| row.rate)),
            mean(mcp_many.iter().map(|row| row.rate)),
        );
        let ratio = mcp_rate / rest_rate;
        // The rate pooled; the verdict from the rounds' paired ratios (their median, and its
        // interval), which the machine's swings from one round to the next move less.
        let verdict = match ratios.len() {
            0 | 1 => verdict(ratio, &ratios, |ratio| ratio >= MCP_RATE_BUDGET),
            _ => format!(
                "rounds' median {:.3}, {}",
                median(ratios.iter().copied()),
                verdict(ratio, &ratios, |ratio| ratio >= MCP_RATE_BUDGET)
            ),
        };
        let p50_ratio = median(mcp_many.iter().filter_map(|row| row.p50_ms))
            / median(rest_many.iter().filter_map(|row| row.p50_ms));
        let cpu = |runs: &[&Row]| {
            let seconds: f64 = runs.iter().map(|row| row.usage.mesh_cpu_seconds).sum();
            let requests: f64 = runs.iter().map(|row| row.rate * row.usage.seconds).sum();
            seconds * 1e6 / requests.max(1.0)
        };
        let together = rest_many[0].label.ends_with(", together)");
        let cpu_line = if together {
            " (the two loads at the same time)".to_owned()
        } else {
            format!(
                "; mesh CPU {:.0} vs {:.0} µs/req",
                cpu(&mcp_many),
                cpu(&rest_many)
            )
        };
        let _ = writeln!(
            out,
            "* MCP `{mcp_label}` vs `GET /orders/{{id}}`, {}: {mcp_rate:.0} vs {rest_rate:.0} req/s = **{ratio:.3}×** (target ≥ {MCP_RATE_BUDGET:.2}×: {verdict}{}); p50 {p50_ratio:.3}×{cpu_line}",
            rest_many[0].label.split(' ').nth(2).unwrap_or_default(),
            each(&ratios),
        );
    }
    if let (Some(many), Some(statement)) = (many, find(rows, "its statement alone")) {
        let _ = writeln!(
            out,
            "* `GET /orders/{{id}}`, 16 connections: {:.3}× its own statement run alone through sqlx ({:.0} queries/s)",
            many.rate / statement.rate,
            statement.rate
        );
    }
    if let (Some(writes), Some(update)) = (writes, update) {
        let _ = writeln!(
            out,
            "* write path: {:.0} orders/s = **{:.3}×** `pgbench -b simple-update -c16 -j2` ({:.0} TPS)",
            writes.rate,
            writes.rate / update.rate,
            update.rate
        );
    }
    // `--spend-envelope both`: the mean of each key's runs, and the cost of enforcement.
    let mean_rate = |note: &str| {
        let rates: Vec<f64> = rows
            .iter()
            .filter(|row| row.label.starts_with("POST /quotes") && row.label.ends_with(note))
            .map(|row| row.rate)
            .collect();
        (!rates.is_empty()).then(|| (rates.iter().sum::<f64>() / rates.len() as f64, rates))
    };
    if let (Some((on, on_runs)), Some((off, off_runs))) =
        (mean_rate("envelope enforced"), mean_rate("no envelope"))
    {
        let cost = 1.0 - on / off;
        let verdict = if cost <= 0.10 { "✔" } else { "✘" };
        let runs = |rates: &[f64]| {
            rates
                .iter()
                .map(|rate| format!("{rate:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "* spend-envelope enforcement: {on:.1} orders/s enforced ({}) against {off:.1} without an envelope ({}): \
             **{:+.1} %** (target: costs ≤ 10 % {verdict})",
            runs(&on_runs),
            runs(&off_runs),
            -cost * 100.0
        );
    }
    if let Some(commits) = commits {
        let _ = writeln!(
            out,
            "* one order (quote + order, {} placed one after another, net of the idle mesh's {:.1} transactions/s): \
             {:.1} transactions in the mesh's database, {:.1} of them writing (transaction ids), {:.1} WAL flushes",
            commits.orders,
            commits.idle_transactions_per_second,
            commits.transactions,
            commits.xids,
            commits.wal_flushes
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Machine before: {machine_before}; after: {machine_after}. {}; RUST_LOG={}; PostgreSQL sslmode={} (pgbench the same); peers {}; allocator {}; commit {}.",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        platform::config::env_var("RUST_LOG").unwrap_or_else(|| "(unset: info)".to_owned()),
        bench.pg_sslmode,
        if platform::grpc::in_process::enabled() {
            "in memory"
        } else {
            "over loopback TCP"
        },
        if cfg!(feature = "mimalloc") {
            "mimalloc"
        } else {
            "system"
        },
        git_revision()
    );
    out
}

/// The checked-out commit, with `+dirty` when the work tree has changes.
fn git_revision() -> String {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let revision = run(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let dirty =
        run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|status| !status.is_empty());
    if dirty {
        format!("{revision}+dirty")
    } else {
        revision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_takes_the_order_statistics_of_the_binomial_table() {
        // n = 30: the 10th smallest and the 10th largest (P(X ≤ 9) = 2.1 %, P(X ≤ 10) = 4.9 %).
        let values: Vec<f64> = (1..=30).rev().map(f64::from).collect();
        assert_eq!(median_interval(&values), Some((10.0, 21.0)));
        // n = 8: the 1st and the 8th (P(X ≤ 0) = 0.4 %, P(X ≤ 1) = 3.5 %).
        let values: Vec<f64> = (1..=8).map(f64::from).collect();
        assert_eq!(median_interval(&values), Some((1.0, 8.0)));
        assert_eq!(median_interval(&values[..6]), Some((1.0, 6.0)));
        assert_eq!(median_interval(&values[..5]), None);
    }

    #[test]
    fn a_target_is_met_or_missed_only_when_the_whole_interval_says_so() {
        let at_most = |ratio: f64| ratio <= 1.05;
        let rounds = |values: [f64; 6]| values.to_vec();
        let met = verdict(1.0, &rounds([0.98, 1.0, 1.01, 1.0, 1.04, 0.99]), at_most);
        assert_eq!(met, "✔ (95 % interval of the rounds' median 0.980–1.040)");
        let missed = verdict(1.1, &rounds([1.06, 1.1, 1.2, 1.1, 1.08, 1.09]), at_most);
        assert!(missed.starts_with("✘ ("), "{missed}");
        let noisy = verdict(1.03, &rounds([0.99, 1.03, 1.08, 1.02, 1.04, 1.03]), at_most);
        assert!(noisy.starts_with("undecided ("), "{noisy}");
        assert_eq!(verdict(1.03, &[1.03], at_most), "✔");
        assert_eq!(verdict(1.07, &[1.07], at_most), "✘");
    }
}

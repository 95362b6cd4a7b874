//! What tracing costs on `GET /orders/{reference}` (issue 13): the mesh as separate processes
//! (the gateway and each service in its own, gRPC over loopback TCP, as deployed) is measured
//! with `wrk` in four modes, once per round, rounds alternating direction (none, off, sampled,
//! on, on, sampled, off, none, …) so that a machine getting busier weighs on every mode alike,
//! with `pgbench -S` beside each run:
//!
//! * `none`: `OTEL_SDK_DISABLED=true`: no span, no trace context passed on (the reference);
//! * `off`: the default without `OTEL_EXPORTER_OTLP_ENDPOINT`: no span is made, the trace
//!   context a request arrives with (or the gateway starts) is passed on unchanged;
//! * `on`: every span exported (sampled 100 %) over OTLP/gRPC to a receiver in this process
//!   that counts them;
//! * `sampled`: the same with one request in ten traced (`parentbased_traceidratio`, 0.1), as
//!   the production overlay sets.
//!
//! `deploy/bench/tracing.sh [--seconds 10] [--connections 16] [--rounds 2] [--modes none,on]`
//! builds release and runs it (`--rounds`: passes over the modes, each the other way round;
//! `--modes`: a subset); it prints a Markdown table for docs/performance.md. Needs `wrk` and `pgbench`, TEST_DATABASE_URL
//! and TEST_REDIS_URL as the tests (defaults: the local servers).

use std::process::Command;
use std::time::Duration;
use tests::Sandbox;
use tests::otlp::OtlpReceiver;
use tests::processes::Plan;

/// The modes, in the order of the tables.
const MODES: [&str; 4] = ["none", "off", "sampled", "on"];

struct Run {
    mode: &'static str,
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    spans_per_request: Option<f64>,
    pgbench_tps: f64,
    /// Peak resident memory of each service after the load (KiB).
    peak_kib: Vec<(&'static str, u64)>,
    /// CPU each service used per request during the measured run (µs).
    cpu_us_per_request: Vec<(&'static str, f64)>,
    /// CPU the benchmark process (the OTLP receiver, when exporting) used per request (µs).
    receiver_us_per_request: f64,
}

/// The modes named by `--modes` (comma-separated, in the order of [`MODES`]); all by default.
fn chosen_modes() -> Vec<&'static str> {
    let args: Vec<String> = std::env::args().collect();
    let named = args
        .iter()
        .position(|arg| arg == "--modes")
        .and_then(|at| args.get(at + 1));
    match named {
        None => MODES.to_vec(),
        Some(named) => {
            let named: Vec<&str> = named.split(',').map(str::trim).collect();
            for mode in &named {
                assert!(MODES.contains(mode), "unknown mode {mode}: one of {MODES:?}");
            }
            MODES.into_iter().filter(|mode| named.contains(mode)).collect()
        }
    }
}

/// CPU time this process (the OTLP receiver, wrk and pgbench being other processes) has used,
/// in seconds.
fn own_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name; 100 ticks a second.
    (ticks(11) + ticks(12)) / 100.0
}

fn argument(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|arg| arg == name)
        .and_then(|at| args.get(at + 1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The `lab-process` binary next to this example's directory (`target/<profile>/lab-process`),
/// unless `LAB_PROCESS_BIN` names one.
fn lab_process() -> std::path::PathBuf {
    if let Ok(path) = std::env::var("LAB_PROCESS_BIN") {
        return path.into();
    }
    let example = std::env::current_exe().expect("this program's path");
    example
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>/examples")
        .join("lab-process")
}

/// Milliseconds from a wrk latency figure such as `1.23ms`, `850.00us` or `1.02s`.
fn millis(text: &str) -> f64 {
    let (number, factor) = if let Some(number) = text.strip_suffix("us") {
        (number, 0.001)
    } else if let Some(number) = text.strip_suffix("ms") {
        (number, 1.0)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap_or(f64::NAN) * factor
}

/// Runs wrk and answers (requests per second, p50 ms, p99 ms).
fn wrk(url: &str, key: &str, connections: u64, seconds: u64) -> (f64, f64, f64) {
    let output = Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{connections}"),
            &format!("-d{seconds}s"),
            "--latency",
            "-H",
            &format!("Authorization: Bearer {key}"),
            url,
        ])
        .output()
        .expect("wrk runs (apt-get install wrk)");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut rate = f64::NAN;
    let (mut p50, mut p99) = (f64::NAN, f64::NAN);
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", value] => rate = value.parse().unwrap_or(f64::NAN),
            ["50%", value] => p50 = millis(value),
            ["99%", value] => p99 = millis(value),
            _ => {}
        }
    }
    assert!(rate.is_finite(), "wrk answered: {text}");
    (rate, p50, p99)
}

/// Runs `pgbench -S -c16 -j2` on `database` and answers its TPS.
fn pgbench(database: &str, seconds: u64) -> f64 {
    let output = Command::new("pgbench")
        .args(["-S", "-c16", "-j2", "-T", &seconds.to_string(), database])
        .output()
        .expect("pgbench runs");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| {
            let line = line.strip_prefix("tps = ")?;
            line.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(f64::NAN)
}

async fn measure(
    mode: &'static str,
    receiver: &OtlpReceiver,
    pgbench_url: &str,
    connections: u64,
    seconds: u64,
) -> Run {
    let mut plan = Plan::new(lab_process());
    match mode {
        "none" => plan = plan.env("OTEL_SDK_DISABLED", "true"),
        "on" => {
            // The exporter's defaults (queue 8192 spans, batches of 2048, 5 s delay): the
            // spans-per-request column shows whether any were dropped.
            plan = plan.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
        }
        "sampled" => {
            plan = plan
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
                .env("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
                .env("OTEL_TRACES_SAMPLER_ARG", "0.1");
        }
        _ => {}
    }
    let sandbox = Sandbox::start_processes(&plan).await;
    let (agent, order_id) = sandbox.seeded_bank_order("Bench Tracy", "tracing-bench-1").await;
    let url = format!("{}/api/v1/agent/orders/{order_id}", sandbox.base_url);
    // Warm up (connections, caches, the label's events settling), then measure.
    wrk(&url, &agent.key, connections, 2);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = receiver.received();
    let cpu_before = sandbox.processes().cpu_seconds();
    let own_before = own_cpu_seconds();
    // TRACING_BENCH_PERF=<directory>: `perf record -a` with DWARF call graphs (release builds
    // have no frame pointers) for the measured run of each mode
    // (`<directory>/perf-<mode>-<pid>.data`), to see where the time goes.
    let perf = std::env::var("TRACING_BENCH_PERF").ok().map(|directory| {
        let file = format!("{directory}/perf-{mode}-{}.data", std::process::id());
        eprintln!(
            "tracing_bench: {file}: processes {:?}",
            sandbox.processes().pids()
        );
        Command::new("perf")
            .args([
                "record",
                "-a",
                "--call-graph",
                "dwarf,16384",
                "-F",
                "249",
                "-q",
                "-o",
                &file,
                "--",
                "sleep",
            ])
            .arg(seconds.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("perf runs")
    });
    let (rate, p50, p99) = wrk(&url, &agent.key, connections, seconds);
    if let Some(mut perf) = perf {
        let _ = perf.wait();
    }
    let own_after = own_cpu_seconds();
    let cpu_after = sandbox.processes().cpu_seconds();
    let requests = rate * seconds as f64;
    let cpu_us_per_request = cpu_after
        .iter()
        .map(|(service, index, after)| {
            let before = cpu_before
                .iter()
                .find(|(name, replica, _)| name == service && replica == index)
                .map_or(0.0, |(_, _, seconds)| *seconds);
            (*service, (after - before) * 1e6 / requests)
        })
        .collect();
    // Spans still queued are exported within the schedule delay.
    if mode == "on" || mode == "sampled" {
        tokio::time::sleep(Duration::from_millis(5500)).await;
    }
    let spans = receiver.received() - before;
    let peak_kib = sandbox
        .processes()
        .memory_kib()
        .into_iter()
        .map(|(service, _, _, peak)| (service, peak))
        .collect();
    sandbox.stop().await;
    let pgbench_tps = pgbench(pgbench_url, seconds);
    Run {
        mode,
        requests_per_second: rate,
        p50_ms: p50,
        p99_ms: p99,
        spans_per_request: (mode == "on" || mode == "sampled")
            .then(|| spans as f64 / (rate * seconds as f64)),
        pgbench_tps,
        peak_kib,
        cpu_us_per_request,
        receiver_us_per_request: (own_after - own_before) * 1e6 / requests,
    }
}

#[tokio::main]
async fn main() {
    let seconds = argument("--seconds", 10);
    let connections = argument("--connections", 16);
    let receiver = OtlpReceiver::start_counting().await;
    // pgbench's scratch database on the same server as the mesh's.
    let pgbench_url = platform::testing::fresh_database().await;
    let status = Command::new("pgbench")
        .args(["-i", "-q", "-s", "10", &pgbench_url])
        .status()
        .expect("pgbench -i runs");
    assert!(status.success(), "pgbench -i failed");
    let modes = chosen_modes();
    // Rounds alternate direction (none, off, …, on, on, …, off, none, none, …) so that a machine
    // getting busier or quieter weighs on every mode alike.
    let rounds = argument("--rounds", 2).max(1);
    let order: Vec<&'static str> = (0..rounds)
        .flat_map(|round| {
            let mut pass = modes.clone();
            if round % 2 == 1 {
                pass.reverse();
            }
            pass
        })
        .collect();
    let mut runs = Vec::new();
    for mode in order.iter().copied() {
        eprintln!("tracing_bench: {mode} …");
        runs.push(measure(mode, &receiver, &pgbench_url, connections, seconds).await);
    }
    let mean = |mode: &str, value: fn(&Run) -> f64| {
        let values: Vec<f64> = runs.iter().filter(|run| run.mode == mode).map(value).collect();
        values.iter().sum::<f64>() / values.len() as f64
    };
    let reference = mean("none", |run| run.requests_per_second);
    println!(
        "`GET /orders/{{id}}`, {connections} connections, {seconds} s per run, the mesh as separate \
         processes (release), runs in the order {}, pgbench on the mesh's PostgreSQL server\n",
        order.join(", ")
    );
    println!(
        "| Mode | req/s (each run) | mean req/s | vs none | p50 ms | p99 ms | spans exported per request | pgbench -S TPS beside |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for mode in modes.iter().copied() {
        let each: Vec<String> = runs
            .iter()
            .filter(|run| run.mode == mode)
            .map(|run| format!("{:.0}", run.requests_per_second))
            .collect();
        let rate = mean(mode, |run| run.requests_per_second);
        let spans = runs
            .iter()
            .filter(|run| run.mode == mode)
            .filter_map(|run| run.spans_per_request)
            .map(|spans| format!("{spans:.1}"))
            .collect::<Vec<_>>()
            .join(", ");
        let tps: Vec<String> = runs
            .iter()
            .filter(|run| run.mode == mode)
            .map(|run| format!("{:.0}", run.pgbench_tps))
            .collect();
        println!(
            "| {mode} | {} | {rate:.0} | {:+.1} % | {:.2} | {:.2} | {} | {} |",
            each.join(", "),
            (rate / reference - 1.0) * 100.0,
            mean(mode, |run| run.p50_ms),
            mean(mode, |run| run.p99_ms),
            if spans.is_empty() { "—".to_owned() } else { spans },
            tps.join(", "),
        );
    }
    println!("\nPeak resident memory (VmHWM) of each process after its run, MiB (largest of its runs):\n");
    let services: Vec<&str> = runs[0].peak_kib.iter().map(|(service, _)| *service).collect();
    println!("| Mode | {} |", services.join(" | "));
    println!("|---|{}", "---|".repeat(services.len()));
    for mode in modes.iter().copied() {
        let peaks: Vec<String> = services
            .iter()
            .map(|service| {
                let peak = runs
                    .iter()
                    .filter(|run| run.mode == mode)
                    .flat_map(|run| &run.peak_kib)
                    .filter(|(name, _)| name == service)
                    .map(|(_, kib)| *kib)
                    .max()
                    .unwrap_or(0);
                format!("{:.1}", peak as f64 / 1024.0)
            })
            .collect();
        println!("| {mode} | {} |", peaks.join(" | "));
    }
    println!(
        "\nCPU of each process per request during the measured runs, µs (mean of its runs; \
         the OTLP receiver runs in the benchmark process, outside the mesh's total):\n"
    );
    println!("| Mode | {} | all | OTLP receiver |", services.join(" | "));
    println!("|---|{}---|---|", "---|".repeat(services.len()));
    for mode in modes.iter().copied() {
        let mut total = 0.0;
        let cells: Vec<String> = services
            .iter()
            .map(|service| {
                let values: Vec<f64> = runs
                    .iter()
                    .filter(|run| run.mode == mode)
                    .flat_map(|run| &run.cpu_us_per_request)
                    .filter(|(name, _)| name == service)
                    .map(|(_, micros)| *micros)
                    .collect();
                let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
                total += mean;
                format!("{mean:.1}")
            })
            .collect();
        let receiver = mean(mode, |run| run.receiver_us_per_request);
        println!("| {mode} | {} | {total:.1} | {receiver:.1} |", cells.join(" | "));
    }
}

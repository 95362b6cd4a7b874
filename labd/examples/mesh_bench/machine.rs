//! What the machine was doing: load average and cores, and CPU time by party over a run, read
//! from `/proc` (the mesh is this process; the load generators are its children; PostgreSQL and
//! Redis are found by process name and include every other client of those servers).

use std::time::Instant;

/// Clock ticks per second of `/proc` CPU times (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds consumed so far, by party.
#[derive(Clone, Debug)]
pub struct Sample {
    at: Instant,
    mesh: f64,
    children: f64,
    postgres: f64,
    redis: f64,
    machine_busy: f64,
}

/// Cores used on average between two samples, by party.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    pub seconds: f64,
    pub mesh: f64,
    pub load: f64,
    pub postgres: f64,
    pub redis: f64,
    pub other: f64,
    /// CPU seconds of the mesh (for CPU time per request).
    pub mesh_cpu_seconds: f64,
}

/// Reads the CPU times now.
pub fn sample() -> Sample {
    let own = process_times("self").unwrap_or_default();
    let (mut postgres, mut redis) = (0.0, 0.0);
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some((comm, times)) = parse_stat(&stat) else {
                continue;
            };
            // Exited backends are added to their parent's children times: count those too.
            let total = times[0] + times[1] + times[2] + times[3];
            match comm {
                "postgres" => postgres += total,
                "redis-server" => redis += total,
                _ => {}
            }
        }
    }
    Sample {
        at: Instant::now(),
        mesh: own[0] + own[1],
        children: own[2] + own[3],
        postgres,
        redis,
        machine_busy: machine_busy().unwrap_or_default(),
    }
}

impl Sample {
    /// Average cores used by each party since `before`.
    pub fn usage_since(&self, before: &Sample) -> Usage {
        let seconds = self.at.duration_since(before.at).as_secs_f64().max(1e-9);
        let mesh = self.mesh - before.mesh;
        let load = self.children - before.children;
        let postgres = self.postgres - before.postgres;
        let redis = self.redis - before.redis;
        let busy = self.machine_busy - before.machine_busy;
        let other = (busy - mesh - load - postgres - redis).max(0.0);
        Usage {
            seconds,
            mesh: mesh / seconds,
            load: load / seconds,
            postgres: postgres / seconds,
            redis: redis / seconds,
            other: other / seconds,
            mesh_cpu_seconds: mesh,
        }
    }
}

/// CPU seconds (user and system) a process has used so far; 0 when it is gone.
pub fn process_cpu(pid: i32) -> f64 {
    process_times(&pid.to_string())
        .map(|times| times[0] + times[1])
        .unwrap_or_default()
}

/// utime, stime, cutime and cstime of a process in seconds.
fn process_times(pid: &str) -> Option<[f64; 4]> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat).map(|(_, times)| times)
}

/// The command name and the four CPU times of a `/proc/<pid>/stat` line.
fn parse_stat(stat: &str) -> Option<(&str, [f64; 4])> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = &stat[open + 1..close];
    // Fields after the name start at field 3 (state); utime is field 14.
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    let tick =
        |index: usize| -> Option<f64> { Some(fields.get(index)?.parse::<f64>().ok()? / TICKS_PER_SECOND) };
    Some((comm, [tick(11)?, tick(12)?, tick(13)?, tick(14)?]))
}

/// Busy CPU seconds of the whole machine (every core), from `/proc/stat`.
fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    let values: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|value| value.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    let busy: f64 = values
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != 3 && *index != 4 && *index < 8)
        .map(|(_, value)| value)
        .sum();
    Some(busy / TICKS_PER_SECOND)
}

/// One line on the machine: cores, load average, memory.
pub fn describe() -> String {
    let cores = std::thread::available_parallelism()
        .map(|cores| cores.get())
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let kib = text.lines().find(|line| line.starts_with("MemTotal:"))?;
            let kib: f64 = kib.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.0} GiB", kib / 1024.0 / 1024.0))
        })
        .unwrap_or_default();
    format!("nproc {cores}, load average {load}, memory {memory}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_spaces_in_the_name_parse() {
        let line = "42 (tokio runtime) S 1 2 3 4 5 6 7 8 9 10 250 150 20 10 0 0";
        let (comm, times) = parse_stat(line).unwrap();
        assert_eq!(comm, "tokio runtime");
        assert_eq!(times, [2.5, 1.5, 0.2, 0.1]);
    }
}

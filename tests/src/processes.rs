//! The mesh as separate processes, as a deployment runs it: the gateway, identity-svc and each
//! domain service in a process of its own (the `lab-process` binary of this crate, which runs a service's own
//! `run_from_env`), configured only by environment variables, talking gRPC over TCP, with as
//! many replicas of a service as a test asks for. A service with one replica is reached through
//! a gRPC `dns:` target (as in Kubernetes), one with several through a comma-separated address
//! list (`platform::grpc::lazy_channel` balances over either).
//! Replicas can be killed (`SIGKILL`, no drain) and started again on the same port.
//!
//! With [`Plan::tls`] the mesh runs over mutual TLS as outside development mode: a throw-away CA
//! (`platform::testing::pki`) issues each service its own certificate for `localhost`, every
//! process gets `GRPC_TLS_*` and peers are named `dns:///localhost:<port>` (or
//! `https://localhost:<port>` lists), so the names verified are host names while connections go
//! to the resolved addresses; each domain service also serves its plaintext health port
//! (`<PREFIX>_GRPC_HEALTH_ADDR`, [`ProcessMesh::health_addr`]), and labctl gets an operator's
//! client certificate.
//!
//! Each process writes its output to `<log dir>/<service>-<replica>.log`; a test that fails
//! prints the tails with [`ProcessMesh::log_tails`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;
use tokio::process::{Child, Command};

/// The services of the mesh with their environment prefix.
pub const SERVICES: [(&str, &str); 8] = [
    ("gateway", "GATEWAY"),
    ("identity-svc", "IDENTITY"),
    ("catalog-svc", "CATALOG"),
    ("orders-svc", "ORDERS"),
    ("payments-svc", "PAYMENTS"),
    ("shipping-svc", "SHIPPING"),
    ("results-svc", "RESULTS"),
    ("webhooks-svc", "WEBHOOKS"),
];

/// What to start.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `lab-process` binary (`env!("CARGO_BIN_EXE_lab-process")` in an integration test:
    /// cargo tells its path only to those).
    pub binary: PathBuf,
    /// Replicas per service (1 for a service not named).
    pub replicas: BTreeMap<&'static str, usize>,
    /// Environment given to every process, after the harness's own (so it can override it).
    pub env: Vec<(String, String)>,
    /// Mutual TLS between every process (and labctl).
    pub tls: bool,
}

impl Plan {
    /// One replica of every service, run by `binary`.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            replicas: BTreeMap::new(),
            env: Vec::new(),
            tls: false,
        }
    }

    /// Runs the mesh over mutual TLS (see the module's documentation).
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Runs `count` replicas of `service`.
    pub fn replicas(mut self, service: &'static str, count: usize) -> Self {
        self.replicas.insert(service, count.max(1));
        self
    }

    /// Adds an environment variable for every process.
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.env.push((name.to_owned(), value.into()));
        self
    }
}

/// One running (or killed) process.
struct Replica {
    service: &'static str,
    index: usize,
    grpc: SocketAddr,
    http: Option<SocketAddr>,
    /// Its Prometheus endpoint (`<PREFIX>_METRICS_ADDR`).
    metrics: SocketAddr,
    /// Its plaintext health port (`<PREFIX>_GRPC_HEALTH_ADDR`; domain services over TLS).
    health: Option<SocketAddr>,
    env: Vec<(String, String)>,
    /// The running process (`None` once killed): behind a lock so that a test can kill and
    /// restart replicas while other tasks send requests through the mesh.
    child: Mutex<Option<Child>>,
}

/// A mesh of processes.
pub struct ProcessMesh {
    binary: PathBuf,
    replicas: Vec<Replica>,
    log_dir: PathBuf,
    /// The certificates of a mesh over TLS.
    tls: Option<MeshCertificates>,
    /// REST address of the gateway.
    pub http_addr: SocketAddr,
}

/// The files of a mesh over TLS: the CA bundle, and labctl's operator certificate and key.
struct MeshCertificates {
    ca: PathBuf,
    operator: (PathBuf, PathBuf),
}

/// The host name peers are addressed by over TLS (what every certificate names).
const TLS_HOST: &str = "localhost";

/// A free loopback port, bound and kept in `held` until every port of the mesh is chosen (then
/// released for the processes to take). Released at once, the port could be handed out again by
/// the next call: two replicas once got the same metrics port, and one exited with "Address
/// already in use".
fn free_port(held: &mut Vec<std::net::TcpListener>) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = listener.local_addr().expect("its address");
    held.push(listener);
    address
}

impl ProcessMesh {
    /// Starts every service of `plan` on `database_url`, `redis_url` and `stream_prefix` in
    /// development mode and waits until each listens.
    pub async fn start(plan: &Plan, database_url: &str, redis_url: &str, stream_prefix: &str) -> Self {
        let log_dir = std::env::temp_dir().join(format!("lab-processes-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&log_dir).expect("a log directory");
        let mut replicas = Vec::new();
        let mut held = Vec::new();
        for (service, _) in SERVICES {
            for index in 0..plan.replicas.get(service).copied().unwrap_or(1) {
                replicas.push(Replica {
                    service,
                    index,
                    grpc: free_port(&mut held),
                    http: (service == "gateway").then(|| free_port(&mut held)),
                    metrics: free_port(&mut held),
                    health: (plan.tls && service != "gateway").then(|| free_port(&mut held)),
                    env: Vec::new(),
                    child: Mutex::new(None),
                });
            }
        }
        // Over TLS: one CA, a certificate per service (both usages, for localhost), and an
        // operator's client certificate for labctl.
        let pki = plan
            .tls
            .then(|| platform::testing::pki::TestPki::new("lab process mesh CA"));
        let tls_dir = log_dir.join("tls");
        let tls = pki.as_ref().map(|pki| {
            std::fs::create_dir_all(&tls_dir).expect("a certificate directory");
            let ca = tls_dir.join("ca.crt");
            pki.write_ca(&ca);
            let operator = pki.client("operator").write(&tls_dir, "operator");
            MeshCertificates { ca, operator }
        });
        // Every port chosen and distinct: free for the processes to bind.
        drop(held);
        // One replica is named as a gRPC `dns:` target, as the Kubernetes manifests name their
        // headless Services (resolved by the system resolver, balanced, re-resolved); several
        // as a list of their addresses.
        let list = |service: &str| {
            let addresses: Vec<SocketAddr> = replicas
                .iter()
                .filter(|replica| replica.service == service)
                .map(|replica| replica.grpc)
                .collect();
            match (addresses.as_slice(), plan.tls) {
                ([one], false) => format!("dns:///{one}"),
                ([one], true) => format!("dns:///{TLS_HOST}:{}", one.port()),
                (many, tls) => many
                    .iter()
                    .map(|address| match tls {
                        false => format!("http://{address}"),
                        true => format!("https://{TLS_HOST}:{}", address.port()),
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            }
        };
        let http_addr = replicas
            .iter()
            .find_map(|replica| replica.http)
            .expect("a gateway");
        let shared: Vec<(String, String)> = [
            ("DATABASE_URL", database_url.to_owned()),
            ("REDIS_URL", redis_url.to_owned()),
            ("STREAM_PREFIX", stream_prefix.to_owned()),
            // Ten processes of a test share the server's 100 connections with the other tests
            // running at the same time.
            ("DATABASE_MAX_CONNECTIONS", "4".to_owned()),
            ("LAB_DEV_MODE", "1".to_owned()),
            // The development defaults of the blob stores (label and COA PDFs, raw files) live
            // under the state directory: this mesh's own, shared by the replicas of a service.
            ("LAB_STATE_DIR", log_dir.join("state").display().to_string()),
            (
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned()),
            ),
            ("IDENTITY_SVC_ADDR", list("identity-svc")),
            ("CATALOG_SVC_ADDR", list("catalog-svc")),
            ("ORDERS_SVC_ADDR", list("orders-svc")),
            ("PAYMENTS_SVC_ADDR", list("payments-svc")),
            ("SHIPPING_SVC_ADDR", list("shipping-svc")),
            ("RESULTS_SVC_ADDR", list("results-svc")),
            ("WEBHOOKS_SVC_ADDR", list("webhooks-svc")),
            ("SHIPPING_IDENTITY_ADDR", list("identity-svc")),
            ("SITE_URL", format!("http://{http_addr}")),
            // Load tests come from one address with a few keys.
            ("GATEWAY_RATE_LIMIT_PER_SECOND", "100000".to_owned()),
            ("GATEWAY_RATE_LIMIT_BURST", "100000".to_owned()),
            ("GATEWAY_ADDRESS_RATE_LIMIT_PER_SECOND", "100000".to_owned()),
            ("GATEWAY_ADDRESS_RATE_LIMIT_BURST", "100000".to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        for replica in &mut replicas {
            let prefix = SERVICES
                .iter()
                .find(|(service, _)| *service == replica.service)
                .map(|(_, prefix)| *prefix)
                .expect("a known service");
            let mut env = shared.clone();
            env.push((format!("{prefix}_GRPC_ADDR"), replica.grpc.to_string()));
            env.push((format!("{prefix}_METRICS_ADDR"), replica.metrics.to_string()));
            if let Some(http) = replica.http {
                env.push(("GATEWAY_HTTP_ADDR".to_owned(), http.to_string()));
            }
            if let Some(health) = replica.health {
                env.push((format!("{prefix}_GRPC_HEALTH_ADDR"), health.to_string()));
            }
            if let (Some(pki), Some(tls)) = (&pki, &tls) {
                let stem = format!("{}-{}", replica.service, replica.index);
                let (cert, key) = pki.peer(&[TLS_HOST]).write(&tls_dir, &stem);
                for (name, path) in [
                    ("GRPC_TLS_CERT_FILE", &cert),
                    ("GRPC_TLS_KEY_FILE", &key),
                    ("GRPC_TLS_CA_FILE", &tls.ca),
                ] {
                    env.push((name.to_owned(), path.display().to_string()));
                }
            }
            env.extend(plan.env.iter().cloned());
            replica.env = env;
        }
        let mesh = Self {
            binary: plan.binary.clone(),
            replicas,
            log_dir,
            tls,
            http_addr,
        };
        for index in 0..mesh.replicas.len() {
            mesh.spawn(index);
        }
        for index in 0..mesh.replicas.len() {
            mesh.wait_listening(index).await;
        }
        mesh
    }

    fn position(&self, service: &str, index: usize) -> usize {
        self.replicas
            .iter()
            .position(|replica| replica.service == service && replica.index == index)
            .unwrap_or_else(|| panic!("no replica {index} of {service}"))
    }

    fn spawn(&self, position: usize) {
        let replica = &self.replicas[position];
        let log_path = self
            .log_dir
            .join(format!("{}-{}.log", replica.service, replica.index));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("a log file");
        let mut command = Command::new(&self.binary);
        command
            .arg(replica.service)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("a log handle")))
            .stderr(Stdio::from(log))
            .kill_on_drop(true);
        // Nothing of the test's own environment configures the process by accident.
        for (name, _) in std::env::vars() {
            let ours = name.starts_with("OTEL_")
                || name.ends_with("_URL")
                || name.ends_with("_ADDR")
                || name.starts_with("LAB_")
                || name.starts_with("GRPC_")
                || SERVICES
                    .iter()
                    .any(|(_, prefix)| name.starts_with(&format!("{prefix}_")));
            if ours {
                command.env_remove(&name);
            }
        }
        command.envs(
            replica
                .env
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        *replica.child.lock().unwrap() = Some(command.spawn().expect("lab-process starts"));
    }

    async fn wait_listening(&self, position: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        loop {
            let replica = &self.replicas[position];
            let addresses = [Some(replica.grpc), replica.http];
            let mut all = true;
            for address in addresses.into_iter().flatten() {
                all &= tokio::net::TcpStream::connect(address).await.is_ok();
            }
            if all {
                return;
            }
            let exited = replica
                .child
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten());
            if let Some(status) = exited {
                let (service, index) = (replica.service, replica.index);
                panic!(
                    "{service} #{index} exited with {status} before listening:\n{}",
                    self.log_tails()
                );
            }
            if tokio::time::Instant::now() > deadline {
                let (service, index) = (replica.service, replica.index);
                panic!(
                    "{service} #{index} did not listen within 90 s:\n{}",
                    self.log_tails()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills replica `index` of `service` at once (`SIGKILL`: no drain, no flush).
    pub async fn kill(&self, service: &str, index: usize) {
        let position = self.position(service, index);
        let child = self.replicas[position].child.lock().unwrap().take();
        if let Some(mut child) = child {
            child.kill().await.expect("the process is killed");
        }
    }

    /// Starts replica `index` of `service` again (same port, same settings) and waits until it
    /// listens.
    pub async fn restart(&self, service: &str, index: usize) {
        let position = self.position(service, index);
        self.spawn(position);
        self.wait_listening(position).await;
    }

    /// Stops every process with `SIGTERM` (they drain and flush their spans) and waits for each.
    pub async fn stop(self) {
        for replica in &self.replicas {
            let pid = replica.child.lock().unwrap().as_ref().and_then(Child::id);
            if let Some(pid) = pid {
                let _ = Command::new("kill")
                    .args(["-TERM", &pid.to_string()])
                    .status()
                    .await;
            }
        }
        for replica in &self.replicas {
            let child = replica.child.lock().unwrap().take();
            if let Some(mut child) = child {
                match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
                    Ok(_) => {}
                    Err(_) => {
                        let _ = child.kill().await;
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.log_dir);
    }

    /// The gRPC URI of a live replica of `service` (the first one running).
    pub fn uri(&self, service: &str) -> String {
        let replica = self
            .replicas
            .iter()
            .find(|replica| replica.service == service && replica.child.lock().unwrap().is_some())
            .unwrap_or_else(|| panic!("no live replica of {service}"));
        match self.tls {
            Some(_) => format!("https://{TLS_HOST}:{}", replica.grpc.port()),
            None => format!("http://{}", replica.grpc),
        }
    }

    /// The plaintext health port of replica `index` of `service` (a domain service of a mesh
    /// over TLS).
    pub fn health_addr(&self, service: &str, index: usize) -> Option<SocketAddr> {
        self.replicas[self.position(service, index)].health
    }

    /// The CA bundle of a mesh over TLS.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        self.tls.as_ref().map(|tls| tls.ca.as_path())
    }

    /// The Prometheus endpoint of replica `index` of `service`.
    pub fn metrics_addr(&self, service: &str, index: usize) -> SocketAddr {
        self.replicas[self.position(service, index)].metrics
    }

    /// The labctl command line for this mesh (live replicas) as the operator `credential`.
    pub fn labctl_argv(&self, credential: &str, args: &[&str]) -> Vec<String> {
        let mut argv = vec!["labctl".to_owned(), "--json".to_owned()];
        for (flag, service) in [
            ("--identity-addr", "identity-svc"),
            ("--gateway-addr", "gateway"),
            ("--catalog-addr", "catalog-svc"),
            ("--payments-addr", "payments-svc"),
            ("--shipping-addr", "shipping-svc"),
            ("--orders-addr", "orders-svc"),
            ("--results-addr", "results-svc"),
            ("--webhooks-addr", "webhooks-svc"),
        ] {
            argv.push(flag.to_owned());
            argv.push(self.uri(service));
        }
        argv.push("--credential".to_owned());
        argv.push(credential.to_owned());
        if let Some(tls) = &self.tls {
            for (flag, path) in [
                ("--ca-file", &tls.ca),
                ("--client-cert-file", &tls.operator.0),
                ("--client-key-file", &tls.operator.1),
            ] {
                argv.push(flag.to_owned());
                argv.push(path.display().to_string());
            }
        }
        argv.extend(args.iter().map(|arg| (*arg).to_owned()));
        argv
    }

    /// The process id of every live process: (service, replica, pid).
    pub fn pids(&self) -> Vec<(&'static str, usize, u32)> {
        self.replicas
            .iter()
            .filter_map(|replica| {
                let pid = replica.child.lock().unwrap().as_ref().and_then(Child::id)?;
                Some((replica.service, replica.index, pid))
            })
            .collect()
    }

    /// Memory of every live process from `/proc/<pid>/status`: (service, replica, resident KiB
    /// now, peak resident KiB).
    pub fn memory_kib(&self) -> Vec<(&'static str, usize, u64, u64)> {
        let field = |status: &str, name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|value| value.parse::<u64>().ok())
                .unwrap_or(0)
        };
        self.pids()
            .into_iter()
            .filter_map(|(service, index, pid)| {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                Some((service, index, field(&status, "VmRSS:"), field(&status, "VmHWM:")))
            })
            .collect()
    }

    /// CPU time (user + system) every live process has used so far, from `/proc/<pid>/stat`:
    /// (service, replica, seconds).
    pub fn cpu_seconds(&self) -> Vec<(&'static str, usize, f64)> {
        let ticks_per_second = clock_ticks_per_second();
        self.pids()
            .into_iter()
            .filter_map(|(service, index, pid)| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                // Fields after the command name (which may hold spaces) start at the state.
                let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
                let user: f64 = fields.get(11)?.parse().ok()?;
                let system: f64 = fields.get(12)?.parse().ok()?;
                Some((service, index, (user + system) / ticks_per_second))
            })
            .collect()
    }

    /// Everything every process wrote so far, each file after a `--- <service> #<replica> ---`
    /// line.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for replica in &self.replicas {
            let path = self
                .log_dir
                .join(format!("{}-{}.log", replica.service, replica.index));
            out.push_str(&format!("--- {} #{} ---\n", replica.service, replica.index));
            out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
        out
    }

    /// The last lines each process wrote, for a failing test's message.
    pub fn log_tails(&self) -> String {
        let mut out = String::new();
        for replica in &self.replicas {
            let path = self
                .log_dir
                .join(format!("{}-{}.log", replica.service, replica.index));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            // A process that failed with a backtrace (an error's "Stack backtrace:", a panic's
            // "stack backtrace:") printed its error above the frames: the tail ends where the
            // backtrace begins, so the error shows.
            let text = match text
                .find("\nStack backtrace:")
                .or_else(|| text.find("\nstack backtrace:"))
            {
                Some(at) => format!("{}\n(stack backtrace omitted)", &text[..at]),
                None => text,
            };
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(25)..];
            out.push_str(&format!(
                "--- {} #{} ---\n{}\n",
                replica.service,
                replica.index,
                tail.join("\n")
            ));
        }
        out
    }
}

/// `getconf CLK_TCK` (100 on Linux unless it says otherwise).
fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100.0)
}

//! Nothing of the sandbox runs outside development mode. Each process of the mesh, started as a
//! deployment starts it (`lab-process`, configured by environment variables only, without
//! `LAB_DEV_MODE`), starts with the production settings of `deploy/k8s/production-settings.json`
//! and refuses to start (non-zero exit, an error naming the variable) when any one of them is
//! missing, when it holds a refused value (sandbox processor or carrier, loopback webhook
//! targets, a site URL that is not public https), or when a secret is one committed to this
//! repository or too short, or its gRPC TLS certificate is unusable (another CA's, expired). The
//! same table is what `deploy/k8s/check_manifests.py` holds every
//! non-development render to.

use futures::StreamExt;
use platform::tokens::SigningKey;
use secrecy::ExposeSecret;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

#[derive(Deserialize)]
struct Table {
    processes: BTreeMap<String, Process>,
    refused: BTreeMap<String, Vec<String>>,
    public_https_urls: Vec<String>,
    examples: BTreeMap<String, String>,
    generated: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Process {
    prefix: String,
    required: Vec<String>,
}

fn table() -> Table {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/k8s/production-settings.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("the production settings table"))
        .expect("the production settings table parses")
}

fn random_text(length: usize) -> String {
    use rand::distr::{Alphanumeric, SampleString};
    Alphanumeric.sample_string(&mut rand::rng(), length)
}

/// Secrets generated for this run: one token key per process (all in one trust set), the COA
/// key, a gRPC TLS certificate per process of one throw-away CA (files in `tls_dir`), and fresh
/// random values for everything else.
struct Secrets {
    token_keys: BTreeMap<String, String>,
    trusted_keys: String,
    coa_key: String,
    pki: platform::testing::pki::TestPki,
    tls_dir: std::path::PathBuf,
}

impl Drop for Secrets {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tls_dir);
    }
}

impl Secrets {
    fn generate(table: &Table) -> Self {
        let mut token_keys = BTreeMap::new();
        let mut public = Vec::new();
        for process in table.processes.keys() {
            let (key, private) = SigningKey::generate(&format!("{process}-production-test"));
            public.push(key.public_jwk(process));
            token_keys.insert(process.clone(), private.expose_secret().to_owned());
        }
        let (_, coa) = SigningKey::generate("results-svc-coa-production-test");
        let pki = platform::testing::pki::TestPki::new("production test mesh CA");
        let tls_dir = std::env::temp_dir().join(format!("lab-production-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&tls_dir).expect("a certificate directory");
        pki.write_ca(&tls_dir.join("ca.crt"));
        for process in table.processes.keys() {
            pki.peer(&[process.as_str(), &format!("{process}-peers")])
                .write(&tls_dir, process);
        }
        Self {
            token_keys,
            trusted_keys: serde_json::json!({ "keys": public }).to_string(),
            coa_key: coa.expose_secret().to_owned(),
            pki,
            tls_dir,
        }
    }

    fn tls_file(&self, name: &str) -> String {
        self.tls_dir.join(name).display().to_string()
    }

    fn value(&self, process: &str, name: &str, kind: &str) -> String {
        match (name, kind) {
            ("RESULTS_COA_SIGNING_KEY", _) => self.coa_key.clone(),
            (_, "jwk") => self.token_keys[process].clone(),
            (_, "keyring") => {
                let key: [u8; 32] = rand::random();
                format!(
                    "k1:{}",
                    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, key)
                )
            }
            (_, "smtp") => format!("smtp://mailer:{}@127.0.0.1:2525", random_text(24)),
            (_, "tls-cert") => self.tls_file(&format!("{process}.crt")),
            (_, "tls-key") => self.tls_file(&format!("{process}.key")),
            (_, "tls-ca") => self.tls_file("ca.crt"),
            _ => random_text(48),
        }
    }
}

/// A value for the variable `name` of `process`: an example, or a generated secret.
fn value_of(table: &Table, secrets: &Secrets, process: &str, name: &str) -> Option<String> {
    if name == "LAB_TOKEN_TRUSTED_KEYS" {
        return Some(secrets.trusted_keys.clone());
    }
    table.examples.get(name).cloned().or_else(|| {
        table
            .generated
            .get(name)
            .map(|kind| secrets.value(process, name, kind))
    })
}

fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address")
}

/// The production environment of `process`: every required variable (the last of its
/// alternatives that has a value), its own database, Redis and ports.
fn production_env(
    table: &Table,
    secrets: &Secrets,
    process: &str,
    database_url: &str,
) -> Vec<(String, String)> {
    let prefix = &table.processes[process].prefix;
    let mut env = vec![
        ("DATABASE_URL".to_owned(), database_url.to_owned()),
        ("REDIS_URL".to_owned(), platform::testing::redis_url()),
        (
            "STREAM_PREFIX".to_owned(),
            platform::testing::unique_stream_prefix(),
        ),
        ("DATABASE_MAX_CONNECTIONS".to_owned(), "2".to_owned()),
        (format!("{prefix}_GRPC_ADDR"), free_port().to_string()),
        (format!("{prefix}_METRICS_ADDR"), free_port().to_string()),
        ("RUST_LOG".to_owned(), "warn".to_owned()),
    ];
    if process == "gateway" {
        env.push(("GATEWAY_HTTP_ADDR".to_owned(), free_port().to_string()));
    }
    for required in &table.processes[process].required {
        let chosen = required
            .split('|')
            .rev()
            .find_map(|name| value_of(table, secrets, process, name).map(|value| (name.to_owned(), value)))
            .unwrap_or_else(|| panic!("the table gives no value for {required}"));
        env.push(chosen);
    }
    env
}

fn with(env: &[(String, String)], name: &str, value: &str) -> Vec<(String, String)> {
    let mut env: Vec<_> = env.iter().filter(|(known, _)| known != name).cloned().collect();
    env.push((name.to_owned(), value.to_owned()));
    env
}

fn without(env: &[(String, String)], names: &[&str]) -> Vec<(String, String)> {
    env.iter()
        .filter(|(known, _)| !names.contains(&known.as_str()))
        .cloned()
        .collect()
}

fn command(process: &str, env: &[(String, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lab-process"));
    command
        .arg(process)
        .env_clear()
        .envs(env.iter().map(|(name, value)| (name.as_str(), value.as_str())))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs `process` with `env` and expects it to exit non-zero within a minute with an error that
/// names one of `names`.
async fn refuses(
    process: &str,
    env: Vec<(String, String)>,
    names: Vec<String>,
    case: String,
) -> Result<(), String> {
    // Refusals run side by side: any port will do (a process that wrongly starts is caught by
    // still running, not by its port).
    let env: Vec<(String, String)> = env
        .into_iter()
        .map(
            |(name, value)| match name.ends_with("_ADDR") && value.parse::<SocketAddr>().is_ok() {
                true => (name, "127.0.0.1:0".to_owned()),
                false => (name, value),
            },
        )
        .collect();
    let child = command(process, &env).spawn().expect("lab-process starts");
    let output = match tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await {
        Ok(output) => output.expect("lab-process output"),
        Err(_) => {
            return Err(format!(
                "{process} {case}: still running after a minute (it started)"
            ));
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        return Err(format!("{process} {case}: exited successfully: {text}"));
    }
    if !names.iter().any(|name| text.contains(name.as_str())) {
        return Err(format!(
            "{process} {case}: the error names none of {names:?}: {text}"
        ));
    }
    Ok(())
}

/// Starts `process` with `env` and waits until it listens (gRPC, and HTTP for the gateway).
async fn starts(process: &str, env: &[(String, String)]) {
    let mut child = command(process, env).spawn().expect("lab-process starts");
    let addresses: Vec<SocketAddr> = env
        .iter()
        .filter(|(name, _)| name.ends_with("_GRPC_ADDR") || name == "GATEWAY_HTTP_ADDR")
        .map(|(_, value)| value.parse().expect("an address"))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let mut listening = true;
        for address in &addresses {
            listening &= tokio::net::TcpStream::connect(address).await.is_ok();
        }
        if listening {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let output = child.wait_with_output().await.expect("its output");
            panic!(
                "{process} exited ({status}) with its production settings: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{process} did not listen on {addresses:?} within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.kill().await.expect("stop the process");
}

/// Environment variables of a process.
type Env = Vec<(String, String)>;
/// A refusal case: the changed environment, the names its error must mention, what it is.
type Case = (Env, Vec<String>, String);

/// The cases every process must refuse: each required variable missing (all its alternatives),
/// each refused value of its own variables, each site URL that is not public https.
fn refusal_cases(table: &Table, process: &str, env: &[(String, String)]) -> Vec<Case> {
    let spec = &table.processes[process];
    let mut cases = Vec::new();
    for required in &spec.required {
        let names: Vec<&str> = required.split('|').collect();
        cases.push((
            without(env, &names),
            names.iter().map(|name| (*name).to_owned()).collect(),
            format!("without {required}"),
        ));
    }
    let own = |name: &str| {
        name.starts_with(&format!("{}_", spec.prefix))
            || spec
                .required
                .iter()
                .any(|required| required.split('|').any(|known| known == name))
    };
    for (name, values) in &table.refused {
        if !own(name) || name == platform::config::DEV_MODE_VAR {
            continue;
        }
        for value in values {
            cases.push((
                with(env, name, value),
                vec![name.clone()],
                format!("with {name}={value}"),
            ));
        }
    }
    for name in &table.public_https_urls {
        if !env.iter().any(|(known, _)| known == name) {
            continue;
        }
        for value in [
            "http://lab.example.com",
            "https://127.0.0.1:8080",
            "https://localhost",
        ] {
            cases.push((
                with(env, name, value),
                vec![name.clone()],
                format!("with {name}={value}"),
            ));
        }
    }
    cases
}

#[tokio::test]
async fn every_process_starts_with_its_production_settings_and_refuses_to_start_without_any_of_them() {
    let table = table();
    let secrets = Secrets::generate(&table);
    let mut cases = Vec::new();
    for process in table.processes.keys() {
        let database_url = platform::testing::fresh_database().await;
        let env = production_env(&table, &secrets, process, &database_url);
        // The table is complete: with all of it the process starts (so each refusal below is
        // caused by the one change it makes).
        starts(process, &env).await;
        for (changed, names, case) in refusal_cases(&table, process, &env) {
            cases.push((process.clone(), changed, names, case));
        }
    }
    assert!(cases.len() > 40, "{} refusal cases", cases.len());
    let failures: Vec<String> = futures::stream::iter(cases)
        .map(|(process, env, names, case)| async move { refuses(&process, env, names, case).await })
        .buffer_unordered(8)
        .filter_map(|outcome| async move { outcome.err() })
        .collect()
        .await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn secrets_committed_to_the_repository_or_too_short_are_refused_outside_development_mode() {
    let table = table();
    let secrets = Secrets::generate(&table);
    let database_url = platform::testing::fresh_database().await;
    let gateway = production_env(&table, &secrets, "gateway", &database_url);
    let identity = production_env(&table, &secrets, "identity-svc", &database_url);
    let shipping = production_env(&table, &secrets, "shipping-svc", &database_url);
    let webhooks = production_env(&table, &secrets, "webhooks-svc", &database_url);
    let overlay = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/k8s/overlays/dev/kustomization.yaml"
    ))
    .expect("the development overlay");
    let committed = |name: &str| {
        overlay
            .lines()
            .find_map(|line| line.trim().strip_prefix(&format!("- {name}=")))
            .unwrap_or_else(|| panic!("the development overlay sets {name}"))
            .to_owned()
    };
    let committed_redis_password = "dev-gateway-redis-password";
    let cases = vec![
        (
            "identity-svc",
            with(&identity, "LAB_API_KEY_PEPPER", &committed("LAB_API_KEY_PEPPER")),
            "LAB_API_KEY_PEPPER",
        ),
        (
            "identity-svc",
            with(&identity, "LAB_API_KEY_PEPPER", "too-short-a-pepper"),
            "LAB_API_KEY_PEPPER",
        ),
        (
            "gateway",
            with(
                &gateway,
                "REDIS_URL",
                &format!("redis://gateway:{committed_redis_password}@127.0.0.1:6379"),
            ),
            "REDIS_URL",
        ),
        (
            "shipping-svc",
            with(
                &shipping,
                "SHIPPING_SIGNING_KEY",
                &committed("SHIPPING_SIGNING_KEY"),
            ),
            "SHIPPING_SIGNING_KEY",
        ),
        (
            "webhooks-svc",
            with(
                &webhooks,
                "WEBHOOKS_SECRET_KEYS",
                &committed("WEBHOOKS_SECRET_KEYS"),
            ),
            "WEBHOOKS_SECRET_KEYS",
        ),
    ];
    for (process, env, name) in cases {
        refuses(
            process,
            env,
            vec![name.to_owned()],
            format!("with a committed or short {name}"),
        )
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    }
}

#[tokio::test]
async fn a_coa_key_whose_public_part_does_not_match_its_private_part_or_an_unsound_previous_key_set_is_refused_at_start()
 {
    let table = table();
    let secrets = Secrets::generate(&table);
    let database_url = platform::testing::fresh_database().await;
    let env = production_env(&table, &secrets, "results-svc", &database_url);
    let current: serde_json::Value = serde_json::from_str(&secrets.coa_key).expect("a private JWK");
    let current_kid = current["kid"].as_str().unwrap().to_owned();
    let public = |kid: &serde_json::Value, x: &serde_json::Value| serde_json::json!({ "kty": "OKP", "crv": "Ed25519", "kid": kid, "x": x });
    let set = |keys: Vec<serde_json::Value>| serde_json::json!({ "keys": keys }).to_string();
    let (other, _) = SigningKey::generate("results-svc-coa-other");
    let mut mismatched = current.clone();
    mismatched["x"] = other.public_x.clone().into();
    let (previous, previous_private) = SigningKey::generate("results-svc-coa-previous");
    let previous_public = public(&previous.kid.clone().into(), &previous.public_x.clone().into());
    let previous_private: serde_json::Value =
        serde_json::from_str(previous_private.expose_secret()).expect("a private JWK");
    let cases = [
        (
            "RESULTS_COA_SIGNING_KEY",
            mismatched.to_string(),
            format!(
                "RESULTS_COA_SIGNING_KEY is refused: the COA signing key {current_kid:?}: x does not match d"
            ),
        ),
        (
            "RESULTS_COA_PREVIOUS_KEYS",
            set(vec![previous_private]),
            "RESULTS_COA_PREVIOUS_KEYS is refused: the previous COA key \"results-svc-coa-previous\" carries a private part"
                .to_owned(),
        ),
        (
            "RESULTS_COA_PREVIOUS_KEYS",
            set(vec![previous_public.clone(), previous_public.clone()]),
            "RESULTS_COA_PREVIOUS_KEYS is refused: the previous COA key \"results-svc-coa-previous\" is listed twice"
                .to_owned(),
        ),
        (
            "RESULTS_COA_PREVIOUS_KEYS",
            set(vec![public(&current["kid"], &current["x"])]),
            format!("RESULTS_COA_PREVIOUS_KEYS is refused: the previous COA key {current_kid:?} is the current key"),
        ),
    ];
    for (name, value, error) in cases {
        refuses(
            "results-svc",
            with(&env, name, &value),
            vec![error.clone()],
            format!("with {name}={value}"),
        )
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    }
    // A sound rotation starts: the current key and the public half of the previous one.
    starts(
        "results-svc",
        &with(&env, "RESULTS_COA_PREVIOUS_KEYS", &set(vec![previous_public])),
    )
    .await;
}

#[tokio::test]
async fn a_process_refuses_to_start_with_a_grpc_certificate_of_another_ca_or_an_expired_one() {
    let table = table();
    let secrets = Secrets::generate(&table);
    let database_url = platform::testing::fresh_database().await;
    let env = production_env(&table, &secrets, "orders-svc", &database_url);
    let stranger = platform::testing::pki::TestPki::new("another CA");
    let foreign = stranger.peer(&["orders-svc"]).write(&secrets.tls_dir, "foreign");
    let expired = secrets
        .pki
        .peer_until(&["orders-svc"], (2020, 1, 1))
        .write(&secrets.tls_dir, "expired");
    for ((cert, key), case) in [(foreign, "of another CA"), (expired, "expired")] {
        let changed = with(
            &with(&env, "GRPC_TLS_CERT_FILE", &cert.display().to_string()),
            "GRPC_TLS_KEY_FILE",
            &key.display().to_string(),
        );
        refuses(
            "orders-svc",
            changed,
            vec!["GRPC_TLS_CERT_FILE".to_owned()],
            format!("with a gRPC certificate {case}"),
        )
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    }
}

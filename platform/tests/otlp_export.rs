//! The OTLP span exporter (`platform::telemetry::otlp`) against a real OTLP/gRPC collector: a
//! tonic `TraceService` server on loopback (opentelemetry-proto's, decoding what the exporter
//! sends), over TLS or not, answering each call as the test scripts it. Spans reach an
//! `https://` collector verified with the CA file `OTEL_EXPORTER_OTLP_CERTIFICATE` names (with
//! a client certificate for one that requires it); the answers the OTLP specification calls
//! retryable, and a dropped connection, are retried with backoff until the collector takes the
//! batch or the retry budget is spent, the others are not; `RESOURCE_EXHAUSTED` is retried only with a `RetryInfo`, after
//! its delay; shutdown cuts a retry wait short; and with `OTEL_EXPORTER_OTLP_COMPRESSION=gzip`
//! the requests are gzip-encoded.
//!
//! The collector lives here rather than beside the tests crate's receiver (`tests::otlp`):
//! platform cannot depend on the tests crate.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use platform::telemetry::otlp::{Exporter, Queue, Retry, Settings};
use platform::testing::pki::TestPki;
use platform::testing::wait_for;
use prost::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

/// How long a test waits for what it expects.
const DEADLINE: Duration = Duration::from_secs(20);

/// One `Export` call as the collector saw it.
#[derive(Clone, Debug)]
struct Call {
    /// The names of the spans it carried, decoded.
    spans: Vec<String>,
    /// `service.name` of its resource.
    service: String,
    /// Its `grpc-encoding` header.
    encoding: Option<String>,
    /// The code the collector answered with.
    answered: tonic::Code,
}

/// The collector's answer to a call, given the call and how many came before it: `None` takes
/// the spans.
type Script = dyn Fn(&Call, usize) -> Option<tonic::Status> + Send + Sync;

#[derive(Clone)]
struct Collector {
    calls: Arc<Mutex<Vec<Call>>>,
    script: Arc<Script>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let encoding = request
            .metadata()
            .get("grpc-encoding")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let request = request.into_inner();
        let service = request
            .resource_spans
            .iter()
            .filter_map(|resource| resource.resource.as_ref())
            .flat_map(|resource| &resource.attributes)
            .find(|attribute| attribute.key == "service.name")
            .and_then(|attribute| attribute.value.as_ref()?.value.clone())
            .map(|value| match value {
                any_value::Value::StringValue(text) => text,
                other => format!("{other:?}"),
            })
            .unwrap_or_default();
        let spans = request
            .resource_spans
            .iter()
            .flat_map(|resource| &resource.scope_spans)
            .flat_map(|scope| &scope.spans)
            .map(|span| span.name.clone())
            .collect();
        let mut call = Call {
            spans,
            service,
            encoding,
            answered: tonic::Code::Ok,
        };
        let mut calls = self.calls.lock().unwrap();
        let answer = (self.script)(&call, calls.len());
        call.answered = answer.as_ref().map_or(tonic::Code::Ok, tonic::Status::code);
        calls.push(call);
        match answer {
            Some(status) => Err(status),
            None => Ok(tonic::Response::new(ExportTraceServiceResponse::default())),
        }
    }
}

/// A collector serving on a free loopback port until dropped.
struct Running {
    address: SocketAddr,
    calls: Arc<Mutex<Vec<Call>>>,
    shutdown: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Running {
    async fn start(
        tls: Option<ServerTlsConfig>,
        script: impl Fn(&Call, usize) -> Option<tonic::Status> + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::start_on(listener, tls, script)
    }

    fn start_on(
        listener: tokio::net::TcpListener,
        tls: Option<ServerTlsConfig>,
        script: impl Fn(&Call, usize) -> Option<tonic::Status> + Send + Sync + 'static,
    ) -> Self {
        let address = listener.local_addr().unwrap();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let collector = Collector {
            calls: Arc::clone(&calls),
            script: Arc::new(script),
        };
        let mut server = tonic::transport::Server::builder();
        if let Some(tls) = tls {
            server = server.tls_config(tls).expect("server TLS");
        }
        let shutdown = CancellationToken::new();
        let router = server.add_service(
            TraceServiceServer::new(collector).accept_compressed(tonic::codec::CompressionEncoding::Gzip),
        );
        tokio::spawn(router.serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener),
            shutdown.clone().cancelled_owned(),
        ));
        Self {
            address,
            calls,
            shutdown,
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Waits for the calls until `done` says they are complete, and returns them.
    async fn wait_for_calls(&self, what: &str, done: impl Fn(&[Call]) -> bool) -> Vec<Call> {
        wait_for(what, DEADLINE, || {
            let calls = self.calls();
            std::future::ready(done(&calls).then_some(calls))
        })
        .await
    }

    /// Waits until the collector has taken a span named `name`, and returns every call so far.
    async fn wait_for_span(&self, name: &str) -> Vec<Call> {
        self.wait_for_calls(&format!("the collector to take span {name:?}"), |calls| {
            calls
                .iter()
                .any(|call| call.answered == tonic::Code::Ok && call.spans.iter().any(|span| span == name))
        })
        .await
    }
}

/// An exporter per `variables` (the environment it reads), `adjust`ed, one span per batch.
fn exporter(variables: &[(&str, String)], adjust: impl FnOnce(&mut Settings)) -> (Arc<Queue>, Exporter) {
    let mut variables = variables.to_vec();
    variables.push(("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1".to_owned()));
    let mut settings = Settings::from_env("otlp-export-test", |name| {
        variables
            .iter()
            .find(|(variable, _)| *variable == name)
            .map(|(_, value)| value.clone())
    })
    .expect("an endpoint is set");
    assert!(settings.warnings.is_empty(), "{:?}", settings.warnings);
    adjust(&mut settings);
    let connection = settings.connection().expect("usable exporter settings");
    let queue = Arc::new(Queue::new(settings.batch_size, settings.max_queued));
    let exporter = Exporter::start(settings, connection, Arc::clone(&queue), "otlp-export-test")
        .expect("the export thread starts");
    (queue, exporter)
}

/// Queues a closed span named `name`.
fn push(queue: &Queue, name: &str) {
    let span = Span {
        trace_id: vec![7; 16],
        span_id: vec![9; 8],
        name: name.to_owned(),
        kind: 1,
        start_time_unix_nano: 1_700_000_000_000_000_000,
        end_time_unix_nano: 1_700_000_000_000_001_000,
        ..Span::default()
    };
    let body = span.encode_to_vec();
    queue.push(|buffer| buffer.extend_from_slice(&body));
}

/// Quick retries, so that a test of what is retried does not wait out the defaults.
fn quick_retries(settings: &mut Settings) {
    settings.retry = Retry {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(80),
        budget: Duration::from_secs(10),
    };
}

fn plaintext(address: SocketAddr) -> (&'static str, String) {
    ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{address}"))
}

fn takes_everything(_: &Call, _: usize) -> Option<tonic::Status> {
    None
}

/// A directory of its own for a test's files.
fn scratch_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lab-otlp-export-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn spans_reach_an_https_collector_verified_with_the_ca_file_otel_exporter_otlp_certificate_names() {
    let pki = TestPki::new("collector CA");
    let server = pki.server(&["localhost"]);
    let collector = Running::start(
        Some(ServerTlsConfig::new().identity(Identity::from_pem(&server.cert_pem, &server.key_pem))),
        takes_everything,
    )
    .await;
    let dir = scratch_dir();
    let ca = dir.join("collector-ca.pem");
    pki.write_ca(&ca);
    let (queue, _exporter) = exporter(
        &[
            // A name, as a collector is addressed; its certificate carries it.
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("https://localhost:{}", collector.address.port()),
            ),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.display().to_string()),
        ],
        |_| {},
    );
    push(&queue, "over TLS");
    let calls = collector.wait_for_span("over TLS").await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].service, "otlp-export-test");
    assert_eq!(calls[0].encoding, None, "not compressed by default");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_collector_that_requires_a_client_certificate_takes_spans_from_the_one_the_settings_name() {
    let pki = TestPki::new("collector CA");
    let server = pki.server(&["localhost"]);
    let collector = Running::start(
        Some(
            ServerTlsConfig::new()
                .identity(Identity::from_pem(&server.cert_pem, &server.key_pem))
                .client_ca_root(Certificate::from_pem(pki.ca_pem())),
        ),
        takes_everything,
    )
    .await;
    let dir = scratch_dir();
    let ca = dir.join("collector-ca.pem");
    pki.write_ca(&ca);
    let (cert, key) = pki.client("orders-svc").write(&dir, "client");
    let (queue, _exporter) = exporter(
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("https://localhost:{}", collector.address.port()),
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", ca.display().to_string()),
            (
                "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
                cert.display().to_string(),
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", key.display().to_string()),
        ],
        |_| {},
    );
    push(&queue, "over mutual TLS");
    collector.wait_for_span("over mutual TLS").await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_client_key_that_is_not_the_client_certificates_is_refused_before_export_starts() {
    let pki = TestPki::new("collector CA");
    let dir = scratch_dir();
    let (cert, _) = pki.client("orders-svc").write(&dir, "client");
    let (_, other_key) = pki.client("payments-svc").write(&dir, "other");
    let settings = Settings::from_env("otlp-export-test", |name| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("https://collector:4317".to_owned()),
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE" => Some(cert.display().to_string()),
        "OTEL_EXPORTER_OTLP_CLIENT_KEY" => Some(other_key.display().to_string()),
        _ => None,
    })
    .unwrap();
    let error = settings.connection().expect_err("a key of another certificate");
    assert!(
        error.starts_with(&format!(
            "OTEL_EXPORTER_OTLP_CLIENT_KEY={} is not the private key of the certificate in OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE={}",
            other_key.display(),
            cert.display()
        )),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_export_answered_unavailable_is_retried_until_the_collector_takes_it() {
    let collector = Running::start(None, |_, before| {
        (before < 2).then(|| tonic::Status::unavailable("collector starting"))
    })
    .await;
    let (queue, _exporter) = exporter(&[plaintext(collector.address)], quick_retries);
    push(&queue, "retried");
    let calls = collector.wait_for_span("retried").await;
    let seen: Vec<(tonic::Code, Vec<String>)> = calls
        .into_iter()
        .map(|call| (call.answered, call.spans))
        .collect();
    let batch = vec!["retried".to_owned()];
    assert_eq!(
        seen,
        [
            (tonic::Code::Unavailable, batch.clone()),
            (tonic::Code::Unavailable, batch.clone()),
            (tonic::Code::Ok, batch),
        ]
    );
}

#[tokio::test]
async fn an_export_to_a_collector_that_drops_the_connection_is_retried_once_the_collector_is_back() {
    // First a port that accepts connections and closes them at once (a collector restarting),
    // counting them; then, once the exporter has been turned away, the collector on it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let turning_away = tokio::spawn({
        let accepted = Arc::clone(&accepted);
        async move {
            loop {
                if let Ok((stream, _)) = listener.accept().await {
                    accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    drop(stream);
                }
            }
        }
    });
    let (queue, _exporter) = exporter(&[plaintext(address)], quick_retries);
    push(&queue, "after the restart");
    wait_for("the exporter to be turned away", DEADLINE, || {
        std::future::ready((accepted.load(std::sync::atomic::Ordering::SeqCst) > 0).then_some(()))
    })
    .await;
    turning_away.abort();
    let _ = turning_away.await;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("the port again");
    let collector = Running::start_on(listener, None, takes_everything);
    let calls = collector.wait_for_span("after the restart").await;
    assert_eq!(calls.len(), 1, "{calls:?}");
}

#[tokio::test]
async fn an_export_answered_invalid_argument_is_dropped_without_a_retry() {
    let collector = Running::start(None, |_, before| {
        (before == 0).then(|| tonic::Status::invalid_argument("malformed spans"))
    })
    .await;
    let (queue, _exporter) = exporter(&[plaintext(collector.address)], quick_retries);
    push(&queue, "refused");
    collector
        .wait_for_calls("the first export", |calls| !calls.is_empty())
        .await;
    // The exporter sends one batch at a time: a retry of the first would come before the next.
    push(&queue, "next");
    let calls = collector.wait_for_span("next").await;
    let seen: Vec<(tonic::Code, Vec<String>)> = calls
        .into_iter()
        .map(|call| (call.answered, call.spans))
        .collect();
    assert_eq!(
        seen,
        [
            (tonic::Code::InvalidArgument, vec!["refused".to_owned()]),
            (tonic::Code::Ok, vec!["next".to_owned()]),
        ]
    );
}

/// `grpc-status-details-bin` holding a `google.rpc.Status` whose details are one
/// `google.rpc.RetryInfo` asking for `delay`.
fn retry_info_details(code: tonic::Code, delay: Duration) -> bytes::Bytes {
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
        #[prost(message, repeated, tag = "3")]
        details: Vec<prost_types::Any>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct RetryInfo {
        #[prost(message, optional, tag = "1")]
        retry_delay: Option<prost_types::Duration>,
    }
    let retry_info = RetryInfo {
        retry_delay: Some(delay.try_into().unwrap()),
    };
    RpcStatus {
        code: code as i32,
        message: "over quota".to_owned(),
        details: vec![prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.RetryInfo".to_owned(),
            value: retry_info.encode_to_vec(),
        }],
    }
    .encode_to_vec()
    .into()
}

#[tokio::test]
async fn resource_exhausted_is_retried_only_with_retry_info_and_after_the_delay_it_asks_for() {
    let collector = Running::start(None, |_, before| match before {
        0 => Some(tonic::Status::with_details(
            tonic::Code::ResourceExhausted,
            "over quota",
            retry_info_details(tonic::Code::ResourceExhausted, Duration::from_millis(30)),
        )),
        1 => Some(tonic::Status::resource_exhausted("over quota, for good")),
        _ => None,
    })
    .await;
    // A backoff of an hour: only the RetryInfo's 30 ms lets the retry come within the test.
    let (queue, _exporter) = exporter(&[plaintext(collector.address)], |settings| {
        settings.retry = Retry {
            initial: Duration::from_secs(3600),
            max: Duration::from_secs(3600),
            budget: Duration::from_secs(7200),
        };
    });
    push(&queue, "quota");
    collector
        .wait_for_calls("the retry RetryInfo asked for", |calls| calls.len() >= 2)
        .await;
    push(&queue, "next");
    let calls = collector.wait_for_span("next").await;
    let seen: Vec<(tonic::Code, Vec<String>)> = calls
        .into_iter()
        .map(|call| (call.answered, call.spans))
        .collect();
    assert_eq!(
        seen,
        [
            (tonic::Code::ResourceExhausted, vec!["quota".to_owned()]),
            (tonic::Code::ResourceExhausted, vec!["quota".to_owned()]),
            (tonic::Code::Ok, vec!["next".to_owned()]),
        ],
        "retried once (with RetryInfo), then dropped (without)"
    );
}

#[tokio::test]
async fn a_batch_the_collector_keeps_refusing_is_dropped_once_its_retry_budget_is_spent() {
    let collector = Running::start(None, |call, _| {
        call.spans
            .iter()
            .any(|span| span == "doomed")
            .then(|| tonic::Status::unavailable("down for this batch"))
    })
    .await;
    let (queue, _exporter) = exporter(&[plaintext(collector.address)], |settings| {
        settings.retry = Retry {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(40),
            budget: Duration::from_millis(300),
        };
    });
    push(&queue, "doomed");
    push(&queue, "behind it");
    let calls = collector.wait_for_span("behind it").await;
    let (last, doomed) = calls.split_last().unwrap();
    assert_eq!(last.spans, ["behind it"]);
    assert!(doomed.len() >= 2, "the batch was retried: {calls:?}");
    assert!(
        doomed
            .iter()
            .all(|call| call.spans == ["doomed"] && call.answered == tonic::Code::Unavailable),
        "{calls:?}"
    );
}

#[tokio::test]
async fn shutdown_cuts_a_retry_wait_short_for_one_last_attempt() {
    let collector = Running::start(None, |_, _| Some(tonic::Status::unavailable("down"))).await;
    // Waits of an hour, and an export timeout of a minute (shutdown's own bound is the timeout
    // and a second): only a wait cut short lets shutdown return within the deadline.
    let (queue, exporter) = exporter(
        &[
            plaintext(collector.address),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000".to_owned()),
        ],
        |settings| {
            settings.retry = Retry {
                initial: Duration::from_secs(3600),
                max: Duration::from_secs(3600),
                budget: Duration::from_secs(7200),
            };
        },
    );
    push(&queue, "at shutdown");
    collector
        .wait_for_calls("the first export", |calls| !calls.is_empty())
        .await;
    tokio::time::timeout(DEADLINE, tokio::task::spawn_blocking(move || exporter.shutdown()))
        .await
        .expect("shutdown does not wait out the retry")
        .unwrap();
    let calls = collector.calls();
    assert_eq!(calls.len(), 2, "the first attempt and one last: {calls:?}");
}

#[tokio::test]
async fn with_compression_gzip_the_collector_receives_gzip_encoded_requests_whose_spans_decode() {
    let collector = Running::start(None, takes_everything).await;
    let (queue, _exporter) = exporter(
        &[
            plaintext(collector.address),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip".to_owned()),
        ],
        |_| {},
    );
    let name = "GET /api/v1/agent/orders/{id} ".repeat(20);
    push(&queue, &name);
    let calls = collector.wait_for_span(&name).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].encoding.as_deref(), Some("gzip"));
    assert_eq!(calls[0].spans, [name]);
    assert_eq!(calls[0].service, "otlp-export-test");

    // Without the setting, plaintext requests are not compressed.
    let (queue, _exporter) = exporter(&[plaintext(collector.address)], |_| {});
    push(&queue, "plain");
    let calls = collector.wait_for_span("plain").await;
    assert_eq!(calls.last().unwrap().encoding, None);
}

//! A real OTLP/gRPC trace receiver on loopback for tests: the services export to it exactly as
//! they would to a collector or Jaeger (`OTEL_EXPORTER_OTLP_ENDPOINT`), and it keeps every span
//! it is sent, flattened with its resource's `service.name`.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One received span.
#[derive(Clone, Debug)]
pub struct Span {
    /// `service.name` of the process that exported it.
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// `SpanKind` of the protocol: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    /// `Status.code` of the protocol: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// Attributes as text (numbers and booleans printed).
    pub attributes: HashMap<String, String>,
    /// Links to other spans, as (trace id, span id).
    pub links: Vec<(String, String)>,
}

impl Span {
    /// An attribute's value as text, if set.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// Span kinds of the protocol.
pub mod kind {
    pub const INTERNAL: i32 = 1;
    pub const SERVER: i32 = 2;
    pub const CLIENT: i32 = 3;
    pub const PRODUCER: i32 = 4;
    pub const CONSUMER: i32 = 5;
}

#[derive(Clone, Default)]
struct Store {
    spans: Arc<Mutex<Vec<Span>>>,
    /// Spans received (kept or not).
    received: Arc<std::sync::atomic::AtomicU64>,
    /// Count spans without keeping them (benchmarks send millions).
    count_only: bool,
}

#[tonic::async_trait]
impl TraceService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let request = request.into_inner();
        let count: usize = request
            .resource_spans
            .iter()
            .flat_map(|resource| &resource.scope_spans)
            .map(|scope| scope.spans.len())
            .sum();
        self.received
            .fetch_add(count as u64, std::sync::atomic::Ordering::Relaxed);
        if self.count_only {
            return Ok(tonic::Response::new(ExportTraceServiceResponse::default()));
        }
        let mut received = Vec::new();
        for resource_spans in request.resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|resource| {
                    resource
                        .attributes
                        .iter()
                        .find(|attribute| attribute.key == "service.name")
                })
                .map(|attribute| text(attribute.value.as_ref()))
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    received.push(Span {
                        service: service.clone(),
                        trace_id: hex::encode(&span.trace_id),
                        span_id: hex::encode(&span.span_id),
                        parent_span_id: hex::encode(&span.parent_span_id),
                        name: span.name,
                        kind: span.kind,
                        status: span.status.map(|status| status.code).unwrap_or_default(),
                        attributes: attributes(&span.attributes),
                        links: span
                            .links
                            .iter()
                            .map(|link| (hex::encode(&link.trace_id), hex::encode(&link.span_id)))
                            .collect(),
                    });
                }
            }
        }
        self.spans.lock().unwrap().extend(received);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn attributes(pairs: &[KeyValue]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|pair| (pair.key.clone(), text(pair.value.as_ref())))
        .collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::DoubleValue(number)) => number.to_string(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// The receiver: an OTLP/gRPC server on a free loopback port.
pub struct OtlpReceiver {
    address: SocketAddr,
    store: Store,
    shutdown: CancellationToken,
}

impl OtlpReceiver {
    /// Starts listening, keeping every span.
    pub async fn start() -> Self {
        Self::start_with(Store::default()).await
    }

    /// Starts listening, only counting the spans ([`Self::received`]).
    pub async fn start_counting() -> Self {
        Self::start_with(Store {
            count_only: true,
            ..Store::default()
        })
        .await
    }

    /// How many spans were received.
    pub fn received(&self) -> u64 {
        self.store.received.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn start_with(store: Store) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let address = listener.local_addr().expect("its address");
        let shutdown = CancellationToken::new();
        let service = TraceServiceServer::new(store.clone()).max_decoding_message_size(64 * 1024 * 1024);
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    stop.cancelled_owned(),
                )
                .await;
        });
        Self {
            address,
            store,
            shutdown,
        }
    }

    /// The value for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.store.spans.lock().unwrap().clone()
    }

    /// The spans of one trace.
    pub fn trace(&self, trace_id: &str) -> Vec<Span> {
        self.spans()
            .into_iter()
            .filter(|span| span.trace_id == trace_id)
            .collect()
    }

    /// Waits (up to `patience`) until `done` holds for the spans received, and returns them.
    pub async fn wait_until(&self, patience: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let spans = self.spans();
            if done(&spans) || tokio::time::Instant::now() > deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

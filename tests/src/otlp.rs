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
    /// Spans received (kept, or only counted by [`OtlpReceiver::start_counting`]).
    received: Arc<std::sync::atomic::AtomicU64>,
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

    /// Starts listening, only counting the spans ([`Self::received`]): each request's spans are
    /// counted by walking its protobuf without decoding them, so that in a benchmark the receiver
    /// (which a deployment runs on other machines) takes as little as it can of the CPU the
    /// services are measured on.
    pub async fn start_counting() -> Self {
        let store = Store::default();
        let service = counting::CountingTraceService(store.received.clone());
        Self::serve(store, service).await
    }

    /// How many spans were received.
    pub fn received(&self) -> u64 {
        self.store.received.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn start_with(store: Store) -> Self {
        let service = TraceServiceServer::new(store.clone()).max_decoding_message_size(64 * 1024 * 1024);
        Self::serve(store, service).await
    }

    async fn serve<S>(store: Store, service: S) -> Self
    where
        S: tower::Service<
                http::Request<tonic::body::Body>,
                Response = http::Response<tonic::body::Body>,
                Error = std::convert::Infallible,
            > + tonic::server::NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let address = listener.local_addr().expect("its address");
        let shutdown = CancellationToken::new();
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

/// The counting receiver's `TraceService/Export`: a request's spans are counted on the wire
/// (`ExportTraceServiceRequest.resource_spans[].scope_spans[].spans[]`, fields 1, 2 and 2).
mod counting {
    use bytes::Buf;
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::task::{Context, Poll};

    const PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

    #[derive(Clone)]
    pub struct CountingTraceService(pub Arc<AtomicU64>);

    impl tonic::server::NamedService for CountingTraceService {
        const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
    }

    impl tower::Service<http::Request<tonic::body::Body>> for CountingTraceService {
        type Response = http::Response<tonic::body::Body>;
        type Error = Infallible;
        type Future =
            std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
            let received = self.0.clone();
            Box::pin(async move {
                if request.uri().path() != PATH {
                    return Ok(tonic::Status::unimplemented("only TraceService/Export").into_http());
                }
                let mut grpc = tonic::server::Grpc::new(CountCodec)
                    .apply_max_message_size_config(Some(64 * 1024 * 1024), None);
                Ok(grpc.unary(Count(received), request).await)
            })
        }
    }

    struct Count(Arc<AtomicU64>);

    impl tonic::server::UnaryService<u64> for Count {
        type Response = ();
        type Future = std::future::Ready<Result<tonic::Response<()>, tonic::Status>>;

        fn call(&mut self, request: tonic::Request<u64>) -> Self::Future {
            self.0.fetch_add(request.into_inner(), Ordering::Relaxed);
            std::future::ready(Ok(tonic::Response::new(())))
        }
    }

    /// Decodes a request into its span count; encodes the (empty) answer.
    #[derive(Clone, Copy)]
    struct CountCodec;

    impl tonic::codec::Codec for CountCodec {
        type Encode = ();
        type Decode = u64;
        type Encoder = CountCodec;
        type Decoder = CountCodec;

        fn encoder(&mut self) -> Self::Encoder {
            CountCodec
        }

        fn decoder(&mut self) -> Self::Decoder {
            CountCodec
        }
    }

    impl tonic::codec::Encoder for CountCodec {
        type Item = ();
        type Error = tonic::Status;

        fn encode(&mut self, _: (), _: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), tonic::Status> {
            Ok(())
        }
    }

    impl tonic::codec::Decoder for CountCodec {
        type Item = u64;
        type Error = tonic::Status;

        fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<u64>, tonic::Status> {
            let message = src.copy_to_bytes(src.remaining());
            spans_in(&message)
                .map(Some)
                .ok_or_else(|| tonic::Status::invalid_argument("not an ExportTraceServiceRequest"))
        }
    }

    /// The spans of an encoded `ExportTraceServiceRequest` (`None` when it is malformed).
    pub fn spans_in(request: &[u8]) -> Option<u64> {
        let mut count = 0;
        for resource_spans in fields(request, 1)? {
            for scope_spans in fields(resource_spans, 2)? {
                count += fields(scope_spans, 2)?.len() as u64;
            }
        }
        Some(count)
    }

    /// The length-delimited fields numbered `tag` of a message, other fields skipped.
    fn fields(mut message: &[u8], tag: u64) -> Option<Vec<&[u8]>> {
        let mut found = Vec::new();
        while !message.is_empty() {
            let key = varint(&mut message)?;
            match key & 7 {
                0 => {
                    varint(&mut message)?;
                }
                1 => message = message.get(8..)?,
                2 => {
                    let length = usize::try_from(varint(&mut message)?).ok()?;
                    let (value, rest) = (message.get(..length)?, message.get(length..)?);
                    if key >> 3 == tag {
                        found.push(value);
                    }
                    message = rest;
                }
                5 => message = message.get(4..)?,
                _ => return None,
            }
        }
        Some(found)
    }

    fn varint(buf: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = buf.split_first()?;
            *buf = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    #[cfg(test)]
    mod tests {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
        use prost::Message;

        #[test]
        fn the_wire_count_matches_the_spans_a_decoder_sees() {
            let span = |name: &str| Span {
                name: name.to_owned(),
                trace_id: vec![1; 16],
                span_id: vec![2; 8],
                start_time_unix_nano: 1_000,
                ..Span::default()
            };
            let request = ExportTraceServiceRequest {
                resource_spans: vec![
                    ResourceSpans {
                        scope_spans: vec![
                            ScopeSpans {
                                spans: vec![span("a"), span("b")],
                                ..ScopeSpans::default()
                            },
                            ScopeSpans {
                                spans: vec![span("c")],
                                ..ScopeSpans::default()
                            },
                        ],
                        ..ResourceSpans::default()
                    },
                    ResourceSpans {
                        scope_spans: vec![ScopeSpans {
                            spans: vec![span("d")],
                            ..ScopeSpans::default()
                        }],
                        schema_url: "https://opentelemetry.io/schemas/1.30.0".to_owned(),
                        ..ResourceSpans::default()
                    },
                ],
            };
            let bytes = request.encode_to_vec();
            assert_eq!(super::spans_in(&bytes), Some(4));
            assert_eq!(super::spans_in(&bytes[..bytes.len() - 3]), None, "a cut message");
            assert_eq!(super::spans_in(&[]), Some(0));
        }
    }
}

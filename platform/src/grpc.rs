//! gRPC plumbing: the principal the access layer (`crate::access`) verified, the tower layer
//! that continues the caller's trace, the metadata helpers of outgoing calls, and serving with a
//! shutdown token.

use crate::error::{ApiError, ErrorCode};
use crate::principal::Principal;
use opentelemetry::propagation::{Extractor, Injector};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::{Request, Status};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Metadata entry carrying the idempotency key of a mutating call.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Response metadata entry set when the response is a stored replay.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// Returns the principal the access layer stored on a request.
pub fn principal<T>(request: &Request<T>) -> Result<Principal, Status> {
    request
        .extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| Status::from(ApiError::new(ErrorCode::Unauthenticated, "missing principal")))
}

/// Returns the idempotency key of a request, validated to 8..=255 visible ASCII characters.
pub fn idempotency_key<T>(request: &Request<T>) -> Result<String, Status> {
    let value = request.metadata().get(IDEMPOTENCY_KEY).ok_or_else(|| {
        Status::from(ApiError::new(
            ErrorCode::IdempotencyKeyMissing,
            "the Idempotency-Key header is required",
        ))
    })?;
    let key = value.to_str().unwrap_or_default();
    validate_idempotency_key(key).map_err(Status::from)?;
    Ok(key.to_owned())
}

/// Checks the spec's idempotency key rule: 8 to 255 visible ASCII characters.
pub fn validate_idempotency_key(key: &str) -> Result<(), ApiError> {
    let visible = key.bytes().all(|byte| byte.is_ascii_graphic());
    if (8..=255).contains(&key.len()) && visible {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::IdempotencyKeyInvalid,
            "the Idempotency-Key header must be 8 to 255 visible ASCII characters",
        ))
    }
}

/// Builds an outgoing request carrying a principal token and the current trace context.
pub fn outgoing<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    if let Ok(value) = MetadataValue::try_from(format!("Bearer {token}")) {
        request.metadata_mut().insert("authorization", value);
    }
    inject_trace_context(request.metadata_mut());
    request
}

/// Builds an outgoing request that also carries an idempotency key.
pub fn outgoing_idempotent<T>(message: T, token: &str, key: &str) -> Request<T> {
    let mut request = outgoing(message, token);
    if let Ok(value) = MetadataValue::try_from(key) {
        request.metadata_mut().insert(IDEMPOTENCY_KEY, value);
    }
    request
}

/// Marks a response as a replay of a stored idempotent result.
pub fn mark_replayed<T>(response: &mut tonic::Response<T>) {
    response
        .metadata_mut()
        .insert(IDEMPOTENT_REPLAYED, MetadataValue::from_static("true"));
}

/// Injects the current span's W3C trace context into gRPC metadata.
pub fn inject_trace_context(metadata: &mut MetadataMap) {
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut MetadataInjector(metadata));
    });
}

struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value),
        ) {
            self.0.insert(key, value);
        }
    }
}

/// Reads W3C trace context from HTTP headers (gRPC metadata travels as HTTP/2 headers).
pub struct HeaderExtractor<'a>(pub &'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|key| key.as_str()).collect()
    }
}

/// Makes the span of an incoming request a child of the caller's trace.
pub fn span_for_request<B>(request: &http::Request<B>) -> tracing::Span {
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(request.headers()))
    });
    let span = tracing::info_span!("grpc.request", rpc = %request.uri().path(), otel.kind = "server");
    let _ = span.set_parent(parent);
    span
}

/// A tonic router built on [`server_builder`] (its requests pass the input rules first).
pub type MeshRouter = tonic::transport::server::Router<
    tower::layer::util::Stack<crate::input::layer::InputLayer, tower::layer::util::Identity>,
>;

/// Serves a tonic router on `listener` until `shutdown` fires, then drains in-flight calls.
pub async fn serve(
    router: MeshRouter,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    router
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
        .await?;
    Ok(())
}

/// Returns a server builder with the mesh's defaults (trace span per request, timeouts, and
/// the input rules of `platform::input` applied to every incoming message).
pub fn server_builder() -> tonic::transport::Server<
    tower::layer::util::Stack<crate::input::layer::InputLayer, tower::layer::util::Identity>,
> {
    tonic::transport::Server::builder()
        .timeout(std::time::Duration::from_secs(30))
        .trace_fn(span_for_request)
        .layer(crate::input::layer::InputLayer)
}

/// Connects lazily to a peer service; the first call establishes the connection.
pub fn lazy_channel(address: &str) -> anyhow::Result<tonic::transport::Channel> {
    let endpoint = tonic::transport::Endpoint::from_shared(address.to_owned())?
        .connect_timeout(std::time::Duration::from_secs(3))
        .timeout(std::time::Duration::from_secs(30))
        .tcp_nodelay(true);
    Ok(endpoint.connect_lazy())
}

/// Answers the outcome of an idempotent operation, marking stored replays (successes and errors
/// alike) with `idempotent-replayed: true` so the gateway can say so to the client.
pub fn replayable_response<T>(
    result: Result<T, ApiError>,
    replayed: bool,
) -> Result<tonic::Response<T>, Status> {
    match result {
        Ok(body) => {
            let mut response = tonic::Response::new(body);
            if replayed {
                mark_replayed(&mut response);
            }
            Ok(response)
        }
        Err(error) => {
            let mut status = Status::from(error);
            if replayed {
                status
                    .metadata_mut()
                    .insert(IDEMPOTENT_REPLAYED, MetadataValue::from_static("true"));
            }
            Err(status)
        }
    }
}

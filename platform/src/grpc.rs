//! gRPC plumbing: the principal the access layer (`crate::access`) verified, the tower layer
//! that continues the caller's trace, the metadata helpers of outgoing calls, and serving with a
//! shutdown token (over TCP, and in memory for peers in the same process: [`in_process`]).

pub mod in_process;

use crate::error::{ApiError, ErrorCode};
use crate::principal::Principal;
use futures::StreamExt;
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

/// The layers of [`server_builder`]: metrics outermost, then the input rules.
pub type MeshLayers = tower::layer::util::Stack<
    crate::input::layer::InputLayer,
    tower::layer::util::Stack<crate::metrics::layer::RpcMetricsLayer, tower::layer::util::Identity>,
>;

/// A tonic router built on [`server_builder`] (its requests are counted, then pass the input
/// rules).
pub type MeshRouter = tonic::transport::server::Router<MeshLayers>;

/// Serves a tonic router on `listener` until `shutdown` fires, then drains in-flight calls.
/// A loopback listener also takes the in-memory connections of channels of this process that
/// target its address ([`in_process`]).
pub async fn serve(
    router: MeshRouter,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let (registration, in_memory) = in_process::register(listener.local_addr()?);
    let tcp = incoming(listener).map(|accepted| accepted.map(in_process::MeshStream::Tcp));
    let in_memory = in_memory.map(|stream| Ok(in_process::MeshStream::Memory(stream)));
    router
        .serve_with_incoming_shutdown(
            futures::stream::select(tcp, in_memory),
            shutdown.cancelled_owned(),
        )
        .await?;
    drop(registration);
    Ok(())
}

/// The connections accepted on a gRPC listener, each with `TCP_NODELAY` set.
///
/// Why: a unary answer leaves as two writes (HEADERS, then DATA and trailers); without
/// `TCP_NODELAY` Nagle's algorithm holds the second until the caller's delayed ACK, and every
/// call through the mesh took 40 ms more (issue 7). `serve_with_incoming` ignores the builder's
/// `tcp_nodelay`, so the accepted sockets get it here.
pub fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// Returns a server builder with the mesh's defaults (trace span per request, timeouts, every
/// call counted in `platform::metrics`, and the input rules of `platform::input` applied to
/// every incoming message).
pub fn server_builder() -> tonic::transport::Server<MeshLayers> {
    tonic::transport::Server::builder()
        .timeout(std::time::Duration::from_secs(30))
        .trace_fn(span_for_request)
        .layer(crate::metrics::layer::RpcMetricsLayer)
        .layer(crate::input::layer::InputLayer)
}

/// Connects lazily to a peer service; the first call establishes the connection. A peer at a
/// loopback address is reached in memory when this process serves it ([`in_process`]).
pub fn lazy_channel(address: &str) -> anyhow::Result<tonic::transport::Channel> {
    let endpoint = peer_endpoint(address)?;
    match in_process::loopback_target(endpoint.uri()) {
        Some(target) if in_process::enabled() => {
            let connector = tower::service_fn(move |_: http::Uri| in_process::connect(target));
            Ok(endpoint.connect_with_connector_lazy(connector))
        }
        _ => Ok(endpoint.connect_lazy()),
    }
}

/// The endpoint of a peer service: connect and call timeouts, and `TCP_NODELAY` as on the
/// accepting side (tonic's default, stated so that it stays).
pub fn peer_endpoint(address: &str) -> anyhow::Result<tonic::transport::Endpoint> {
    Ok(tonic::transport::Endpoint::from_shared(address.to_owned())?
        .connect_timeout(std::time::Duration::from_secs(3))
        .timeout(std::time::Duration::from_secs(30))
        .tcp_nodelay(true))
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn accepted_grpc_connections_have_tcp_nodelay_set() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut accepted = incoming(listener);
        let client = tokio::net::TcpStream::connect(address).await.unwrap();
        let server_side = accepted.next().await.unwrap().unwrap();
        assert!(
            server_side.nodelay().unwrap(),
            "the accepted socket has TCP_NODELAY"
        );
        drop(client);
    }

    #[tokio::test]
    async fn a_peer_served_by_this_process_is_called_in_memory_and_others_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (_reporter, health) = tonic_health::server::health_reporter();
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve(
            server_builder().add_service(health),
            listener,
            shutdown.clone(),
        ));
        let check = |channel| async move {
            let mut client = tonic_health::pb::health_client::HealthClient::new(channel);
            client
                .check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .map(|response| response.into_inner().status)
        };
        // The server registers itself when its task starts; until then channels use TCP.
        let mut in_memory = false;
        for _ in 0..100 {
            let before = in_process::handed_over();
            let channel = lazy_channel(&format!("http://{address}")).unwrap();
            assert!(check(channel).await.is_ok());
            if in_process::handed_over() > before {
                in_memory = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            in_memory,
            "a channel to this process's own server connects in memory"
        );
        // Through "localhost" (a name, not a loopback literal) the same server answers over TCP.
        let before = in_process::handed_over();
        let channel = lazy_channel(&format!("http://localhost:{}", address.port())).unwrap();
        assert!(check(channel).await.is_ok());
        assert_eq!(
            in_process::handed_over(),
            before,
            "no in-memory connection for a name"
        );
        shutdown.cancel();
        server.await.unwrap().unwrap();
    }

    #[test]
    fn peer_channels_ask_for_tcp_nodelay() {
        let endpoint = peer_endpoint("http://127.0.0.1:1").unwrap();
        assert!(endpoint.get_tcp_nodelay());
        let default = tonic::transport::Endpoint::from_static("http://127.0.0.1:1");
        assert!(
            default.get_tcp_nodelay(),
            "tonic's default, relied upon by labctl's connect"
        );
    }
}

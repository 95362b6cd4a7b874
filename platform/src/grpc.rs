//! gRPC plumbing: the principal the access layer (`crate::access`) verified, the tower layer
//! that continues the caller's trace, the metadata helpers of outgoing calls, and serving with a
//! shutdown token (over TCP, and in memory for peers in the same process: [`in_process`]), and
//! the channel peers are called through ([`MeshChannel`]); both over mutual TLS when the process
//! has TLS settings ([`tls`]).

pub mod dns;
pub mod in_process;
pub mod tls;

use crate::error::{ApiError, ErrorCode};
use crate::principal::Principal;
use futures::future::BoxFuture;
use std::convert::Infallible;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Request, Status};
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;
use tracing::Instrument;

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
    // The customer the current work acts for, proven (`crate::delegation`).
    crate::delegation::attach_current(request.metadata_mut());
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

/// Injects the W3C trace context to pass on into gRPC metadata: the current span's while spans
/// are exported, else the one the work arrived with (`telemetry::passed_on`).
pub fn inject_trace_context(metadata: &mut MetadataMap) {
    // While spans are exported every mesh call goes through `MeshChannel`, which writes its
    // client span's context over this one: making it here would be work thrown away.
    if crate::telemetry::exporting() {
        return;
    }
    let (traceparent, tracestate) = crate::telemetry::current_trace_context();
    for (key, value) in [("traceparent", traceparent), ("tracestate", tracestate)] {
        if let Ok(mut value) = MetadataValue::try_from(value)
            && !value.is_empty()
        {
            // A value that changes with every call is sent "never indexed" ([`set_trace_headers`]).
            value.set_sensitive(true);
            metadata.insert(key, value);
        }
    }
}

/// Writes `traceparent` and `tracestate` (an empty value removes the header) into an outgoing
/// call's headers, marked so that HPACK sends them as literals that are never indexed: a value
/// new with every call would otherwise enter the connection's header table each time and,
/// filling it, evict the headers that repeat (the authorization token, content type,
/// timeout), which then go out in full again. Measured in docs/performance.md, "Tracing".
fn set_trace_headers(headers: &mut http::HeaderMap, traceparent: String, tracestate: String) {
    for (name, value) in [("traceparent", traceparent), ("tracestate", tracestate)] {
        match http::HeaderValue::try_from(value) {
            Ok(mut value) if !value.is_empty() => {
                value.set_sensitive(true);
                headers.insert(name, value);
            }
            _ => {
                headers.remove(name);
            }
        }
    }
}

/// Makes the span of an incoming request ([`crate::telemetry::semconv::rpc_server`]) a child of
/// the caller's trace.
pub fn span_for_request<B>(request: &http::Request<B>) -> tracing::Span {
    let span = crate::telemetry::semconv::rpc_server(request.uri().path());
    if crate::telemetry::exporting() {
        crate::telemetry::continue_from_headers(&span, request.headers());
    }
    span
}

/// While spans are not exported, runs each call passing on the `traceparent`/`tracestate` it
/// arrived with (`telemetry::passed_on`), so that the calls, events and webhooks it causes carry
/// them; while they are, the call's span ([`span_for_request`]) continues the caller's trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassTraceContextLayer;

impl<S> tower::Layer<S> for PassTraceContextLayer {
    type Service = PassTraceContext<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PassTraceContext { inner }
    }
}

/// The service of [`PassTraceContextLayer`].
#[derive(Clone, Debug)]
pub struct PassTraceContext<S> {
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for PassTraceContext<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::Either<
        S::Future,
        tokio::task::futures::TaskLocalFuture<crate::telemetry::PassedContext, S::Future>,
    >;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if !crate::telemetry::passes_context() {
            return futures::future::Either::Left(self.inner.call(request));
        }
        // A call that brings no valid context starts a trace of its own (a root), as a span
        // would while exporting.
        let (traceparent, tracestate) = crate::telemetry::incoming_context(request.headers());
        futures::future::Either::Right(crate::telemetry::passed_on(
            traceparent,
            tracestate,
            self.inner.call(request),
        ))
    }
}

/// How long a served call may take before it answers `DEADLINE_EXCEEDED` (over TCP and in
/// memory alike).
pub const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The services one server offers, collected by [`server_builder`] and served by [`serve`]
/// over TCP and, for peers of the same process, in memory ([`in_process`]). Every call,
/// however it arrives, is counted in `platform::metrics`, passes the input rules of
/// `platform::input`, runs in a trace span continuing the caller's and has [`CALL_TIMEOUT`].
#[derive(Default)]
pub struct MeshRouter {
    routes: tonic::service::RoutesBuilder,
    tls: Option<tls::MeshTls>,
    /// The full names of the services added, which reflection advertises.
    services: Vec<&'static str>,
    /// Whether [`serve`] adds gRPC server reflection ([`MeshRouter::reflection`]).
    reflection: bool,
}

impl MeshRouter {
    /// Serves over mutual TLS with `tls` (the process's [`tls::MeshTls`]), or plaintext for
    /// `None` (development).
    pub fn tls(mut self, tls: Option<tls::MeshTls>) -> Self {
        self.tls = tls;
        self
    }

    /// Serves gRPC server reflection (`grpc.reflection.v1` and `v1alpha`) beside the services
    /// when `enabled` (`CommonSettings::grpc_reflection`): reflection answers the descriptors
    /// of the services added here (with their proto comments), so that `grpcurl`, Postman or a
    /// reflection client can list and call them. It reveals the schema, never data: every call
    /// of a service still needs its token and role.
    pub fn reflection(mut self, enabled: bool) -> Self {
        self.reflection = enabled;
        self
    }

    /// Adds a service (a generated server, possibly wrapped by `crate::access::guarded`).
    pub fn add_service<S>(mut self, service: S) -> Self
    where
        S: tower::Service<
                http::Request<tonic::body::Body>,
                Response = http::Response<tonic::body::Body>,
                Error = Infallible,
            > + tonic::server::NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.services.push(S::NAME);
        self.routes.add_service(service);
        self
    }

    /// Adds the reflection services when reflection is on, advertising the services added so
    /// far and reflection itself.
    fn with_reflection(mut self) -> anyhow::Result<Self> {
        if !self.reflection {
            return Ok(self);
        }
        let builder = || {
            let mut builder = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
            for name in self.services.iter().copied().chain(REFLECTION_SERVICES) {
                builder = builder.with_service_name(name);
            }
            builder
        };
        let (v1, v1alpha) = (builder().build_v1()?, builder().build_v1alpha()?);
        self.routes.add_service(v1);
        self.routes.add_service(v1alpha);
        Ok(self)
    }
}

/// The full names of the reflection services, as reflection lists them.
pub const REFLECTION_SERVICES: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Returns an empty [`MeshRouter`]: add the services, then [`serve`] it.
pub fn server_builder() -> MeshRouter {
    MeshRouter::default()
}

/// Serves a router's services on `listener` until `shutdown` fires, then drains in-flight
/// calls; over mutual TLS when the router has TLS ([`MeshRouter::tls`]): a connection that does
/// not complete the handshake with a client certificate of the mesh's CA bundle is dropped
/// before any call. A loopback listener also takes the in-memory calls of channels of this
/// process that target its address ([`in_process`]).
pub async fn serve(
    router: MeshRouter,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let router = router.with_reflection()?;
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = &router.tls {
        server = server.tls_config(tls.server_config())?;
    }
    let routes = router.routes.routes().prepare();
    let local = LocalDispatch {
        inner: tower::ServiceBuilder::new()
            .layer(PassTraceContextLayer)
            .layer(crate::metrics::layer::RpcMetricsLayer)
            .layer(crate::input::layer::InputLayer)
            .service(routes.clone()),
    };
    let registration = in_process::register(listener.local_addr()?, BoxCloneSyncService::new(local));
    server
        .timeout(CALL_TIMEOUT)
        .trace_fn(span_for_request)
        .layer(PassTraceContextLayer)
        .layer(crate::metrics::layer::RpcMetricsLayer)
        .layer(crate::input::layer::InputLayer)
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming(listener), shutdown.cancelled_owned())
        .await?;
    drop(registration);
    Ok(())
}

/// Serves `health` (the process's `grpc.health.v1` service, sharing its reporter with the one
/// [`serve`] serves) alone, in plaintext, on `listener` until `shutdown` fires.
///
/// Why: Kubernetes' `grpc` readiness probes cannot present a client certificate (nor speak
/// TLS), so a service whose gRPC port requires one is probed here instead (`GRPC_HEALTH_ADDR`,
/// docs/operations.md, "Probes and shutdown"). The port answers nothing but the health of the
/// process, and the network policies admit no pod to it (kubelet's probes come from the node).
pub async fn serve_health<S>(
    health: S,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + tonic::server::NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    tonic::transport::Server::builder()
        .timeout(std::time::Duration::from_secs(5))
        .add_service(health)
        .serve_with_incoming_shutdown(incoming(listener), shutdown.cancelled_owned())
        .await?;
    Ok(())
}

/// A server's service stack as called in memory: what tonic's server adds around it for a TCP
/// connection (the trace span of [`span_for_request`] and the call timeout), without the
/// connection.
#[derive(Clone)]
struct LocalDispatch<S> {
    inner: S,
}

impl<S> tower::Service<http::Request<tonic::body::Body>> for LocalDispatch<S>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let span = span_for_request(&request);
        let answer = self.inner.call(request);
        Box::pin(
            async move {
                match tokio::time::timeout(CALL_TIMEOUT, answer).await {
                    Ok(answer) => answer,
                    Err(_) => Ok(Status::deadline_exceeded("the call timed out").into_http()),
                }
            }
            .instrument(span),
        )
    }
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

/// A channel to a peer service: over TCP (a lazy tonic channel), or, when the peer is a server
/// of this process at a loopback address, straight into its service stack ([`in_process`]).
/// Generated clients take it like a tonic `Channel`; cloning it is one reference count (the
/// tonic channel is cloned only when a call goes over the network).
#[derive(Clone)]
pub struct MeshChannel {
    shared: std::sync::Arc<PeerTarget>,
    /// This handle's clone of the network channel, made when a call first goes over TCP.
    network: Option<tonic::transport::Channel>,
    /// The in-memory service found by `poll_ready`, used by the next `call`.
    ready_local: Option<in_process::LocalService>,
}

/// Where a [`MeshChannel`] goes.
struct PeerTarget {
    network: tonic::transport::Channel,
    /// `host:port` of the peer, the `server.address` of client spans.
    authority: String,
    /// The loopback address to look up among this process's servers, when in-memory calls are
    /// allowed for this channel.
    local: Option<std::net::SocketAddr>,
}

impl MeshChannel {
    fn new(
        network: tonic::transport::Channel,
        authority: String,
        local: Option<std::net::SocketAddr>,
    ) -> Self {
        Self {
            shared: std::sync::Arc::new(PeerTarget {
                network,
                authority,
                local,
            }),
            network: None,
            ready_local: None,
        }
    }
}

impl std::fmt::Debug for MeshChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshChannel")
            .field("in_process_target", &self.shared.local)
            .finish_non_exhaustive()
    }
}

impl From<tonic::transport::Channel> for MeshChannel {
    /// A channel that always goes over the network.
    fn from(network: tonic::transport::Channel) -> Self {
        Self::new(network, String::new(), None)
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for MeshChannel {
    type Response = http::Response<tonic::body::Body>;
    type Error = tonic::codegen::StdError;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        if self.ready_local.is_some() {
            return std::task::Poll::Ready(Ok(()));
        }
        // Looked up on every call: a server that stopped is no longer called in memory.
        if let Some(service) = self.shared.local.and_then(in_process::local_service) {
            self.ready_local = Some(service);
            return std::task::Poll::Ready(Ok(()));
        }
        let shared = &self.shared;
        self.network
            .get_or_insert_with(|| shared.network.clone())
            .poll_ready(cx)
            .map_err(Into::into)
    }

    /// Every call runs in an RPC client span ([`crate::telemetry::semconv::rpc_client`]) whose
    /// context replaces the caller's in the request's `traceparent`, so the server's span is
    /// its child.
    fn call(&mut self, mut request: http::Request<tonic::body::Body>) -> Self::Future {
        // Without an exporter there is no span to make: the request already carries the context
        // passed on (`outgoing`).
        let span = if crate::telemetry::exporting() {
            let span = crate::telemetry::semconv::rpc_client(request.uri().path(), &self.shared.authority);
            if let Some((traceparent, tracestate)) = crate::telemetry::trace_context_of(&span) {
                set_trace_headers(request.headers_mut(), traceparent, tracestate);
            }
            span
        } else {
            tracing::Span::none()
        };
        let answer: BoxFuture<'static, Result<Self::Response, Self::Error>> =
            if let Some(service) = self.ready_local.take() {
                Box::pin(async move {
                    match service.oneshot(request).await {
                        Ok(answer) => Ok(answer),
                        Err(never) => match never {},
                    }
                })
            } else if let Some(network) = self.network.as_mut() {
                let answer = network.call(request);
                Box::pin(async move { answer.await.map_err(Into::into) })
            } else {
                Box::pin(std::future::ready(Err(
                    "MeshChannel called before it was ready".into()
                )))
            };
        Box::pin(
            async move {
                // A peer that cannot be reached (refused, reset, a replica killed mid-call) is
                // answered as `UNAVAILABLE`, which callers retry, rather than the `UNKNOWN` a
                // balanced channel's transport error would become.
                let response = match answer.await {
                    Ok(response) => response,
                    Err(error) => {
                        tracing::warn!(%error, "peer unreachable");
                        Status::unavailable(format!("peer unreachable: {error}")).into_http()
                    }
                };
                let code = crate::telemetry::semconv::grpc_status_of(&response);
                crate::telemetry::semconv::record_grpc_status(&tracing::Span::current(), code, false);
                Ok(response)
            }
            .instrument(span),
        )
    }
}

/// Connects lazily to a peer service; the first call establishes the connection. A peer at a
/// loopback address is called in memory when this process serves it ([`in_process`]).
///
/// `address` may list several replicas separated by commas (`http://a:50052,http://b:50052`):
/// calls are then balanced over them (tonic's power-of-two-choices balancer, each replica
/// reconnected on its own after it fails), always over TCP. A gRPC `dns:` target
/// (`dns:///orders-svc-peers:50052`) is balanced over every address its name resolves to,
/// resolved again every few seconds ([`dns`]): a Kubernetes headless Service's ready pods.
///
/// With `tls` (the process's [`tls::MeshTls`]) every connection is mutual TLS, whatever the
/// address's scheme (`https://` says so; an `https://` address without `tls` is refused), and
/// a `dns:` target's connections to the addresses its name resolves to verify the peer's
/// certificate against that name (`orders-svc-peers`), never the address.
pub fn lazy_channel(address: &str, tls: Option<&tls::MeshTls>) -> anyhow::Result<MeshChannel> {
    if let Some((host, port)) = dns::target(address) {
        let authority = format!("{host}:{port}");
        let tls = tls.cloned();
        let server_name = host.clone();
        let channel = dns::balanced(
            host,
            port,
            dns::REFRESH,
            move |replica| replica_endpoint(replica, &server_name, tls.as_ref()),
            dns::system_resolve,
        );
        return Ok(MeshChannel::new(channel, authority, None));
    }
    if address.contains(',') {
        let endpoints = address
            .split(',')
            .map(str::trim)
            .filter(|replica| !replica.is_empty())
            .map(|replica| mesh_endpoint(replica, tls))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let authorities: Vec<String> = endpoints
            .iter()
            .filter_map(|endpoint| endpoint.uri().authority().map(ToString::to_string))
            .collect();
        let channel = tonic::transport::Channel::balance_list(endpoints.into_iter());
        return Ok(MeshChannel::new(channel, authorities.join(","), None));
    }
    let endpoint = mesh_endpoint(address, tls)?;
    let local = in_process::loopback_target(endpoint.uri()).filter(|_| in_process::enabled());
    let authority = endpoint
        .uri()
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    Ok(MeshChannel::new(endpoint.connect_lazy(), authority, local))
}

/// The endpoint of a peer at `address` (`http://host:port` or `https://host:port`):
/// [`peer_endpoint`]'s settings, and with `tls` mutual TLS whatever the scheme (the process's
/// TLS settings decide, so that no call of a process that has them goes out in plaintext),
/// verifying the peer's certificate against `host`. An `https://` address without `tls` is an
/// error naming the settings.
pub fn mesh_endpoint(
    address: &str,
    tls: Option<&tls::MeshTls>,
) -> anyhow::Result<tonic::transport::Endpoint> {
    let Some(tls) = tls else {
        let endpoint = peer_endpoint(address)?;
        return match endpoint.uri().scheme_str() {
            Some("http") => Ok(endpoint),
            Some("https") => anyhow::bail!(
                "peer address {address} is https://, but this process has no TLS settings ({}, {}, {})",
                tls::CERT_FILE_VAR,
                tls::KEY_FILE_VAR,
                tls::CA_FILE_VAR
            ),
            _ => anyhow::bail!(
                "peer address {address}: expected http://host:port, https://host:port or dns:///host:port"
            ),
        };
    };
    let secure = match address.strip_prefix("http://") {
        Some(rest) => format!("https://{rest}"),
        None => address.to_owned(),
    };
    let endpoint = peer_endpoint(&secure)?;
    if endpoint.uri().scheme_str() != Some("https") {
        anyhow::bail!("peer address {address}: expected https://host:port or dns:///host:port");
    }
    let host = endpoint
        .uri()
        .host()
        .map(|host| host.trim_start_matches('[').trim_end_matches(']').to_owned())
        .ok_or_else(|| anyhow::anyhow!("peer address {address} names no host"))?;
    Ok(endpoint.tls_config(tls.client_config(&host))?)
}

/// The endpoint of one address a `dns:` target resolved to: `http://<address>`, or with `tls`
/// `https://<address>` verifying the peer's certificate against `server_name`, the target's
/// host name (pods' addresses change; the name their certificates carry does not).
pub fn replica_endpoint(
    replica: std::net::SocketAddr,
    server_name: &str,
    tls: Option<&tls::MeshTls>,
) -> anyhow::Result<tonic::transport::Endpoint> {
    match tls {
        None => peer_endpoint(&format!("http://{replica}")),
        Some(tls) => {
            Ok(peer_endpoint(&format!("https://{replica}"))?.tls_config(tls.client_config(server_name))?)
        }
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
            let before = in_process::local_calls();
            let channel = lazy_channel(&format!("http://{address}"), None).unwrap();
            assert!(check(channel).await.is_ok());
            if in_process::local_calls() > before {
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
        let before = in_process::local_calls();
        let channel = lazy_channel(&format!("http://localhost:{}", address.port()), None).unwrap();
        assert!(check(channel).await.is_ok());
        assert_eq!(in_process::local_calls(), before, "no in-memory call for a name");
        // A stopped server is no longer called in memory, even through a channel that called it
        // so before: its callers fail as against a stopped pod.
        let channel = lazy_channel(&format!("http://{address}"), None).unwrap();
        assert!(check(channel.clone()).await.is_ok());
        shutdown.cancel();
        server.await.unwrap().unwrap();
        let before = in_process::local_calls();
        assert!(check(channel).await.is_err(), "a stopped server does not answer");
        assert_eq!(in_process::local_calls(), before);
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

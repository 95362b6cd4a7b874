//! The metrics endpoint: `GET /metrics` on the process's internal metrics port answers the
//! OpenMetrics text exposition of [`super::metrics`] after running the refreshers. Everything
//! else on that port is 404 (405 for other methods on `/metrics`).
//!
//! The address is `<PREFIX>_METRICS_ADDR` or `METRICS_ADDR` (`off` disables the endpoint); each
//! binary passes its own default (its gRPC port plus 1000 on loopback, so that the processes of
//! one host never collide; the manifests set `0.0.0.0:9464` in every pod).

use crate::config::{prefixed_or_common, socket_addr};
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The content type of the OpenMetrics text format (Prometheus asks for it and parses it).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The OpenMetrics text of every family of this process, as last recorded.
pub fn encode() -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, super::metrics().registry())
        .expect("writing to a String cannot fail");
    text
}

/// A bound metrics endpoint.
pub struct MetricsEndpoint {
    listener: TcpListener,
}

impl MetricsEndpoint {
    /// Binds `<PREFIX>_METRICS_ADDR` / `METRICS_ADDR` (default `default`); `None` when the
    /// setting is `off`.
    pub async fn bind_from_env(prefix: &str, default: &str) -> anyhow::Result<Option<Self>> {
        let value = prefixed_or_common(prefix, "METRICS_ADDR", default);
        if value.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let addr = socket_addr(&format!("{prefix}_METRICS_ADDR"), &value)?;
        Ok(Some(Self::bind(addr).await?))
    }

    /// Binds `<PREFIX>_METRICS_ADDR` / `METRICS_ADDR` (default `default`) and serves until
    /// `shutdown` fires; nothing when the setting is `off`. The address serving, if any.
    pub async fn start_from_env(
        prefix: &str,
        default: &str,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<Option<SocketAddr>> {
        let Some(endpoint) = Self::bind_from_env(prefix, default).await? else {
            return Ok(None);
        };
        let addr = endpoint.local_addr();
        endpoint.spawn(shutdown.clone());
        Ok(Some(addr))
    }

    /// Binds `addr` (port 0 picks a free port).
    pub async fn bind(addr: SocketAddr) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|error| anyhow::anyhow!("cannot bind the metrics endpoint {addr}: {error}"))?;
        Ok(Self { listener })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until `shutdown` fires.
    pub fn spawn(self, shutdown: CancellationToken) -> JoinHandle<()> {
        tracing::info!(addr = %self.local_addr(), "metrics endpoint serving /metrics");
        tokio::spawn(serve(self.listener, shutdown))
    }
}

async fn serve(listener: TcpListener, shutdown: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors or a reset before accept: try again shortly.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(answer));
            tokio::select! {
                () = shutdown.cancelled() => {}
                _ = connection => {}
            }
        });
    }
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.uri().path() != "/metrics" {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            "not found; metrics are at /metrics\n",
        ));
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return Ok(response);
    }
    super::refresh().await;
    let mut response = Response::new(Full::new(Bytes::from(encode())));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(CONTENT_TYPE),
    );
    Ok(response)
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

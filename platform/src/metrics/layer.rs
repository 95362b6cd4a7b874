//! The tower layer that records every gRPC call a server of this process answers:
//! `rpc_server_requests_total` by method and status code and `rpc_server_duration_seconds` by
//! method. A path that is not a method of the mesh (a probe, a typo, a scanner) is recorded as
//! `_OTHER`, as the OpenTelemetry conventions name it, so that callers cannot grow the label set.
//! It also records the status code on the call's trace span.

use super::{RpcLabels, RpcMethodLabels, metrics};
use futures::future::BoxFuture;
use std::task::{Context, Poll};
use std::time::Instant;
use tonic::body::Body;
use tower::{Layer, Service};

/// The label value of a path outside the mesh's methods.
const OTHER: &str = "_OTHER";

/// Records each call's outcome and duration (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct RpcMetricsLayer;

impl<S> Layer<S> for RpcMetricsLayer {
    type Service = RecordRpc<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RecordRpc { inner }
    }
}

/// The service of [`RpcMetricsLayer`].
#[derive(Clone, Debug)]
pub struct RecordRpc<S> {
    inner: S,
}

impl<S> Service<http::Request<Body>> for RecordRpc<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Send,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let started = Instant::now();
        let operation = operation(request.uri().path());
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            let code = status_code(&response);
            // The call's span (`platform::grpc::span_for_request`) is the current one here.
            crate::telemetry::semconv::record_grpc_status(&tracing::Span::current(), i32::from(code), true);
            record(operation, code, started.elapsed().as_secs_f64());
            Ok(response)
        })
    }
}

/// The service and method labels of a request path.
fn operation(path: &str) -> RpcMethodLabels {
    let known = crate::input::layer::is_mesh_rpc(path) || path.starts_with("/grpc.health.v1.Health/");
    match path.trim_start_matches('/').split_once('/') {
        Some((service, method)) if known => RpcMethodLabels {
            rpc_service: service.to_owned(),
            rpc_method: method.to_owned(),
        },
        _ => RpcMethodLabels {
            rpc_service: OTHER.to_owned(),
            rpc_method: OTHER.to_owned(),
        },
    }
}

/// The gRPC status of an answer (`crate::telemetry::semconv::grpc_status_of`) as a label value.
fn status_code<B>(response: &http::Response<B>) -> u16 {
    u16::try_from(crate::telemetry::semconv::grpc_status_of(response)).unwrap_or(2)
}

fn record(operation: RpcMethodLabels, code: u16, seconds: f64) {
    let metrics = metrics();
    metrics
        .rpc_server_duration
        .get_or_create(&operation)
        .observe(seconds);
    metrics
        .rpc_server_requests
        .get_or_create(&RpcLabels {
            rpc_service: operation.rpc_service,
            rpc_method: operation.rpc_method,
            rpc_grpc_status_code: code,
        })
        .inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_outside_the_mesh_is_recorded_as_other() {
        let labels = operation("/evil.Scanner/Probe0001");
        assert_eq!(labels.rpc_service, OTHER);
        assert_eq!(labels.rpc_method, OTHER);
        let health = operation("/grpc.health.v1.Health/Check");
        assert_eq!(health.rpc_service, "grpc.health.v1.Health");
        assert_eq!(health.rpc_method, "Check");
    }

    #[test]
    fn the_status_of_a_trailers_only_answer_is_read_from_its_headers() {
        let failed = tonic::Status::not_found("no such order").into_http::<Body>();
        assert_eq!(status_code(&failed), 5);
        let ok = http::Response::new(Body::empty());
        assert_eq!(status_code(&ok), 0);
    }
}

//! The tower layer that applies the input rules to every unary call a gRPC server receives,
//! before tonic decodes the message: it buffers the request body (at most tonic's default
//! decoding limit), walks each gRPC frame with the mesh's [`Schema`] and answers
//! `InvalidArgument` (`invalid_request`, `details.field` = the camelCase field path) when a
//! string breaks the rules. Without it a NUL reached PostgreSQL (an `Internal` answer) and a
//! string that is not UTF-8 failed prost's decoding (also `Internal`).
//!
//! Paths the schema does not know (health, streaming calls) pass through untouched, as do
//! compressed or malformed frames, which tonic itself refuses.

use super::wire::{Problem, Schema};
use crate::error::{ApiError, ErrorCode};
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full, Limited};
use std::sync::LazyLock;
use std::task::{Context, Poll};
use tonic::body::Body;
use tower::{Layer, Service};

/// Largest request body buffered: tonic's default decoding limit (4 MiB) plus a frame header.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024 + 5;

/// The schema of every message of the mesh, built once from `proto::FILE_DESCRIPTOR_SET`.
static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    Schema::from_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptors compiled into the proto crate decode")
});

/// Whether `path` (`/package.Service/Method`) is a unary method of the mesh's own services.
pub fn is_mesh_rpc(path: &str) -> bool {
    SCHEMA.unary_input(path).is_some()
}

/// Applies the input rules to every incoming unary message (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct InputLayer;

impl<S> Layer<S> for InputLayer {
    type Service = CheckInput<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CheckInput { inner }
    }
}

/// The service of [`InputLayer`].
#[derive(Clone, Debug)]
pub struct CheckInput<S> {
    inner: S,
}

impl<S> Service<http::Request<Body>> for CheckInput<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // The clone that was polled ready serves this call (tower's usual swap).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let Some(input) = SCHEMA.unary_input(request.uri().path()) else {
            return Box::pin(inner.call(request));
        };
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = match Limited::new(body, MAX_BODY_BYTES).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(error) => return Ok(unreadable(error.as_ref())),
            };
            if let Err(error) = check_frames(input, &bytes) {
                tracing::debug!(rpc = parts.uri.path(), message = %error.message, "input refused");
                return Ok(tonic::Status::from(error).into_http());
            }
            inner
                .call(http::Request::from_parts(parts, Body::new(Full::new(bytes))))
                .await
        })
    }
}

/// Checks every uncompressed, complete gRPC frame of a request body against `input`.
pub fn check_frames(input: &str, body: &[u8]) -> Result<(), ApiError> {
    let mut rest = body;
    while rest.len() >= 5 {
        let compressed = rest[0] != 0;
        let length = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        rest = &rest[5..];
        if compressed || length > rest.len() {
            return Ok(());
        }
        let (message, tail) = rest.split_at(length);
        if let Err(Problem::Refused { field, flaw }) = SCHEMA.check(input, message) {
            return Err(super::refused(&field, flaw));
        }
        rest = tail;
    }
    Ok(())
}

/// The answer when the body could not be buffered: too large, or the stream failed.
fn unreadable(error: &(dyn std::error::Error + Send + Sync + 'static)) -> http::Response<Body> {
    let status = if error.is::<http_body_util::LengthLimitError>() {
        tonic::Status::from(ApiError::new(
            ErrorCode::InvalidRequest,
            "the request message is larger than 4 MiB",
        ))
    } else {
        tonic::Status::cancelled(format!("the request body could not be read: {error}"))
    };
    status.into_http()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A gRPC frame around `message`.
    fn frame(message: &[u8]) -> Vec<u8> {
        let mut framed = vec![0];
        framed.extend((message.len() as u32).to_be_bytes());
        framed.extend(message);
        framed
    }

    async fn call(path: &str, body: Vec<u8>) -> (http::Response<Body>, usize, Vec<u8>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counter, received) = (Arc::clone(&calls), Arc::clone(&seen));
        let inner = tower::service_fn(move |request: http::Request<Body>| {
            let (counter, received) = (Arc::clone(&counter), Arc::clone(&received));
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let bytes = request.into_body().collect().await.unwrap().to_bytes();
                *received.lock().unwrap() = bytes.to_vec();
                Ok::<_, std::convert::Infallible>(http::Response::new(Body::empty()))
            }
        });
        let request = http::Request::builder()
            .uri(format!("http://mesh{path}"))
            .body(Body::new(Full::new(tonic::codegen::Bytes::from(body))))
            .unwrap();
        let response = InputLayer.layer(inner).call(request).await.unwrap();
        let received = seen.lock().unwrap().clone();
        (response, calls.load(Ordering::SeqCst), received)
    }

    #[tokio::test]
    async fn a_refused_message_is_answered_invalid_argument_without_reaching_the_service() {
        // GetOrderRequest { reference: <0xff 0xfe> } and { reference: "A\0" }.
        for message in [&[0x0a, 0x02, 0xff, 0xfe][..], &[0x0a, 0x02, b'A', 0x00][..]] {
            let (response, calls, _) = call("/lab.orders.v1.OrdersService/GetOrder", frame(message)).await;
            assert_eq!(calls, 0);
            let status = tonic::Status::from_header_map(response.headers()).expect("a grpc status");
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            let error = ApiError::from_status(&status);
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            assert_eq!(error.details.unwrap()["field"], "reference");
        }
    }

    #[tokio::test]
    async fn valid_and_unknown_calls_reach_the_service_with_their_body_intact() {
        let valid = frame(&[0x0a, 0x03, b'O', b'R', b'D']);
        let (_, calls, received) = call("/lab.orders.v1.OrdersService/GetOrder", valid.clone()).await;
        assert_eq!((calls, received), (1, valid));
        let health = frame(&[0x0a, 0x01, 0x00]);
        let (_, calls, received) = call("/grpc.health.v1.Health/Check", health.clone()).await;
        assert_eq!((calls, received), (1, health));
    }
}

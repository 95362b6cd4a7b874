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

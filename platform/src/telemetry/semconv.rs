//! Spans named and attributed per the OpenTelemetry semantic conventions, one constructor per
//! kind of work, so that every service names the same work the same way:
//!
//! | work | span name | kind | attributes |
//! |---|---|---|---|
//! | an RPC answered | `{rpc.service}/{rpc.method}` | server | `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code` |
//! | an RPC made | `{rpc.service}/{rpc.method}` | client | the same, plus `server.address` |
//! | a database statement group | `{db.operation.name} {db.collection.name}` | client | `db.system.name`, `db.operation.name`, `db.collection.name` |
//! | an event written to the outbox | `create {destination}` | producer | `messaging.system`, `messaging.operation.type`, `messaging.destination.name`, `messaging.message.id` |
//! | an event put on its stream | `send {destination}` | producer | the same |
//! | an event handled by a consumer group | `process {destination}` | consumer | the same, plus `messaging.consumer.group.name` |
//!
//! A database span is made by the repository function itself, with the attribute
//! `#[tracing::instrument(name = "db", skip_all, fields(otel.name = "INSERT orders.orders",
//! otel.kind = "client", db.system.name = "postgresql", db.operation.name = "INSERT",
//! db.collection.name = "orders.orders"))]` (a function cannot make an `instrument` span).
//!
//! The HTTP server span of the gateway (`{method} {http.route}`) and the webhook attempt
//! (`POST`, an HTTP client span) are made where their attributes are known
//! (`gateway::http::layers`, `webhooks-svc`'s dispatcher). Spans record `otel.status_code =
//! error` for failures the conventions count as errors (5xx answers; the gRPC codes of
//! [`is_server_error`] on servers, any non-OK code on clients).
//!
//! Tracing spans need static names, so the conventional name goes in `otel.name`, which the
//! span layer ([`super::spans`]) uses instead.

use tracing::field::Empty;

/// `messaging.system` of the mesh's event streams.
pub const MESSAGING_SYSTEM: &str = "redis";

/// The service and method of a gRPC path `/package.Service/Method` (`_OTHER` when malformed).
pub fn rpc_parts(path: &str) -> (&str, &str) {
    path.trim_start_matches('/')
        .split_once('/')
        .filter(|(service, method)| !service.is_empty() && !method.is_empty() && !method.contains('/'))
        .unwrap_or(("_OTHER", "_OTHER"))
}

/// The span of an RPC this process answers.
pub fn rpc_server(path: &str) -> tracing::Span {
    let (service, method) = rpc_parts(path);
    tracing::info_span!(
        "rpc.server",
        otel.name = %format_args!("{service}/{method}"),
        otel.kind = "server",
        otel.status_code = Empty,
        rpc.system = "grpc",
        rpc.service = service,
        rpc.method = method,
        rpc.grpc.status_code = Empty,
    )
}

/// The span of an RPC this process makes to `authority` (`host:port`).
pub fn rpc_client(path: &str, authority: &str) -> tracing::Span {
    let (service, method) = rpc_parts(path);
    tracing::info_span!(
        "rpc.client",
        otel.name = %format_args!("{service}/{method}"),
        otel.kind = "client",
        otel.status_code = Empty,
        rpc.system = "grpc",
        rpc.service = service,
        rpc.method = method,
        rpc.grpc.status_code = Empty,
        server.address = authority,
    )
}

/// The gRPC status of an answer's headers: present on a failed unary call ("trailers-only");
/// a successful answer carries `grpc-status: 0` in its trailers, so an HTTP 200 without it
/// counts as OK (and anything else as `UNKNOWN`).
pub fn grpc_status_of<B>(response: &http::Response<B>) -> i32 {
    match response
        .headers()
        .get("grpc-status")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
    {
        Some(code) => code,
        None if response.status() == http::StatusCode::OK => 0,
        None => 2,
    }
}

/// True for the gRPC codes a server span counts as its own error (the conventions: UNKNOWN,
/// DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS); the others are the
/// caller's mistakes.
pub fn is_server_error(code: i32) -> bool {
    matches!(code, 2 | 4 | 12 | 13 | 14 | 15)
}

/// Records an RPC's gRPC status code on its span (`server` for a span of [`rpc_server`]).
pub fn record_grpc_status(span: &tracing::Span, code: i32, server: bool) {
    span.record("rpc.grpc.status_code", code);
    if (server && is_server_error(code)) || (!server && code != 0) {
        span.record("otel.status_code", "error");
    }
}

/// The span of writing event `message_id` to the outbox for `destination` (its stream's
/// domain, for example `orders`): the event's creation context, which consumers continue.
pub fn messaging_create(destination: &str, message_id: &str) -> tracing::Span {
    tracing::info_span!(
        "messaging.create",
        otel.name = %format_args!("create {destination}"),
        otel.kind = "producer",
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.type = "create",
        messaging.operation.name = "create",
        messaging.destination.name = destination,
        messaging.message.id = message_id,
    )
}

/// The span of putting event `message_id` on the stream of `destination` (the outbox relay).
pub fn messaging_send(destination: &str, message_id: &str) -> tracing::Span {
    tracing::info_span!(
        "messaging.send",
        otel.name = %format_args!("send {destination}"),
        otel.kind = "producer",
        otel.status_code = Empty,
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.type = "send",
        messaging.operation.name = "xadd",
        messaging.destination.name = destination,
        messaging.message.id = message_id,
    )
}

/// The span of consumer group `group` handling event `message_id` of `destination`.
pub fn messaging_process(
    destination: &str,
    message_id: &str,
    event_type: &str,
    group: &str,
) -> tracing::Span {
    tracing::info_span!(
        "messaging.process",
        otel.name = %format_args!("process {destination}"),
        otel.kind = "consumer",
        otel.status_code = Empty,
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.type = "process",
        messaging.operation.name = "process",
        messaging.destination.name = destination,
        messaging.consumer.group.name = group,
        messaging.message.id = message_id,
        lab.event.type = event_type,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_path_splits_into_service_and_method_and_anything_else_is_other() {
        assert_eq!(
            rpc_parts("/lab.orders.v1.OrdersService/CreateOrder"),
            ("lab.orders.v1.OrdersService", "CreateOrder")
        );
        assert_eq!(rpc_parts("/nonsense"), ("_OTHER", "_OTHER"));
        assert_eq!(rpc_parts("/a/b/c"), ("_OTHER", "_OTHER"));
        assert_eq!(rpc_parts("//Method"), ("_OTHER", "_OTHER"));
    }

    #[test]
    fn only_server_side_failures_mark_a_server_span_as_an_error() {
        assert!(is_server_error(13), "INTERNAL");
        assert!(is_server_error(14), "UNAVAILABLE");
        assert!(!is_server_error(5), "NOT_FOUND is the caller's");
        assert!(!is_server_error(3), "INVALID_ARGUMENT is the caller's");
        assert!(!is_server_error(0));
    }
}

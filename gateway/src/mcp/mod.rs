//! The MCP endpoint `POST /api/mcp` (protocol 2025-11-25, Streamable HTTP, stateless, JSON answers
//! only, no server-sent events, no session id): the second front end of the same use cases as
//! REST. Every tool is a REST operation's twin and calls the same function of
//! `crate::operations`; keys, scopes and limits are the REST front door's.
//!
//! One POST carries one JSON-RPC message:
//! - the transport checks first ([`transport`]: Origin and Host 403, Content-Type 415, Accept
//!   406), then the message ([`jsonrpc`]: -32700 for bad JSON, -32600 for a batch or a message
//!   missing `jsonrpc`, `method` or `id`, all with HTTP 400);
//! - a notification (or a client's response) is accepted with 202 and no body;
//! - `initialize`, `ping`, `tools/list` and `tools/call` are served (the three last check
//!   `MCP-Protocol-Version`: 400 when unsupported); any other method, `server/discover`
//!   included, is the JSON-RPC error -32601;
//! - `tools/list` shows only the tools the key's scopes allow, and calling any other tool is
//!   -32602 `unknown tool: <name>`, the same whether the tool is missing or out of scope;
//! - a business error is a tool result with `isError: true` whose `structuredContent` is the
//!   REST error envelope (same code and message).
//!
//! `GET` and `DELETE` are 405 (the router's method fallback), with or without a key.

pub mod call;
pub mod jsonrpc;
pub mod schema;
pub mod tools;
pub mod transport;

pub use transport::{McpSettings, PROTOCOL_VERSION};

use crate::caller::Caller;
use crate::dto::common::ErrorEnvelope;
use crate::http::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use jsonrpc::{INVALID_PARAMS, METHOD_NOT_FOUND, Message, Refusal};
use platform::error::ApiError;
use serde_json::{Map, Value, json};

/// Path of the endpoint (`{site_url}/api/mcp`).
pub const PATH: &str = "/api/mcp";
/// Server name in `initialize`.
pub const SERVER_NAME: &str = "lab-agent-api";

/// What `initialize` tells an agent about using the tools.
pub const INSTRUCTIONS: &str = "Laboratory Testing Agent API: order laboratory tests of research compounds, \
supplements and botanicals for the customer that owns this API key. All money is integer USD cents; prices \
come from the server only. Canonical flow: (1) svc.catalog.search with include \"all\" to learn tests, \
bundles, category ids and turnarounds; keep catalogRevision. (2) svc.quote.create with categoryId, \
compoundNames (one sample line each) and testIds: an immutable quote that expires after about 15 minutes. \
(3) Only after the user approves the quoted totalCents: svc.order.create with quoteId, paymentMethod \
\"bank_invoice\", confirm true and a fresh idempotencyKey; if the call fails or times out, retry with the \
SAME idempotencyKey so the order is placed once. (4) Pay: the order's payment block carries the invoice \
number and bank transfer instructions (svc.invoice.get re-reads them). (5) Poll svc.order.get for status \
and statusHistory (or register a webhook with svc.webhook.create). A failed call returns isError true with \
structuredContent {error: {code, message, details}}, the same codes as the REST API; fix the arguments \
named in details.field or details.path and retry.";

/// The handler of `POST /api/mcp`.
pub async fn endpoint(
    State(state): State<AppState>,
    caller: Caller,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authority = uri.authority().map(|authority| authority.as_str());
    if let Err(refusal) = transport::check_headers(&state.mcp, &headers, authority) {
        return refused(&refusal);
    }
    let (id, method, params) = match jsonrpc::parse(&body) {
        Err(refusal) => return refused(&refusal),
        Ok(Message::Notification { .. } | Message::Response) => {
            if let Err(refusal) = transport::check_protocol_version(&headers) {
                return refused(&refusal);
            }
            return StatusCode::ACCEPTED.into_response();
        }
        Ok(Message::Request { id, method, params }) => (id, method, params),
    };
    let served = matches!(
        method.as_str(),
        "initialize" | "ping" | "tools/list" | "tools/call"
    );
    if !served {
        let message = format!("method not found: {method}");
        return answer(jsonrpc::error(&id, METHOD_NOT_FOUND, &message));
    }
    if method != "initialize"
        && let Err(refusal) = transport::check_protocol_version(&headers)
    {
        return refused(&Refusal { id, ..refusal });
    }
    let body = match method.as_str() {
        "initialize" => initialize(&id, params),
        "ping" => jsonrpc::result(&id, &json!({})),
        "tools/list" => list_tools(&id, &caller, params),
        _ => call_tool(&state, &caller, &id, params).await,
    };
    answer(body)
}

/// `initialize`: the negotiated version, the `tools` capability, who we are and how to use us.
fn initialize(id: &Value, params: Option<Value>) -> Vec<u8> {
    let requested = params
        .as_ref()
        .and_then(|params| params.get("protocolVersion"))
        .and_then(Value::as_str);
    let Some(requested) = requested else {
        return jsonrpc::error(
            id,
            INVALID_PARAMS,
            "invalid params: initialize needs params.protocolVersion",
        );
    };
    jsonrpc::result(
        id,
        &json!({
            "protocolVersion": transport::negotiate(requested),
            "capabilities": { "tools": { "listChanged": false } },
            "serverInfo": {
                "name": SERVER_NAME,
                "title": "Laboratory Testing Agent API",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "instructions": INSTRUCTIONS,
        }),
    )
}

/// `tools/list`: one page with every tool the key may call.
fn list_tools(id: &Value, caller: &Caller, params: Option<Value>) -> Vec<u8> {
    let cursor = match &params {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => params.get("cursor").filter(|cursor| !cursor.is_null()),
        Some(_) => {
            return jsonrpc::error(id, INVALID_PARAMS, "invalid params: params must be an object");
        }
    };
    if cursor.is_some() {
        return jsonrpc::error(
            id,
            INVALID_PARAMS,
            "invalid params: unknown cursor (tools/list answers in one page)",
        );
    }
    let result = schema::catalog().list_result(&caller.principal.scopes);
    let mut body = Vec::with_capacity(result.len() + 64);
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    let _ = serde_json::to_writer(&mut body, id);
    body.extend_from_slice(b",\"result\":");
    body.extend_from_slice(result.as_bytes());
    body.push(b'}');
    body
}

/// `tools/call`: an unknown tool and a tool outside the key's scopes are the same -32602; input
/// rules and business errors are tool results with `isError: true`.
async fn call_tool(state: &AppState, caller: &Caller, id: &Value, params: Option<Value>) -> Vec<u8> {
    let Some(Value::Object(mut params)) = params else {
        return jsonrpc::error(id, INVALID_PARAMS, "invalid params: tools/call needs params.name");
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return jsonrpc::error(id, INVALID_PARAMS, "invalid params: tools/call needs params.name");
    };
    let tool = tools::find(&name).filter(|tool| tool.allowed(&caller.principal.scopes));
    let Some(tool) = tool else {
        return jsonrpc::error(id, INVALID_PARAMS, &format!("unknown tool: {name}"));
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments,
        Some(_) => {
            return jsonrpc::error(
                id,
                INVALID_PARAMS,
                "invalid params: params.arguments must be an object",
            );
        }
    };
    let arguments = Value::Object(arguments);
    if let Err(error) = platform::input::check_json("arguments", &arguments) {
        return tool_error(id, &error);
    }
    let Value::Object(arguments) = arguments else {
        return jsonrpc::error(id, jsonrpc::INTERNAL_ERROR, "internal error");
    };
    match call::call(
        tool,
        &state.peers,
        &state.front_door.verify_lookups,
        caller,
        arguments,
    )
    .await
    {
        Ok(output) => {
            let replayed = json!({ "lab/idempotentReplayed": true });
            let meta = output.replayed.then_some(&replayed);
            jsonrpc::tool_result(id, &output.json, false, meta)
        }
        Err(error) => tool_error(id, &error),
    }
}

/// A business error as a tool result: the REST error envelope, as text and structured content.
fn tool_error(id: &Value, error: &ApiError) -> Vec<u8> {
    let envelope = serde_json::to_string(&ErrorEnvelope::from(error)).unwrap_or_default();
    jsonrpc::tool_result(id, &envelope, true, None)
}

/// A JSON-RPC answer with 200.
fn answer(body: Vec<u8>) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A refused message: its HTTP status and JSON-RPC error body.
fn refused(refusal: &Refusal) -> Response {
    let mut response = answer(refusal.body());
    *response.status_mut() = refusal.status;
    response
}

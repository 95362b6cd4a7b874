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
use axum::extract::{FromRequest, Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use jsonrpc::{INVALID_PARAMS, METHOD_NOT_FOUND, Message, Refusal};
use platform::error::ApiError;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// Path of the endpoint (`{site_url}/api/mcp`).
pub const PATH: &str = crate::http::MCP_PATH;
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

/// The handler of `POST /api/mcp`. It takes the request whole (no copy of its headers) and
/// reads the body once the transport checks passed.
pub async fn endpoint(State(state): State<AppState>, caller: Caller, request: Request) -> Response {
    let client = request
        .extensions()
        .get::<crate::client_addr::ClientAddr>()
        .map_or(std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), |client| {
            client.0
        });
    let authority = request.uri().authority().map(|authority| authority.as_str());
    if let Err(refusal) = transport::check_headers(&state.mcp, request.headers(), authority) {
        return refused(&refusal);
    }
    // The one header read after the body (a cheap, shared copy of its bytes).
    let protocol_version = request.headers().get(transport::PROTOCOL_VERSION_HEADER).cloned();
    let body = match Bytes::from_request(request, &state).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    match read_message(&body, protocol_version.as_ref(), &caller) {
        // One await of the tool: the handler's future (which axum moves into a box on every
        // request) holds one tool call.
        Read::Call { id, name, arguments } => {
            answer(run_tool(&state, &caller, client, &id, &name, arguments).await)
        }
        Read::Answered(response) => response,
    }
}

/// A message read: a tool to call, or the finished answer of anything else.
enum Read {
    Call {
        id: Value,
        name: String,
        arguments: Map<String, Value>,
    },
    Answered(Response),
}

/// Reads the message of `body` with the one JSON-RPC reader ([`jsonrpc::parse`], then
/// [`call_params`] for `tools/call`) and answers it, unless it is a `tools/call` whose tool is
/// yet to run.
fn read_message(body: &[u8], protocol_version: Option<&HeaderValue>, caller: &Caller) -> Read {
    let (id, method, params) = match jsonrpc::parse(body) {
        Err(refusal) => return Read::Answered(refused(&refusal)),
        Ok(Message::Notification { .. } | Message::Response) => {
            if let Err(refusal) = transport::check_protocol_version(protocol_version) {
                return Read::Answered(refused(&refusal));
            }
            return Read::Answered(StatusCode::ACCEPTED.into_response());
        }
        Ok(Message::Request { id, method, params }) => (id, method, params),
    };
    let served = matches!(&*method, "initialize" | "ping" | "tools/list" | "tools/call");
    if !served {
        let message = format!("method not found: {method}");
        return Read::Answered(answer(jsonrpc::error(&id, METHOD_NOT_FOUND, &message)));
    }
    if method != "initialize"
        && let Err(refusal) = transport::check_protocol_version(protocol_version)
    {
        return Read::Answered(refused(&Refusal { id, ..refusal }));
    }
    let body = match &*method {
        "initialize" => initialize(&id, params.as_deref()),
        "ping" => jsonrpc::result(&id, &json!({})),
        "tools/list" => list_tools(&id, caller, params.as_deref()),
        _ => match call_params(params.as_deref()) {
            Ok((name, arguments)) => {
                return Read::Call {
                    id,
                    name: name.into_owned(),
                    arguments,
                };
            }
            Err(message) => jsonrpc::error(&id, INVALID_PARAMS, message),
        },
    };
    Read::Answered(answer(body))
}

/// `params` parsed into a JSON tree (the rarely called methods; `tools/call` reads its own
/// borrowed).
fn tree(params: Option<&RawValue>) -> Option<Value> {
    params.map(|params| serde_json::from_str(params.get()).unwrap_or(Value::Null))
}

/// `initialize`: the negotiated version, the `tools` capability, who we are and how to use us.
fn initialize(id: &Value, params: Option<&RawValue>) -> Vec<u8> {
    let params = tree(params);
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
fn list_tools(id: &Value, caller: &Caller, params: Option<&RawValue>) -> Vec<u8> {
    let params = tree(params);
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
    let result = schema::catalog().list_result(&caller.principal.scopes, caller.principal.sandbox);
    let mut body = Vec::with_capacity(result.len() + 64);
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    let _ = serde_json::to_writer(&mut body, id);
    body.extend_from_slice(b",\"result\":");
    body.extend_from_slice(result.as_bytes());
    body.push(b'}');
    body
}

/// The members of `tools/call` params, borrowed.
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// The tool's name and arguments of `tools/call` params; the error message of -32602 otherwise.
fn call_params(params: Option<&RawValue>) -> Result<(Cow<'_, str>, Map<String, Value>), &'static str> {
    const NO_NAME: &str = "invalid params: tools/call needs params.name";
    const NOT_AN_OBJECT: &str = "invalid params: params.arguments must be an object";
    let params = params.ok_or(NO_NAME)?;
    if !params.get().starts_with('{') {
        return Err(NO_NAME);
    }
    let Ok(members) = serde_json::from_str::<CallParams<'_>>(params.get()) else {
        // Not readable borrowed (a duplicate member, say): the tree's rules, last member wins.
        let Ok(Value::Object(mut params)) = serde_json::from_str::<Value>(params.get()) else {
            return Err(NO_NAME);
        };
        let Some(Value::String(name)) = params.remove("name") else {
            return Err(NO_NAME);
        };
        return match params.remove("arguments") {
            None | Some(Value::Null) => Ok((Cow::Owned(name), Map::new())),
            Some(Value::Object(arguments)) => Ok((Cow::Owned(name), arguments)),
            Some(_) => Err(NOT_AN_OBJECT),
        };
    };
    let name = members.name.and_then(jsonrpc::string).ok_or(NO_NAME)?;
    let arguments = match members.arguments {
        None => Map::new(),
        Some(raw) if raw.get() == "null" => Map::new(),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|_| NOT_AN_OBJECT)?,
    };
    Ok((name, arguments))
}

/// `tools/call` once its params are read: runs the tool `name` with `arguments` for `caller`.
/// An unknown tool and a tool outside the key's scopes are the same -32602; input rules and
/// business errors are tool results with `isError: true`.
async fn run_tool(
    state: &AppState,
    caller: &Caller,
    client: std::net::IpAddr,
    id: &Value,
    name: &str,
    arguments: Map<String, Value>,
) -> Vec<u8> {
    let tool = tools::find(name).filter(|tool| tool.visible_to(&caller.principal));
    let Some(tool) = tool else {
        return jsonrpc::error(id, INVALID_PARAMS, &format!("unknown tool: {name}"));
    };
    let arguments = Value::Object(arguments);
    if let Err(error) = platform::input::check_json("arguments", &arguments) {
        return tool_error(id, &error);
    }
    let Value::Object(arguments) = arguments else {
        return jsonrpc::error(id, jsonrpc::INTERNAL_ERROR, "internal error");
    };
    let call = call::call(
        tool,
        &state.peers,
        &state.front_door.verify_lookups,
        client,
        &state.site_url,
        caller,
        arguments,
    );
    // A tool that changes something acts for the customer through a delegation the services it
    // calls pass on (`platform::delegation`); reads need none.
    let delegation = match tool.annotations.read_only_hint {
        true => None,
        false => caller.delegation(),
    };
    let outcome = match delegation {
        Some(delegation) => platform::delegation::acting_for(delegation, call).await,
        None => call.await,
    };
    match outcome {
        Ok(output) => jsonrpc::tool_result(id, output.json.pieces(), false, output.replayed),
        Err(error) => tool_error(id, &error),
    }
}

/// A business error as a tool result: the REST error envelope, as text and structured content.
fn tool_error(id: &Value, error: &ApiError) -> Vec<u8> {
    let envelope = serde_json::to_string(&ErrorEnvelope::from(error)).unwrap_or_default();
    jsonrpc::tool_result(id, [envelope.as_str()], true, false)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn tools_call_params_are_read_borrowed_with_the_protocol_errors_of_a_tree() {
        let params = raw(r#"{"name":"svc.order.get","arguments":{"reference":"ORD-1"},"_meta":{}}"#);
        let (name, arguments) = call_params(Some(&params)).unwrap();
        assert!(matches!(name, Cow::Borrowed("svc.order.get")));
        assert_eq!(arguments["reference"], "ORD-1");
        for empty in [
            r#"{"name":"svc.order.list"}"#,
            r#"{"name":"svc.order.list","arguments":null}"#,
        ] {
            assert!(call_params(Some(&raw(empty))).unwrap().1.is_empty(), "{empty}");
        }
        let duplicate = raw(r#"{"name":"a","name":"svc.order.get","arguments":{}}"#);
        assert_eq!(call_params(Some(&duplicate)).unwrap().0, "svc.order.get");
        for no_name in ["[]", "{}", r#"{"name":5}"#, r#"{"arguments":{}}"#, "null"] {
            assert_eq!(
                call_params(Some(&raw(no_name))).unwrap_err(),
                "invalid params: tools/call needs params.name",
                "{no_name}"
            );
        }
        assert!(call_params(None).is_err());
        for not_an_object in [
            r#"{"name":"x","arguments":[]}"#,
            r#"{"name":"x","arguments":"a"}"#,
        ] {
            assert_eq!(
                call_params(Some(&raw(not_an_object))).unwrap_err(),
                "invalid params: params.arguments must be an object"
            );
        }
    }
}

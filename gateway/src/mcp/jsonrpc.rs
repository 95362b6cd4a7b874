//! JSON-RPC 2.0 as MCP 2025-11-25 uses it over Streamable HTTP: one message per POST (batches were
//! removed from MCP in 2025-06-18), requests with a string or integer id, notifications without
//! one, and the answers written straight into bytes (a tool result embeds the already serialized
//! REST body instead of building a second JSON tree).

use serde::Serialize;
use serde_json::Value;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object (also: batch, missing `jsonrpc`, `method` or `id`).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist (or is not served here, such as `server/discover`).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (also: an unknown tool, per the MCP specification).
pub const INVALID_PARAMS: i64 = -32602;
/// An internal error of the server.
pub const INTERNAL_ERROR: i64 = -32603;

/// One incoming message.
#[derive(Debug)]
pub enum Message {
    /// A request: it gets exactly one answer.
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// A notification (no id): accepted with 202 and no body.
    Notification { method: String },
    /// A response or error from the client (we never ask the client anything): accepted, ignored.
    Response,
}

/// A message refused before it could be served: the HTTP status and the JSON-RPC error.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub status: http::StatusCode,
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl Refusal {
    /// A refusal with HTTP 400.
    pub fn bad_request(id: Value, code: i64, message: impl Into<String>) -> Self {
        Self {
            status: http::StatusCode::BAD_REQUEST,
            id,
            code,
            message: message.into(),
        }
    }

    /// The JSON-RPC error body of the refusal.
    pub fn body(&self) -> Vec<u8> {
        error(&self.id, self.code, &self.message)
    }
}

/// Parses one message: -32700 when the body is not JSON, -32600 for a batch, a value that is not
/// an object, a `jsonrpc` other than `"2.0"`, a missing or non-string `method`, an id that is not
/// a string or an integer, and a request method sent without an id (only `notifications/…`
/// methods are notifications in MCP).
pub fn parse(body: &[u8]) -> Result<Message, Refusal> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        Refusal::bad_request(
            Value::Null,
            PARSE_ERROR,
            format!("parse error: {}", strip_location(&error.to_string())),
        )
    })?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(Refusal::bad_request(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: batch arrays are not supported; send one JSON-RPC message per POST",
            ));
        }
        _ => {
            return Err(Refusal::bad_request(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: the body must be one JSON-RPC message object",
            ));
        }
    };
    let id = object.remove("id");
    let echo = id.clone().filter(valid_id).unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Refusal::bad_request(
            echo,
            INVALID_REQUEST,
            "invalid request: jsonrpc must be \"2.0\"",
        ));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Err(Refusal::bad_request(
                echo,
                INVALID_REQUEST,
                "invalid request: method must be a string",
            ));
        }
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Ok(Message::Response);
        }
        None => {
            return Err(Refusal::bad_request(
                echo,
                INVALID_REQUEST,
                "invalid request: method is required",
            ));
        }
    };
    match id {
        None if method.starts_with("notifications/") => Ok(Message::Notification { method }),
        None => Err(Refusal::bad_request(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: {method} is a request and needs an id (a string or an integer)"),
        )),
        Some(id) if !valid_id(&id) => Err(Refusal::bad_request(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: id must be a string or an integer",
        )),
        Some(id) => Ok(Message::Request {
            id,
            method,
            params: object.remove("params"),
        }),
    }
}

/// MCP request ids are strings or integers, never null.
fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(number) => number.is_i64() || number.is_u64(),
        _ => false,
    }
}

/// Removes serde_json's " at line L column C" suffix.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn result(id: &Value, result: &impl Serialize) -> Vec<u8> {
    let mut body = head(id);
    body.extend_from_slice(b",\"result\":");
    // Serializing our own result types cannot fail (string keys, no maps of non-strings).
    let _ = serde_json::to_writer(&mut body, result);
    body.push(b'}');
    body
}

/// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
pub fn error(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let mut body = head(id);
    body.extend_from_slice(b",\"error\":");
    let _ = serde_json::to_writer(
        &mut body,
        &serde_json::json!({ "code": code, "message": message }),
    );
    body.push(b'}');
    body
}

/// The result of `tools/call` around an already serialized JSON object `structured` (the REST
/// body or the REST error envelope): the same JSON as text content (for clients without
/// structured content), as `structuredContent`, `isError`, and `_meta` when given.
pub fn tool_result(id: &Value, structured: &str, is_error: bool, meta: Option<&Value>) -> Vec<u8> {
    let mut body = head(id);
    body.reserve(structured.len() * 2 + 96);
    body.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    let _ = serde_json::to_writer(&mut body, structured);
    body.extend_from_slice(b"}],\"structuredContent\":");
    body.extend_from_slice(structured.as_bytes());
    body.extend_from_slice(if is_error {
        b",\"isError\":true"
    } else {
        b",\"isError\":false"
    });
    if let Some(meta) = meta {
        body.extend_from_slice(b",\"_meta\":");
        let _ = serde_json::to_writer(&mut body, meta);
    }
    body.extend_from_slice(b"}}");
    body
}

fn head(id: &Value) -> Vec<u8> {
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    let _ = serde_json::to_writer(&mut body, id);
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(body: &str) -> Refusal {
        parse(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn malformed_json_batches_and_incomplete_messages_are_refused_with_their_codes() {
        assert_eq!(refused("{\"jsonrpc\":").code, PARSE_ERROR);
        assert_eq!(refused("not json").code, PARSE_ERROR);
        let batch = refused(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!((batch.code, batch.id.clone()), (INVALID_REQUEST, Value::Null));
        assert!(batch.message.contains("batch"));
        assert_eq!(refused("42").code, INVALID_REQUEST);
        let no_version = refused(r#"{"id":7,"method":"ping"}"#);
        assert_eq!((no_version.code, no_version.id), (INVALID_REQUEST, json!(7)));
        assert_eq!(
            refused(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).code,
            INVALID_REQUEST
        );
        let no_method = refused(r#"{"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!((no_method.code, no_method.id), (INVALID_REQUEST, json!("a")));
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","method":"tools/list"}"#).code,
            INVALID_REQUEST
        );
        for id in ["null", "1.5", "true", "{}"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert_eq!(refused(&body).code, INVALID_REQUEST, "{id}");
        }
        assert!(refused("{").status.is_client_error());
    }

    #[test]
    fn requests_notifications_and_client_responses_are_told_apart() {
        let request = parse(br#"{"jsonrpc":"2.0","id":"x1","method":"tools/list","params":{}}"#).unwrap();
        assert!(
            matches!(request, Message::Request { id, method, params: Some(_) } if id == "x1" && method == "tools/list")
        );
        let notification = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(notification, Message::Notification { .. }));
        let response = parse(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap();
        assert!(matches!(response, Message::Response));
    }

    #[test]
    fn answers_are_well_formed_json_rpc() {
        let answer: Value = serde_json::from_slice(&result(&json!(1), &json!({}))).unwrap();
        assert_eq!(answer, json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
        let answer: Value = serde_json::from_slice(&error(&json!("a"), METHOD_NOT_FOUND, "no")).unwrap();
        assert_eq!(answer["error"]["code"], METHOD_NOT_FOUND);
        let structured = r#"{"data":{"order":{"id":"o\"1"}}}"#;
        let meta = json!({ "lab/idempotentReplayed": true });
        let answer: Value =
            serde_json::from_slice(&tool_result(&json!(2), structured, false, Some(&meta))).unwrap();
        assert_eq!(
            answer["result"]["structuredContent"]["data"]["order"]["id"],
            "o\"1"
        );
        assert_eq!(answer["result"]["content"][0]["text"], structured);
        assert_eq!(answer["result"]["isError"], false);
        assert_eq!(answer["result"]["_meta"], meta);
    }
}

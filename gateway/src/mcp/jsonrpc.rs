//! JSON-RPC 2.0 as MCP 2025-11-25 uses it over Streamable HTTP: one message per POST (batches were
//! removed from MCP in 2025-06-18), requests with a string or integer id, notifications without
//! one, and the answers written straight into bytes (a tool result embeds the already serialized
//! REST body instead of building a second JSON tree).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

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

/// One incoming message, borrowed from the request body.
#[derive(Debug)]
pub enum Message<'a> {
    /// A request: it gets exactly one answer. `params` is kept as raw JSON text and parsed by
    /// the method that reads it.
    Request {
        id: Value,
        method: Cow<'a, str>,
        params: Option<Cow<'a, RawValue>>,
    },
    /// A notification (no id): accepted with 202 and no body.
    Notification { method: Cow<'a, str> },
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

/// The members of a message object that matter, borrowed: raw JSON text of each, nothing else
/// parsed or copied.
#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// Parses one message: -32700 when the body is not JSON, -32600 for a batch, a value that is not
/// an object, a `jsonrpc` other than `"2.0"`, a missing or non-string `method`, an id that is not
/// a string or an integer, and a request method sent without an id (only `notifications/…`
/// methods are notifications in MCP).
///
/// An object is read borrowed ([`RawMessage`]): the method name is borrowed unless escaped, and
/// `params` stays raw JSON text. Anything else (and an object that does not read that way, such
/// as one with a duplicate member) goes through a full parse, which finds the precise refusal.
pub fn parse(body: &[u8]) -> Result<Message<'_>, Refusal> {
    let starts_an_object = body
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|byte| *byte == b'{');
    if starts_an_object && let Ok(raw) = serde_json::from_slice::<RawMessage<'_>>(body) {
        return borrowed(raw);
    }
    parse_value(body)
}

/// A JSON string's value: borrowed from the raw text unless it has escapes; `None` when the
/// raw value is not a string.
pub fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(text) => Some(Cow::Borrowed(text)),
        Err(_) => serde_json::from_str::<String>(raw.get()).ok().map(Cow::Owned),
    }
}

/// The rules of [`parse`] on the borrowed members.
fn borrowed(raw: RawMessage<'_>) -> Result<Message<'_>, Refusal> {
    let id = raw
        .id
        .map(|id| serde_json::from_str::<Value>(id.get()).unwrap_or(Value::Null));
    let echo = id.clone().filter(valid_id).unwrap_or(Value::Null);
    let version_ok = raw
        .jsonrpc
        .and_then(string)
        .is_some_and(|version| version == "2.0");
    if !version_ok {
        return Err(Refusal::bad_request(
            echo,
            INVALID_REQUEST,
            "invalid request: jsonrpc must be \"2.0\"",
        ));
    }
    let method = match raw.method {
        Some(method) => match string(method) {
            Some(method) => method,
            None => {
                return Err(Refusal::bad_request(
                    echo,
                    INVALID_REQUEST,
                    "invalid request: method must be a string",
                ));
            }
        },
        None if id.is_some() && (raw.result.is_some() || raw.error.is_some()) => {
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
    classify(id, method, raw.params.map(Cow::Borrowed))
}

/// Tells requests and notifications apart once `jsonrpc` and `method` passed.
fn classify<'a>(
    id: Option<Value>,
    method: Cow<'a, str>,
    params: Option<Cow<'a, RawValue>>,
) -> Result<Message<'a>, Refusal> {
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
        Some(id) => Ok(Message::Request { id, method, params }),
    }
}

/// [`parse`] by a full parse into a JSON tree (what is not a plain message object).
fn parse_value(body: &[u8]) -> Result<Message<'_>, Refusal> {
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
    // A message that only a full parse reads (say, with a duplicate member) is rare: its params
    // are handed on as JSON text like the borrowed path's.
    let params = match object.remove("params") {
        None => None,
        Some(params) => Some(Cow::Owned(serde_json::value::to_raw_value(&params).map_err(
            |_| Refusal::bad_request(echo.clone(), INVALID_REQUEST, "invalid request: params"),
        )?)),
    };
    classify(id, Cow::Owned(method), params)
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

/// The result of `tools/call` around an already serialized JSON object, given in `pieces` that
/// joined are its text (the REST body or the REST error envelope): `structuredContent`, the same
/// JSON as one text content block (MCP 2025-11-25: a tool that returns structured content SHOULD
/// also return the serialized JSON in a TextContent block, for clients that do not read
/// structured content), `isError`, and `_meta` with `lab/idempotentReplayed` for a replay. The
/// answer is written once into one buffer with room for it: the pieces are copied in, then
/// written again as one JSON string by serde_json (the text block).
pub fn tool_result<const N: usize>(id: &Value, pieces: [&str; N], is_error: bool, replayed: bool) -> Vec<u8> {
    let length: usize = pieces.iter().map(|piece| piece.len()).sum();
    // The text block escaped is at most twice the JSON (serialized JSON holds no raw control
    // characters, so only `"` and `\` get a backslash).
    let mut body = Vec::with_capacity(3 * length + 160);
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    let _ = serde_json::to_writer(&mut body, id);
    body.extend_from_slice(b",\"result\":{\"structuredContent\":");
    for piece in pieces {
        body.extend_from_slice(piece.as_bytes());
    }
    body.extend_from_slice(b",\"content\":[{\"type\":\"text\",\"text\":");
    let _ = serde_json::to_writer(&mut body, &format_args!("{}", Joined(pieces)));
    body.extend_from_slice(b"}]");
    body.extend_from_slice(if is_error {
        b",\"isError\":true"
    } else {
        b",\"isError\":false"
    });
    if replayed {
        body.extend_from_slice(b",\"_meta\":{\"lab/idempotentReplayed\":true}");
    }
    body.extend_from_slice(b"}}");
    body
}

/// Pieces shown as the one text they make joined: serde_json writes a `Display` value as one
/// JSON string, escaping each piece as it comes.
struct Joined<'a, const N: usize>([&'a str; N]);

impl<const N: usize> std::fmt::Display for Joined<'_, N> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|piece| formatter.write_str(piece))
    }
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
    fn a_message_read_borrowed_follows_the_same_rules_as_one_read_whole() {
        let escaped =
            parse(br#" {"jsonrpc":"2\u002e0","id":1,"method":"tools\/call","params":{"name":"x"}}"#).unwrap();
        let Message::Request { id, method, params } = escaped else {
            panic!("a request");
        };
        assert_eq!((id, &*method), (json!(1), "tools/call"));
        assert_eq!(params.unwrap().get(), r#"{"name":"x"}"#);
        let plain = parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#).unwrap();
        assert!(matches!(
            plain,
            Message::Request {
                method: Cow::Borrowed("tools/call"),
                params: None,
                ..
            }
        ));
        // A duplicate member is read whole: the last one wins, as before.
        let duplicate =
            parse(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","params":{"a":1}}"#).unwrap();
        assert!(
            matches!(duplicate, Message::Request { id, params: Some(params), .. } if id == 2 && params.get() == r#"{"a":1}"#)
        );
        let version = refused(r#"{"jsonrpc":2,"id":"v","method":"ping"}"#);
        assert_eq!((version.code, version.id), (INVALID_REQUEST, json!("v")));
        let method = refused(r#"{"jsonrpc":"2.0","id":3,"method":5}"#);
        assert_eq!((method.code, method.id), (INVALID_REQUEST, json!(3)));
        let bad_id = refused(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#);
        assert_eq!((bad_id.code, bad_id.id), (INVALID_REQUEST, Value::Null));
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":1,"method":"ping""#).code,
            PARSE_ERROR
        );
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":null}"#).unwrap(),
            Message::Notification { .. }
        ));
    }

    #[test]
    fn answers_are_well_formed_json_rpc() {
        let answer: Value = serde_json::from_slice(&result(&json!(1), &json!({}))).unwrap();
        assert_eq!(answer, json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
        let answer: Value = serde_json::from_slice(&error(&json!("a"), METHOD_NOT_FOUND, "no")).unwrap();
        assert_eq!(answer["error"]["code"], METHOD_NOT_FOUND);
        let order = json!({ "data": { "order": {
            "id": "o\"1", "note": "a\\b\nc\u{1}d é \u{2028}", "lines": [1, 2.5, null, true], "empty": ""
        } } });
        let structured = serde_json::to_string(&order).unwrap();
        let answer: Value = serde_json::from_slice(&tool_result(
            &json!(2),
            [&structured[..3], &structured[3..]],
            false,
            true,
        ))
        .unwrap();
        assert_eq!(answer["result"]["structuredContent"], order);
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(text, structured, "the text block is the same JSON");
        assert_eq!(answer["result"]["content"][0]["type"], "text");
        assert_eq!(answer["result"]["isError"], false);
        assert_eq!(
            answer["result"]["_meta"],
            json!({ "lab/idempotentReplayed": true })
        );
        let answer: Value = serde_json::from_slice(&tool_result(&json!("x"), ["{}"], true, false)).unwrap();
        assert_eq!(
            answer,
            json!({ "jsonrpc": "2.0", "id": "x", "result": {
                "structuredContent": {}, "content": [{ "type": "text", "text": "{}" }], "isError": true
            } })
        );
    }

    #[test]
    fn the_text_block_is_the_joined_pieces_wherever_they_are_cut() {
        let json = r#"{"id":"o\"1","note":"a \"quoted\" C:\\path\n\u0001 é ¢ Ü ܐ \u2028","x":[]}"#;
        for cut in (0..=json.len()).filter(|&cut| json.is_char_boundary(cut)) {
            let answer = tool_result(&json!(1), [&json[..cut], "", &json[cut..]], false, false);
            let answer: Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(answer["result"]["content"][0]["text"], json, "cut at {cut}");
            assert_eq!(
                answer["result"]["structuredContent"],
                serde_json::from_str::<Value>(json).unwrap()
            );
        }
    }
}

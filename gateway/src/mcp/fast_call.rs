//! The common `tools/call` message read in one pass over its bytes: what agents send on almost
//! every call (`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"svc.order.get",
//! "arguments":{"reference":"ORD-…"}}}`, members in any order, any JSON whitespace).
//!
//! The full reader ([`super::jsonrpc::parse`], then the params read borrowed and the arguments
//! parsed into a map) goes over such a message three times with serde, with a JSON tree for
//! the id; this reader goes over it once and builds only the id and the arguments. It answers
//! only for the plain shape, and says `None` for anything else, which the full reader then reads
//! with its precise errors: a string with an escape, a number that is not a small integer, an
//! argument that is an object or an array, a duplicate member, any member besides `jsonrpc`,
//! `id`, `method` and `params` (or, in `params`, `name` and `arguments`), another method, invalid
//! UTF-8, anything after the object. Where it answers, the full reader answers the same (the
//! tests hold it to that on generated and mutated messages).

use serde_json::{Map, Value};

/// A `tools/call` request read by [`read`].
#[derive(Debug, PartialEq)]
pub struct ToolCall<'a> {
    /// A string or an integer.
    pub id: Value,
    /// The tool's name, borrowed from the body.
    pub name: &'a str,
    /// The tool's arguments (empty when absent or `null`).
    pub arguments: Map<String, Value>,
}

/// Reads `body` as a plain `tools/call` request; `None` when it is anything else (the full
/// reader takes it then).
pub fn read(body: &[u8]) -> Option<ToolCall<'_>> {
    // Checked once here: every string is then a slice of this text.
    let text = std::str::from_utf8(body).ok()?;
    let mut cursor = Cursor { text, at: 0 };
    let (mut version, mut id, mut method, mut params) = (None, None, None, None);
    cursor.object(|cursor, key| match key {
        "jsonrpc" => once(&mut version, cursor.string()?),
        "id" => once(&mut id, cursor.id()?),
        "method" => once(&mut method, cursor.string()?),
        "params" => once(&mut params, cursor.params()?),
        _ => None,
    })?;
    cursor.skip_whitespace();
    if cursor.at != text.len() || version? != "2.0" || method? != "tools/call" {
        return None;
    }
    let (name, arguments) = params?;
    Some(ToolCall {
        id: id?,
        name,
        arguments,
    })
}

/// Fills `slot` with `value`; `None` when it was filled already (a duplicate member).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// Where the reader is in the body.
struct Cursor<'a> {
    /// The body, valid UTF-8.
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The body's bytes.
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Steps over JSON whitespace (space, tab, line feed, carriage return).
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes().get(self.at).copied()
    }

    /// Consumes `byte` after whitespace.
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Consumes `word` (`true`, `false`, `null`) after whitespace.
    fn word(&mut self, word: &[u8]) -> Option<()> {
        self.skip_whitespace();
        self.bytes()[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// An object, calling `member` with the cursor just after each member's colon; `member`
    /// consumes the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string without escapes or control characters, borrowed.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let end = start + json_escape::unescaped_length(&self.bytes()[start..])?;
        self.at = end + 1;
        // Both ends are ASCII quotes, so the slice falls on character boundaries.
        self.text.get(start..end)
    }

    /// An integer of at most 18 digits (so that it fits `i64` and `u64` alike), without a
    /// leading zero; `-0` is left to the full reader. A fraction or an exponent after the digits
    /// is refused by the caller, which expects `,` or `}` there.
    fn integer(&mut self) -> Option<Value> {
        self.skip_whitespace();
        let rest = &self.bytes()[self.at..];
        let negative = rest.first() == Some(&b'-');
        let start = usize::from(negative);
        let digits = rest[start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let end = start + digits;
        if digits == 0 || digits > 18 || (rest[start] == b'0' && (digits > 1 || negative)) {
            return None;
        }
        let magnitude = rest[start..end]
            .iter()
            .fold(0_u64, |value, digit| value * 10 + u64::from(digit - b'0'));
        self.at += end;
        Some(if negative {
            // At most 18 digits: below 2^63, so the negation fits.
            Value::from(-i64::try_from(magnitude).ok()?)
        } else {
            Value::from(magnitude)
        })
    }

    /// A request id: a string or an integer.
    fn id(&mut self) -> Option<Value> {
        if self.peek()? == b'"' {
            return Some(Value::String(self.string()?.to_owned()));
        }
        self.integer()
    }

    /// `tools/call` params: `name` (required) and `arguments` (an object of plain values, or
    /// `null`, or absent).
    fn params(&mut self) -> Option<(&'a str, Map<String, Value>)> {
        let (mut name, mut arguments) = (None, None);
        self.object(|cursor, key| match key {
            "name" => once(&mut name, cursor.string()?),
            "arguments" => once(&mut arguments, cursor.arguments()?),
            _ => None,
        })?;
        Some((name?, arguments.unwrap_or_default()))
    }

    /// Tool arguments: `null` (none), or an object whose values are strings, integers,
    /// `true`, `false` or `null`.
    fn arguments(&mut self) -> Option<Map<String, Value>> {
        let mut arguments = Map::new();
        if self.peek()? == b'n' {
            self.word(b"null")?;
            return Some(arguments);
        }
        self.object(|cursor, key| {
            let value = match cursor.peek()? {
                b'"' => Value::String(cursor.string()?.to_owned()),
                b't' => cursor.word(b"true").map(|()| Value::Bool(true))?,
                b'f' => cursor.word(b"false").map(|()| Value::Bool(false))?,
                b'n' => cursor.word(b"null").map(|()| Value::Null)?,
                _ => cursor.integer()?,
            };
            match arguments.insert(key.to_owned(), value) {
                None => Some(()),
                Some(_) => None,
            }
        })?;
        Some(arguments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc::{self, Message};
    use serde_json::json;

    /// What the full reader makes of `body` when it is a `tools/call` request: its id, the
    /// tool's name and arguments.
    fn full(body: &[u8]) -> Option<(Value, String, Map<String, Value>)> {
        match jsonrpc::parse(body) {
            Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                let (name, arguments) = crate::mcp::call_params(params.as_deref()).ok()?;
                Some((id, name.into_owned(), arguments))
            }
            _ => None,
        }
    }

    /// Holds the one-pass reader to the full one on `body`; true when the one-pass reader
    /// answered.
    fn agrees(body: &[u8]) -> bool {
        let Some(fast) = read(body) else {
            return false;
        };
        let full = full(body).unwrap_or_else(|| {
            panic!(
                "the one-pass reader read {:?} where the full reader refused it",
                String::from_utf8_lossy(body)
            )
        });
        assert_eq!(
            (fast.id, fast.name.to_owned(), fast.arguments),
            full,
            "on {:?}",
            String::from_utf8_lossy(body)
        );
        true
    }

    #[test]
    fn the_messages_agents_send_are_read_in_one_pass_as_the_full_reader_reads_them() {
        let bodies = [
            // The benchmark's (members sorted, as serde_json writes a JSON tree).
            r#"{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"reference":"01a21c48-68f7-72ab-955f-3c9a1bed48b8"},"name":"svc.order.get"}}"#,
            // The TypeScript SDK's order.
            r#"{"method":"tools/call","params":{"name":"svc.order.list","arguments":{"limit":5,"cursor":null}},"jsonrpc":"2.0","id":3}"#,
            // Pretty-printed, with a string id and no arguments.
            "{\n  \"jsonrpc\": \"2.0\",\r\n\t\"id\": \"call-9\",\n  \"method\": \"tools/call\",\n  \"params\": { \"name\": \"svc.spend.envelope.get\" }\n}\n",
            r#"{"jsonrpc":"2.0","id":-12,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"x","arguments":{"a":true,"b":false,"c":-7,"d":"é ü","e":""}}}"#,
            r#"{"jsonrpc":"2.0","id":999999999999999999,"method":"tools/call","params":{"arguments":{},"name":"svc.order.get"}}"#,
        ];
        for body in bodies {
            assert!(agrees(body.as_bytes()), "not read in one pass: {body}");
        }
        let call = read(bodies[0].as_bytes()).unwrap();
        assert_eq!(call.id, json!(1));
        assert_eq!(call.name, "svc.order.get");
        assert_eq!(
            Value::Object(call.arguments),
            json!({ "reference": "01a21c48-68f7-72ab-955f-3c9a1bed48b8" })
        );
    }

    #[test]
    fn anything_beyond_the_plain_shape_is_left_to_the_full_reader() {
        let left = [
            // Escapes, in every string.
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"\n"}}}"#,
            // Numbers that are not small integers, and ids that are not ids.
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":01,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1234567890123456789,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            // Nested arguments, duplicates, extra members, other methods, trailing bytes.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1]}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":{}}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
            "{\"jsonrpc\":\"2.0\",\u{c}\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
            // Missing or mistyped members the full reader refuses with their errors.
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}"#,
        ];
        for body in left {
            assert_eq!(read(body.as_bytes()), None, "{body}");
        }
        let invalid_utf8 =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}";
        assert_eq!(read(invalid_utf8), None);
    }

    /// A deterministic generator of message texts: every member from a list of spellings (the
    /// plain ones first, then some that only the full reader reads, and wrong ones), in a
    /// shuffled order, with random whitespace. Every other message is made of plain spellings
    /// only (`plain`), so that both kinds of answer come up often.
    struct Generator {
        state: u64,
        plain: bool,
    }

    impl Generator {
        fn next(&mut self) -> usize {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            (self.state >> 16) as usize
        }

        /// One of `choices`; one of the first `plain` when the message is plain.
        fn pick<'a>(&mut self, choices: &[&'a str], plain: usize) -> &'a str {
            let choices = if self.plain { &choices[..plain] } else { choices };
            choices[self.next() % choices.len()]
        }

        /// JSON whitespace, and now and then a form feed (which is not).
        fn space(&mut self) -> &'static str {
            if !self.plain && self.next().is_multiple_of(32) {
                return "\u{c}";
            }
            self.pick(&["", "", "", " ", "\n", "\t", "\r\n "], 7)
        }

        /// An object of `members` (name and value text; an empty value leaves the member out),
        /// shuffled, sometimes with one member twice.
        fn object(&mut self, mut members: Vec<(&str, String)>) -> String {
            members.retain(|(_, value)| !value.is_empty());
            for index in (1..members.len()).rev() {
                members.swap(index, self.next() % (index + 1));
            }
            if !self.plain && !members.is_empty() && self.next().is_multiple_of(8) {
                let twice = members[self.next() % members.len()].clone();
                members.push(twice);
            }
            let members: Vec<String> = members
                .iter()
                .map(|(name, value)| {
                    format!(
                        "{}\"{name}\"{}:{}{value}",
                        self.space(),
                        self.space(),
                        self.space()
                    )
                })
                .collect();
            format!("{{{}{}}}", members.join(","), self.space())
        }

        fn message(&mut self) -> String {
            self.plain = self.next().is_multiple_of(2);
            let argument_values = [
                "\"ORD-2026-000001\"",
                "5",
                "-3",
                "0",
                "true",
                "false",
                "null",
                "\"\"",
                "\"é\"",
                "999999999999999999",
                "\"a\\\"b\"",
                "1.5",
                "1e2",
                "[1]",
                "{\"b\":1}",
                "01",
                "-0",
                "12345678901234567890",
            ];
            let names = ["reference", "limit", "cursor", "status", "a\\u0062", "x"];
            let count = self.next() % 4;
            let mut arguments = Vec::new();
            for _ in 0..count {
                let name = self.pick(&names, 4);
                let value = self.pick(&argument_values, 10).to_owned();
                if !self.plain || arguments.iter().all(|(other, _)| *other != name) {
                    arguments.push((name, value));
                }
            }
            let arguments = match self.next() % 8 {
                0 => String::new(),
                1 => "null".to_owned(),
                2 if !self.plain => "[]".to_owned(),
                _ => self.object(arguments),
            };
            let name = self.pick(
                &["\"svc.order.get\"", "\"\"", "\"svc.\\u006frder.get\"", "5", ""],
                2,
            );
            let meta = self.pick(&["", "{}"], 1).to_owned();
            let params = match self.next() % 10 {
                0 if !self.plain => String::new(),
                1 if !self.plain => "null".to_owned(),
                _ => self.object(vec![
                    ("name", name.to_owned()),
                    ("arguments", arguments),
                    ("_meta", meta),
                ]),
            };
            let version = self.pick(&["\"2.0\"", "\"2\\u002e0\"", "\"1.0\"", "2", ""], 1);
            let id = self.pick(
                &[
                    "1",
                    "0",
                    "-3",
                    "42",
                    "\"abc\"",
                    "\"\"",
                    "999999999999999999",
                    "\"a\\\"b\"",
                    "1.5",
                    "null",
                    "01",
                    "-0",
                    "12345678901234567890",
                    "[1]",
                    "",
                ],
                7,
            );
            let method = self.pick(&["\"tools/call\"", "\"tools\\/call\"", "\"ping\"", "5", ""], 1);
            let extra = self.pick(&["", "1", "{\"a\":[]}"], 1).to_owned();
            let message = self.object(vec![
                ("jsonrpc", version.to_owned()),
                ("id", id.to_owned()),
                ("method", method.to_owned()),
                ("params", params),
                ("extra", extra),
            ]);
            format!("{}{message}{}", self.space(), self.space())
        }
    }

    #[test]
    fn on_generated_and_mutated_messages_the_one_pass_reader_never_disagrees_with_the_full_one() {
        let mut generator = Generator {
            state: 0x9e37_79b9_7f4a_7c15,
            plain: false,
        };
        let mutations = [
            b'"', b'\\', b'{', b'}', b',', b':', b' ', b'0', b'-', b'x', 0xff, 0xc3, 0,
        ];
        let (mut read_in_one_pass, mut mutated_read) = (0, 0);
        for _ in 0..20_000 {
            let message = generator.message().into_bytes();
            if agrees(&message) {
                read_in_one_pass += 1;
            }
            // One byte changed, removed or added somewhere.
            let mut mutated = message.clone();
            let at = generator.next() % mutated.len();
            let byte = mutations[generator.next() % mutations.len()];
            match generator.next() % 3 {
                0 => mutated[at] = byte,
                1 => {
                    mutated.remove(at);
                }
                _ => mutated.insert(at, byte),
            }
            if agrees(&mutated) {
                mutated_read += 1;
            }
        }
        // The plain shape comes up often enough that both kinds of answer were compared.
        assert!(
            read_in_one_pass > 8_000,
            "{read_in_one_pass} generated messages read in one pass"
        );
        assert!(
            mutated_read > 1_000,
            "{mutated_read} mutated messages read in one pass"
        );
    }
}

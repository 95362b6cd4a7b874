//! The one input discipline of the mesh: which characters a request may carry in its strings.
//!
//! Two rules, chosen by the name of the field (see `docs/rest.md`, "Input rules"):
//! - **line** — identifiers, references, names, query values, header values and every string
//!   field not listed in [`FREE_TEXT_FIELDS`]: no control character at all, that is no C0
//!   (U+0000–U+001F), no DEL (U+007F) and no C1 (U+0080–U+009F);
//! - **free text** — the fields of [`FREE_TEXT_FIELDS`] (`notes`, `matrixNotes`, …): the same,
//!   except that TAB, LF and CR are allowed.
//!
//! Bytes that are not UTF-8 are refused everywhere. A refusal is 400 `invalid_request` whose
//! `details` name the field (`field`) and the flaw (`reason`) and never echo the value.
//!
//! The gateway applies these rules to every path and query parameter, every JSON string of a body
//! ([`check_json`]) and the headers it reads, before any handler runs; every gRPC server built on
//! `platform::grpc::server_builder` applies them to every string of every incoming message
//! ([`layer::InputLayer`]), so internal callers that bypass the gateway meet the same rules and
//! no control character ever reaches PostgreSQL (which refuses NUL in text with an error).

pub mod layer;
pub mod wire;

use crate::error::{ApiError, ErrorCode};
use serde_json::Value;

/// Fields (by their camelCase name, the last segment of a field path) that hold free text and
/// may contain TAB, LF and CR. Every other string is a line. A new multi-line field is added
/// here; forgetting it only refuses tabs and newlines in it, never lets a NUL through.
pub const FREE_TEXT_FIELDS: &[&str] = &[
    "notes",
    "matrixNotes",
    "description",
    "note",
    "documentJson",
    "body",
    // The customer's note quoted in a COA email (docs/notifications.md).
    "message",
];

/// Which characters a string may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextRule {
    /// No control character at all (identifiers, references, query and header values, names).
    Line,
    /// No control character except TAB, LF and CR (notes, descriptions).
    FreeText,
}

impl TextRule {
    /// The rule of a field named `name` (camelCase, without location or index).
    pub fn for_field(name: &str) -> Self {
        if FREE_TEXT_FIELDS.contains(&name) {
            Self::FreeText
        } else {
            Self::Line
        }
    }

    /// True when `character` may appear in a string under this rule.
    pub fn allows(self, character: char) -> bool {
        !character.is_control() || (self == Self::FreeText && matches!(character, '\t' | '\n' | '\r'))
    }
}

/// Why a string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flaw {
    /// A control character the field's rule does not allow.
    ControlCharacter,
    /// Bytes that are not UTF-8 (or a malformed percent-encoding at the gateway).
    InvalidEncoding,
}

impl Flaw {
    /// The reason given to the client.
    pub fn reason(self) -> &'static str {
        match self {
            Self::ControlCharacter => "contains a control character",
            Self::InvalidEncoding => "is not valid UTF-8 or not validly percent-encoded",
        }
    }
}

/// The flaw of `value` under `rule`, if any.
pub fn flaw(rule: TextRule, value: &str) -> Option<Flaw> {
    if is_printable_ascii(value.as_bytes()) {
        return None;
    }
    (!value.chars().all(|character| rule.allows(character))).then_some(Flaw::ControlCharacter)
}

/// The flaw of raw `bytes` under `rule`, if any: not UTF-8, or a control character.
pub fn flaw_in_bytes(rule: TextRule, bytes: &[u8]) -> Option<Flaw> {
    if is_printable_ascii(bytes) {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => flaw(rule, text),
        Err(_) => Some(Flaw::InvalidEncoding),
    }
}

/// True when every byte is printable ASCII (0x20 to 0x7E): such text is UTF-8 and holds no
/// control character under either rule, which is what almost every identifier, reference and
/// query value is. One pass without an early exit, which the compiler turns into vector
/// compares; anything else is decoded character by character.
fn is_printable_ascii(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .fold(true, |printable, &byte| printable & (0x20..0x7F).contains(&byte))
}

/// The 400 `invalid_request` refusing `field` for `flaw`; the value itself is never echoed.
pub fn refused(field: &str, flaw: Flaw) -> ApiError {
    ApiError::field(
        ErrorCode::InvalidRequest,
        field,
        format!("{field} {}", flaw.reason()),
    )
    .with_details(serde_json::json!({ "reason": flaw.reason() }))
}

/// Checks one string `value` of `field` under `rule`.
pub fn check(field: &str, rule: TextRule, value: &str) -> Result<(), ApiError> {
    match flaw(rule, value) {
        Some(flaw) => Err(refused(field, flaw)),
        None => Ok(()),
    }
}

/// Checks every string of a JSON document, property names included. `root` names the document
/// (`body`); strings are checked under the rule of their nearest property name, and a refusal
/// names the path of the string, e.g. `body.sampleMetadata[0].lotNumber`. A property name with
/// a control character names the object that holds it.
pub fn check_json(root: &str, value: &Value) -> Result<(), ApiError> {
    walk_json(&JsonPath::Root(root), TextRule::Line, value)
}

/// Where a string sits in a JSON document, as a chain on the stack: the path text is only
/// written for a refusal.
enum JsonPath<'a> {
    Root(&'a str),
    Member(&'a JsonPath<'a>, &'a str),
    Index(&'a JsonPath<'a>, usize),
}

impl JsonPath<'_> {
    /// `root.member[index]…`.
    fn text(&self) -> String {
        match self {
            Self::Root(root) => (*root).to_owned(),
            Self::Member(parent, name) => format!("{}.{name}", parent.text()),
            Self::Index(parent, index) => format!("{}[{index}]", parent.text()),
        }
    }
}

fn walk_json(path: &JsonPath<'_>, rule: TextRule, value: &Value) -> Result<(), ApiError> {
    match value {
        Value::String(text) => match flaw(rule, text) {
            Some(flaw) => Err(refused(&path.text(), flaw)),
            None => Ok(()),
        },
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk_json(&JsonPath::Index(path, index), rule, item)?;
            }
            Ok(())
        }
        Value::Object(members) => {
            for (name, member) in members {
                if flaw(TextRule::Line, name).is_some() {
                    let path = path.text();
                    return Err(ApiError::field(
                        ErrorCode::InvalidRequest,
                        &path,
                        format!("{path} has a property name that contains a control character"),
                    )
                    .with_details(
                        serde_json::json!({ "reason": "a property name contains a control character" }),
                    ));
                }
                walk_json(&JsonPath::Member(path, name), TextRule::for_field(name), member)?;
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const REFUSED_EVERYWHERE: [char; 8] = [
        '\u{0}', '\u{1}', '\u{8}', '\u{b}', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}',
    ];

    #[test]
    fn lines_refuse_every_control_character_and_free_text_keeps_tab_lf_and_cr() {
        for character in REFUSED_EVERYWHERE {
            let value = format!("ORD-{character}1");
            assert_eq!(flaw(TextRule::Line, &value), Some(Flaw::ControlCharacter));
            assert_eq!(flaw(TextRule::FreeText, &value), Some(Flaw::ControlCharacter));
        }
        for character in ['\t', '\n', '\r'] {
            let value = format!("line one{character}line two");
            assert_eq!(flaw(TextRule::Line, &value), Some(Flaw::ControlCharacter));
            assert_eq!(flaw(TextRule::FreeText, &value), None);
        }
        for fine in ["ORD-2026-000001", "Säure ½ µg — 東京", "\u{a0}", "\u{200b}", ""] {
            assert_eq!(flaw(TextRule::Line, fine), None, "{fine:?}");
        }
        assert_eq!(flaw_in_bytes(TextRule::Line, b"ok"), None);
        assert_eq!(
            flaw_in_bytes(TextRule::Line, b"\xff"),
            Some(Flaw::InvalidEncoding)
        );
        assert_eq!(
            flaw_in_bytes(TextRule::Line, b"\xc2\x85"),
            Some(Flaw::ControlCharacter)
        );
    }

    /// What `flaw_in_bytes` answered before the printable-ASCII shortcut: decoding every
    /// character.
    fn decoded(rule: TextRule, bytes: &[u8]) -> Option<Flaw> {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                (!text.chars().all(|character| rule.allows(character))).then_some(Flaw::ControlCharacter)
            }
            Err(_) => Some(Flaw::InvalidEncoding),
        }
    }

    #[test]
    fn the_printable_ascii_shortcut_answers_as_decoding_every_character_does() {
        // Every byte value at the start, the middle and the end of printable text, and every
        // two-byte sequence (C1 controls are 0xC2 0x80 to 0xC2 0x9F), under both rules.
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for byte in 0..=u8::MAX {
            for at in [0, 7, 16, 33] {
                let mut text = b"ORD-2026-000001 0123456789abcdef ~".to_vec();
                text[at] = byte;
                texts.push(text);
            }
            for second in 0..=u8::MAX {
                texts.push(vec![b'a', byte, second, b'z']);
            }
        }
        texts.push(Vec::new());
        texts.push("Säure ½ µg — 東京 \u{85}".as_bytes().to_vec());
        for text in &texts {
            for rule in [TextRule::Line, TextRule::FreeText] {
                assert_eq!(
                    flaw_in_bytes(rule, text),
                    decoded(rule, text),
                    "{rule:?} {text:?}"
                );
                if let Ok(text) = std::str::from_utf8(text) {
                    assert_eq!(
                        flaw(rule, text),
                        decoded(rule, text.as_bytes()),
                        "{rule:?} {text:?}"
                    );
                }
            }
        }
        assert!(is_printable_ascii(b" ~ORD-1"));
        assert!(!is_printable_ascii(b"ORD\x7f1"));
        assert!(!is_printable_ascii(b"ORD\x1f1"));
        assert!(!is_printable_ascii("é".as_bytes()));
    }

    #[test]
    fn the_rule_of_a_field_is_chosen_by_its_name() {
        assert_eq!(TextRule::for_field("notes"), TextRule::FreeText);
        assert_eq!(TextRule::for_field("matrixNotes"), TextRule::FreeText);
        assert_eq!(TextRule::for_field("lotNumber"), TextRule::Line);
        assert_eq!(TextRule::for_field("reference"), TextRule::Line);
    }

    #[test]
    fn a_refusal_names_the_field_and_never_echoes_the_value() {
        let error = check("path.reference", TextRule::Line, "ORD-\u{0}secret").unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert_eq!(error.details.as_ref().unwrap()["field"], "path.reference");
        let rendered = serde_json::to_string(&error).unwrap();
        assert!(
            !rendered.contains("secret") && !rendered.contains("\\u0000"),
            "{rendered}"
        );
    }

    #[test]
    fn json_documents_are_walked_with_the_rule_of_the_nearest_property() {
        let field =
            |document: Value| check_json("body", &document).unwrap_err().details.unwrap()["field"].clone();
        let notes = json!({ "notes": "two\nlines\tand\r\n", "compoundNames": ["a", "b"] });
        assert!(check_json("body", &notes).is_ok());
        assert_eq!(field(json!({ "notes": "nul \u{0}" })), "body.notes");
        assert_eq!(
            field(json!({ "compoundNames": ["a", "b\tc"] })),
            "body.compoundNames[1]"
        );
        assert_eq!(
            field(json!({ "sampleMetadata": [{ "compoundName": "a", "lotNumber": "L\u{85}1" }] })),
            "body.sampleMetadata[0].lotNumber"
        );
        assert_eq!(
            field(json!({ "sampleMetadata": [{ "matrixNotes": "x\u{7f}" }] })),
            "body.sampleMetadata[0].matrixNotes"
        );
        assert_eq!(field(json!({ "a": { "b\u{0}c": 1 } })), "body.a");
        assert_eq!(field(json!("\u{1}")), "body");
    }
}

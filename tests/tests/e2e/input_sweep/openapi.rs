//! Reading the served OpenAPI document for the sweep: a value of any request schema with every
//! property present (`$ref`, `oneOf`/`anyOf`/`allOf`, nullable types, enums and arrays of
//! objects resolved), and the JSON pointer and field path of every string in it.

use serde_json::{Value, json};

/// A valid value of a path parameter of `schema`.
pub fn example_text(schema: &Value) -> String {
    if schema["format"] == "uuid" {
        uuid::Uuid::new_v4().to_string()
    } else {
        "REF-1".to_owned()
    }
}

/// A value of `schema` with every property present (arrays hold one item).
pub fn example(document: &Value, schema: &Value, depth: usize) -> Value {
    assert!(depth < 16, "the body schema nests too deep");
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap();
        return example(document, &document["components"]["schemas"][name], depth + 1);
    }
    for combinator in ["oneOf", "anyOf", "allOf"] {
        if let Some(branches) = schema[combinator].as_array() {
            let branch = branches
                .iter()
                .find(|branch| branch["type"] != "null")
                .unwrap_or(&Value::Null);
            return example(document, branch, depth + 1);
        }
    }
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    let kinds: Vec<&str> = match &schema["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    match kinds.into_iter().find(|kind| *kind != "null") {
        Some("string") => Value::String(example_text(schema)),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([example(document, &schema["items"], depth + 1)]),
        Some("object") | None if schema["properties"].is_object() => {
            let properties = schema["properties"].as_object().unwrap();
            let members = properties
                .iter()
                .map(|(name, property)| (name.clone(), example(document, property, depth + 1)));
            Value::Object(members.collect())
        }
        _ => json!({}),
    }
}

/// Every string of `value` as (JSON pointer, field path).
pub fn string_leaves(value: &Value, pointer: String, field: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(_) => out.push((pointer, field)),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                string_leaves(
                    item,
                    format!("{pointer}/{index}"),
                    format!("{field}[{index}]"),
                    out,
                );
            }
        }
        Value::Object(members) => {
            for (name, member) in members {
                let path = if field.is_empty() {
                    name.clone()
                } else {
                    format!("{field}.{name}")
                };
                string_leaves(member, format!("{pointer}/{name}"), path, out);
            }
        }
        _ => {}
    }
}

pub fn set_pointer(value: &mut Value, pointer: &str, new: Value) {
    match value.pointer_mut(pointer) {
        Some(slot) => *slot = new,
        None => {
            let name = pointer.trim_start_matches('/');
            value
                .as_object_mut()
                .expect("an object body")
                .insert(name.to_owned(), new);
        }
    }
}

pub fn percent_encode(text: &str) -> String {
    text.bytes().map(|byte| format!("%{byte:02X}")).collect()
}

//! Tool definitions as `tools/list` shows them, derived once from the OpenAPI document so that a
//! tool's schemas are its REST twin's, never a hand-written copy:
//!
//! - `inputSchema`: an object whose properties are the twin's path and query parameters, the
//!   properties of its JSON body, and `idempotencyKey` (required) where the twin requires the
//!   `Idempotency-Key` header; no other property is allowed;
//! - `outputSchema`: the twin's success body or, for a business error (`isError: true`), the
//!   REST error envelope, with every `$ref` resolved in place (self-contained schemas that any
//!   client's validator reads).

use super::tools::{TOOLS, Tool};
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

/// The description of the `idempotencyKey` argument.
pub const IDEMPOTENCY_KEY_DESCRIPTION: &str = "Idempotency key, 8 to 255 visible ASCII characters (the \
    REST Idempotency-Key header): generate one unique key per intended operation and send the same key \
    again when retrying it, so that it takes effect once. Reusing a key with other arguments is a \
    conflict (idempotency_key_reused).";

/// The tool definitions, built on first use.
static CATALOG: LazyLock<Catalog> = LazyLock::new(Catalog::build);

/// Every tool's definition.
pub struct Catalog {
    entries: Vec<Entry>,
}

/// One tool's definition, as a JSON value and serialized.
pub struct Entry {
    pub tool: &'static Tool,
    pub definition: Value,
    serialized: String,
}

/// The definitions of every tool.
pub fn catalog() -> &'static Catalog {
    &CATALOG
}

impl Catalog {
    fn build() -> Self {
        let (_, document) = crate::http::agent_routes();
        let document = serde_json::to_value(&document).expect("the OpenAPI document serializes");
        let entries = TOOLS
            .iter()
            .map(|tool| {
                let definition = definition(tool, &document);
                let serialized = definition.to_string();
                Entry {
                    tool,
                    definition,
                    serialized,
                }
            })
            .collect();
        Self { entries }
    }

    /// Every definition.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The `tools/list` result for a key holding `scopes` (of a sandbox customer: `sandbox`):
    /// only the tools it may call.
    pub fn list_result(&self, scopes: &[String], sandbox: bool) -> String {
        let mut result = String::from("{\"tools\":[");
        let visible = self
            .entries
            .iter()
            .filter(|entry| entry.tool.allowed(scopes) && (sandbox || !entry.tool.sandbox_only()));
        for (index, entry) in visible.enumerate() {
            if index > 0 {
                result.push(',');
            }
            result.push_str(&entry.serialized);
        }
        result.push_str("]}");
        result
    }
}

/// The definition of `tool` from the OpenAPI `document`.
///
/// # Panics
/// When the twin is missing from the document or its shapes are not objects (unit-tested).
fn definition(tool: &Tool, document: &Value) -> Value {
    let method = tool.method.to_ascii_lowercase();
    let operation = &document["paths"][tool.path][method.as_str()];
    assert!(
        operation.is_object(),
        "{}: {} {} is not in the OpenAPI document",
        tool.name,
        tool.method,
        tool.path
    );
    let components = &document["components"]["schemas"];
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": input_schema(tool, operation, components),
        "outputSchema": output_schema(tool, operation, components),
        "annotations": tool.annotations,
    })
}

fn input_schema(tool: &Tool, operation: &Value, components: &Value) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        let name = parameter["name"].as_str().unwrap_or_default();
        let (property, description) = match parameter["in"].as_str() {
            Some("path" | "query") => (name, parameter["description"].clone()),
            Some("header") if name.eq_ignore_ascii_case("idempotency-key") => {
                ("idempotencyKey", Value::from(IDEMPOTENCY_KEY_DESCRIPTION))
            }
            _ => continue,
        };
        let mut schema = inline(parameter["schema"].clone(), components, 0);
        if let (Some(schema), Value::String(_)) = (schema.as_object_mut(), &description) {
            schema.insert("description".to_owned(), description);
        }
        if parameter["required"] == true {
            required.push(Value::from(property));
        }
        properties.insert(property.to_owned(), schema);
    }
    let body = &operation["requestBody"]["content"]["application/json"]["schema"];
    if body.is_object() {
        let body = inline(body.clone(), components, 0);
        let object = body_object(&body);
        for (name, schema) in object["properties"].as_object().into_iter().flatten() {
            assert!(
                properties.insert(name.clone(), schema.clone()).is_none(),
                "{}: the body property {name} collides with a parameter",
                tool.name
            );
        }
        required.extend(object["required"].as_array().into_iter().flatten().cloned());
    }
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

/// The object schema inside a body schema (an optional body is `oneOf [null, object]`).
fn body_object(body: &Value) -> &Value {
    if body["type"] == "object" {
        return body;
    }
    body["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|variant| variant["type"] == "object")
        .unwrap_or(body)
}

fn output_schema(tool: &Tool, operation: &Value, components: &Value) -> Value {
    let responses = &operation["responses"];
    let success = ["200", "201", "202"]
        .iter()
        .map(|status| &responses[*status]["content"]["application/json"]["schema"])
        .find(|schema| schema.is_object())
        .unwrap_or_else(|| panic!("{}: the twin has no JSON success response", tool.name));
    let success = inline(success.clone(), components, 0);
    let error = inline(
        json!({ "$ref": "#/components/schemas/ErrorEnvelope" }),
        components,
        0,
    );
    json!({
        "type": "object",
        "anyOf": [success, error],
    })
}

/// Replaces every `$ref` to a component by the component itself (siblings of the `$ref`, such as a
/// description, are kept).
fn inline(schema: Value, components: &Value, depth: usize) -> Value {
    assert!(
        depth < 32,
        "the OpenAPI components refer to each other in a cycle"
    );
    match schema {
        Value::Object(mut object) => {
            if let Some(Value::String(reference)) = object.remove("$ref") {
                let name = reference
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("unexpected $ref {reference}"));
                let target = &components[name];
                assert!(target.is_object(), "$ref {reference} does not resolve");
                let mut resolved = inline(target.clone(), components, depth + 1);
                if let Some(resolved) = resolved.as_object_mut() {
                    for (key, value) in object {
                        resolved.insert(key, inline(value, components, depth + 1));
                    }
                }
                return resolved;
            }
            Value::Object(
                object
                    .into_iter()
                    .map(|(key, value)| (key, inline(value, components, depth + 1)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| inline(item, components, depth + 1))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition_of(name: &str) -> &'static Value {
        &catalog()
            .entries()
            .iter()
            .find(|entry| entry.tool.name == name)
            .unwrap()
            .definition
    }

    #[test]
    fn every_schema_is_a_self_contained_object_schema() {
        for entry in catalog().entries() {
            for key in ["inputSchema", "outputSchema"] {
                let schema = &entry.definition[key];
                assert_eq!(schema["type"], "object", "{} {key}", entry.tool.name);
                assert!(!schema.to_string().contains("$ref"), "{} {key}", entry.tool.name);
            }
            let required = entry.definition["inputSchema"]["required"].clone();
            let needs_key = required
                .as_array()
                .is_some_and(|required| required.iter().any(|name| name == "idempotencyKey"));
            assert_eq!(
                needs_key,
                entry.tool.needs_idempotency_key(),
                "{}",
                entry.tool.name
            );
        }
    }

    #[test]
    fn the_order_tool_takes_the_rest_body_plus_its_idempotency_key() {
        let create = definition_of("svc.order.create");
        let input = &create["inputSchema"];
        for name in ["quoteId", "paymentMethod", "confirm", "idempotencyKey"] {
            assert!(
                input["required"].as_array().unwrap().iter().any(|r| r == name),
                "{name} is required"
            );
        }
        assert_eq!(input["additionalProperties"], false);
        assert_eq!(input["properties"]["idempotencyKey"]["minLength"], 8);
        assert_eq!(input["properties"]["notes"]["maxLength"], 4000);
        let output = &create["outputSchema"]["anyOf"];
        assert!(output[0]["properties"]["data"]["properties"]["order"].is_object());
        assert!(output[1]["properties"]["error"]["properties"]["code"].is_object());
        let get = definition_of("svc.order.get");
        assert_eq!(get["inputSchema"]["required"], json!(["reference"]));
        assert_eq!(get["annotations"]["readOnlyHint"], true);
        let search = definition_of("svc.catalog.search");
        assert_eq!(search["inputSchema"]["properties"]["limit"]["maximum"], 200);
        assert!(search["inputSchema"].get("required").is_none());
    }

    #[test]
    fn tools_list_shows_only_what_the_scopes_allow() {
        let list: Value = serde_json::from_str(
            &catalog().list_result(&["orders:read".into(), "catalog:read".into()], false),
        )
        .unwrap();
        let names: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "svc.catalog.search",
                "svc.instrument.list",
                "svc.method.list",
                "svc.order.list",
                "svc.order.get",
                "svc.order.sample.list",
                "svc.order.custody.get",
                "svc.order.eta.get",
                "svc.coa.verify",
                "svc.coa.verify.post",
                "svc.coa.verify.batch",
                "svc.coa.verify.batch.post",
                "svc.support.ticket.list",
                "svc.support.ticket.get",
                "svc.notification.consent.list",
            ]
        );
        let none: Value = serde_json::from_str(&catalog().list_result(&[], false)).unwrap();
        let public: Vec<&str> = none["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert!(
            public.iter().all(|name| name.starts_with("svc.coa.verify")),
            "a key without scopes sees only the public verification: {public:?}"
        );
    }
}

//! The input rules applied to protobuf messages without decoding them: a [`Schema`] built once
//! from the mesh's file descriptors (`proto::FILE_DESCRIPTOR_SET`) knows, for every message
//! field, whether it is a string, a nested message or anything else, and [`Schema::check`] walks
//! the wire bytes of a message, checking every string (nested, repeated, map and oneof fields
//! included) under the rule of its field's name. Field paths use the JSON (camelCase) names:
//! `sampleMetadata[0].lotNumber`.

use super::{Flaw, TextRule};
use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FileDescriptorSet};
use std::collections::HashMap;

/// Nesting deeper than this is left to the decoder (prost's own limit is 100).
const MAX_DEPTH: usize = 100;

/// What the walk found wrong with a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A string field breaks the input rules.
    Refused { field: String, flaw: Flaw },
    /// The bytes are not a well-formed protobuf message; the decoder will say so.
    Malformed,
}

#[derive(Debug)]
enum Kind {
    String,
    Message(String),
    Other,
}

#[derive(Debug)]
struct Field {
    json_name: String,
    repeated: bool,
    kind: Kind,
    rule: TextRule,
}

/// Field tables of every message and the input type of every unary method.
#[derive(Debug, Default)]
pub struct Schema {
    /// Fully qualified message name (`.lab.orders.v1.GetOrderRequest`) → field number → field.
    messages: HashMap<String, HashMap<u32, Field>>,
    /// gRPC path (`/lab.orders.v1.OrdersService/GetOrder`) → input message name.
    unary_inputs: HashMap<String, String>,
}

impl Schema {
    /// Builds the schema from an encoded `FileDescriptorSet`.
    pub fn from_descriptor_set(bytes: &[u8]) -> Result<Self, prost::DecodeError> {
        let set = FileDescriptorSet::decode(bytes)?;
        let mut schema = Self::default();
        for file in &set.file {
            let package = file.package();
            let scope = if package.is_empty() {
                String::new()
            } else {
                format!(".{package}")
            };
            for message in &file.message_type {
                schema.add_message(&scope, message);
            }
            for service in &file.service {
                for method in &service.method {
                    if method.client_streaming() {
                        continue;
                    }
                    let path = format!("/{package}.{}/{}", service.name(), method.name());
                    let path = path.replacen("/.", "/", 1);
                    schema.unary_inputs.insert(path, method.input_type().to_owned());
                }
            }
        }
        Ok(schema)
    }

    fn add_message(&mut self, scope: &str, message: &DescriptorProto) {
        let name = format!("{scope}.{}", message.name());
        let fields = message
            .field
            .iter()
            .map(|field| {
                let json_name = field
                    .json_name
                    .clone()
                    .unwrap_or_else(|| camel_case(field.name()));
                let kind = match field.r#type() {
                    Type::String => Kind::String,
                    Type::Message => Kind::Message(field.type_name().to_owned()),
                    _ => Kind::Other,
                };
                let entry = Field {
                    rule: TextRule::for_field(&json_name),
                    json_name,
                    repeated: field.label() == Label::Repeated,
                    kind,
                };
                (field.number() as u32, entry)
            })
            .collect();
        for nested in &message.nested_type {
            self.add_message(&name, nested);
        }
        self.messages.insert(name, fields);
    }

    /// The input message of the unary method at gRPC `path`, when the schema knows the method.
    pub fn unary_input(&self, path: &str) -> Option<&str> {
        self.unary_inputs.get(path).map(String::as_str)
    }

    /// Checks every string in the encoded `message` of type `type_name`.
    pub fn check(&self, type_name: &str, message: &[u8]) -> Result<(), Problem> {
        self.walk(type_name, message, &mut String::new(), 0)
    }

    /// Walks one message; `path` is the field path of the message (restored on return).
    fn walk(
        &self,
        type_name: &str,
        mut bytes: &[u8],
        path: &mut String,
        depth: usize,
    ) -> Result<(), Problem> {
        if depth > MAX_DEPTH {
            return Err(Problem::Malformed);
        }
        let fields = self.messages.get(type_name);
        // Occurrences so far of each repeated field (allocates only for repeated strings and messages).
        let mut occurrences: Vec<(u32, usize)> = Vec::new();
        while !bytes.is_empty() {
            let key = varint(&mut bytes)?;
            let number = u32::try_from(key >> 3).map_err(|_| Problem::Malformed)?;
            let payload = match key & 7 {
                0 => {
                    varint(&mut bytes)?;
                    continue;
                }
                1 => {
                    take(&mut bytes, 8)?;
                    continue;
                }
                5 => {
                    take(&mut bytes, 4)?;
                    continue;
                }
                2 => {
                    let length = usize::try_from(varint(&mut bytes)?).map_err(|_| Problem::Malformed)?;
                    take(&mut bytes, length)?
                }
                _ => return Err(Problem::Malformed),
            };
            let Some(field) = fields.and_then(|fields| fields.get(&number)) else {
                continue;
            };
            if matches!(field.kind, Kind::Other) {
                continue;
            }
            let index =
                field.repeated.then(
                    || match occurrences.iter_mut().find(|(seen, _)| *seen == number) {
                        Some((_, count)) => {
                            *count += 1;
                            *count - 1
                        }
                        None => {
                            occurrences.push((number, 1));
                            0
                        }
                    },
                );
            let length = path.len();
            match &field.kind {
                Kind::String => {
                    if let Some(flaw) = super::flaw_in_bytes(field.rule, payload) {
                        push_segment(path, &field.json_name, index);
                        return Err(Problem::Refused {
                            field: std::mem::take(path),
                            flaw,
                        });
                    }
                }
                Kind::Message(nested) => {
                    push_segment(path, &field.json_name, index);
                    self.walk(nested, payload, path, depth + 1)?;
                    path.truncate(length);
                }
                Kind::Other => {}
            }
        }
        Ok(())
    }
}

/// Appends `.name` (or `name` at the root) and `[index]` for a repeated field.
fn push_segment(path: &mut String, name: &str, index: Option<usize>) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(name);
    if let Some(index) = index {
        path.push_str(&format!("[{index}]"));
    }
}

/// Reads a base-128 varint.
fn varint(bytes: &mut &[u8]) -> Result<u64, Problem> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or(Problem::Malformed)?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err(Problem::Malformed)
}

fn take<'a>(bytes: &mut &'a [u8], length: usize) -> Result<&'a [u8], Problem> {
    if bytes.len() < length {
        return Err(Problem::Malformed);
    }
    let (taken, rest) = bytes.split_at(length);
    *bytes = rest;
    Ok(taken)
}

/// protoc's default JSON name: `sample_metadata` → `sampleMetadata`.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for character in name.chars() {
        if character == '_' {
            upper = true;
        } else if upper {
            out.extend(character.to_uppercase());
            upper = false;
        } else {
            out.push(character);
        }
    }
    out
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

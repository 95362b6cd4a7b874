//! The reference of the internal gRPC API, `docs/grpc-reference.md`, rendered from the comments of
//! the `.proto` files (issue 33).
//!
//! The renderer reads `proto::FILE_DESCRIPTOR_SET` (protox keeps the comments as source code info)
//! and writes every service, rpc, message and enum of the `lab.*` packages. The committed file is
//! checked against a fresh rendering on every `cargo test`, so it cannot drift from the protos;
//! `LAB_UPDATE_DOCS=1 cargo test -p proto --test reference_docs` rewrites it.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
};

/// The command that rewrites the committed reference.
const REGENERATE: &str = "LAB_UPDATE_DOCS=1 cargo test -p proto --test reference_docs";

// Field numbers of the descriptor messages, the steps of a source code info path.
const FILE_PACKAGE: i32 = 2;
const FILE_MESSAGE: i32 = 4;
const FILE_ENUM: i32 = 5;
const FILE_SERVICE: i32 = 6;
const MESSAGE_FIELD: i32 = 2;
const MESSAGE_NESTED: i32 = 3;
const MESSAGE_ENUM: i32 = 4;
const MESSAGE_ONEOF: i32 = 8;
const ENUM_VALUE: i32 = 2;
const SERVICE_METHOD: i32 = 2;

fn descriptor_set() -> FileDescriptorSet {
    FileDescriptorSet::decode(proto::FILE_DESCRIPTOR_SET).expect("proto::FILE_DESCRIPTOR_SET decodes")
}

/// The files of the `lab.*` packages (not the imported `google/*`), sorted by name.
fn lab_files(set: &FileDescriptorSet) -> Vec<&FileDescriptorProto> {
    let mut files: Vec<_> = set
        .file
        .iter()
        .filter(|file| file.package().starts_with("lab."))
        .collect();
    files.sort_by(|a, b| a.name().cmp(b.name()));
    files
}

/// The stable anchor of a full name: `.lab.orders.v1.Order` is `lab-orders-v1-order`.
fn anchor(full_name: &str) -> String {
    full_name.trim_start_matches('.').to_lowercase().replace('.', "-")
}

fn anchor_tag(full_name: &str) -> String {
    format!("<a id=\"{}\"></a>", anchor(full_name))
}

fn child(path: &[i32], step: i32, index: usize) -> Vec<i32> {
    let mut path = path.to_vec();
    path.push(step);
    path.push(i32::try_from(index).expect("descriptor index fits an i32"));
    path
}

/// The comments of one file by source code info path, each as its paragraphs (lines joined).
struct Comments {
    by_path: HashMap<Vec<i32>, Vec<String>>,
}

impl Comments {
    fn of(file: &FileDescriptorProto) -> Self {
        let mut by_path = HashMap::new();
        for location in file.source_code_info.iter().flat_map(|info| &info.location) {
            let text = [location.leading_comments(), location.trailing_comments()]
                .into_iter()
                .filter(|text| !text.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n\n");
            let paragraphs = paragraphs(&text);
            if !paragraphs.is_empty() {
                by_path.insert(location.path.clone(), paragraphs);
            }
        }
        Self { by_path }
    }

    fn get(&self, path: &[i32]) -> &[String] {
        self.by_path.get(path).map_or(&[], Vec::as_slice)
    }
}

/// A comment as paragraphs: the lines of each one trimmed and joined by spaces (the protos are
/// hard-wrapped prose), blank lines separating paragraphs.
fn paragraphs(text: &str) -> Vec<String> {
    let mut paragraphs = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" "));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" "));
    }
    paragraphs
}

/// Comment text as Markdown: outside code spans, the characters Markdown would take for markup
/// (`<id>` would vanish as an HTML tag, `*` and a `_` that is not inside a word start emphasis)
/// are escaped; in a table cell `|` too.
fn escape(text: &str, in_table: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for (index, &c) in chars.iter().enumerate() {
        let inside_word = |index: usize| {
            let before = index.checked_sub(1).and_then(|before| chars.get(before));
            before.is_some_and(|c| c.is_alphanumeric())
                && chars.get(index + 1).is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            '`' => in_code = !in_code,
            '|' if in_table => out.push('\\'),
            '\\' | '*' | '<' if !in_code => out.push('\\'),
            '_' if !in_code && !inside_word(index) => out.push('\\'),
            '#' | '>' | '-' | '+' if index == 0 => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
}

fn block(paragraphs: &[String]) -> String {
    paragraphs
        .iter()
        .map(|p| escape(p, false))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn cell(paragraphs: &[String]) -> String {
    paragraphs
        .iter()
        .map(|p| escape(p, true))
        .collect::<Vec<_>>()
        .join("<br><br>")
}

fn scalar_name(kind: Type) -> &'static str {
    match kind {
        Type::Double => "double",
        Type::Float => "float",
        Type::Int64 => "int64",
        Type::Uint64 => "uint64",
        Type::Int32 => "int32",
        Type::Fixed64 => "fixed64",
        Type::Fixed32 => "fixed32",
        Type::Bool => "bool",
        Type::String => "string",
        Type::Group => "group",
        Type::Message => "message",
        Type::Bytes => "bytes",
        Type::Uint32 => "uint32",
        Type::Enum => "enum",
        Type::Sfixed32 => "sfixed32",
        Type::Sfixed64 => "sfixed64",
        Type::Sint32 => "sint32",
        Type::Sint64 => "sint64",
    }
}

/// Every message and enum of the set by full name (`.lab.orders.v1.Order`), for links and maps.
struct Types<'a> {
    /// Full names of the `lab.*` messages and enums: they have an anchor.
    documented: HashSet<String>,
    /// Map entry messages: their key and value fields.
    map_entries: HashMap<String, (&'a FieldDescriptorProto, &'a FieldDescriptorProto)>,
}

impl<'a> Types<'a> {
    fn of(set: &'a FileDescriptorSet) -> Self {
        let mut types = Types {
            documented: HashSet::new(),
            map_entries: HashMap::new(),
        };
        for file in &set.file {
            let lab = file.package().starts_with("lab.");
            let scope = format!(".{}", file.package());
            for message in &file.message_type {
                types.add_message(&scope, message, lab);
            }
            for enumeration in &file.enum_type {
                if lab {
                    types.documented.insert(format!("{scope}.{}", enumeration.name()));
                }
            }
        }
        types
    }

    fn add_message(&mut self, scope: &str, message: &'a DescriptorProto, lab: bool) {
        let full_name = format!("{scope}.{}", message.name());
        if is_map_entry(message) {
            if let [key, value] = message.field.as_slice() {
                self.map_entries.insert(full_name.clone(), (key, value));
            }
        } else if lab {
            self.documented.insert(full_name.clone());
        }
        for nested in &message.nested_type {
            self.add_message(&full_name, nested, lab);
        }
        for enumeration in &message.enum_type {
            if lab {
                self.documented
                    .insert(format!("{full_name}.{}", enumeration.name()));
            }
        }
    }

    /// A message or enum type: linked to its anchor when it is documented here, its name relative
    /// to `package` when it is declared there.
    fn link(&self, type_name: &str, package: &str) -> String {
        let full = type_name.trim_start_matches('.');
        let shown = full
            .strip_prefix(package)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(full);
        if self.documented.contains(type_name) {
            format!("[`{shown}`](#{})", anchor(type_name))
        } else {
            format!("`{shown}`")
        }
    }

    /// The type of a field as written in the .proto: `string`, a linked message, `map<K, V>`.
    fn field_type(&self, field: &FieldDescriptorProto, package: &str) -> String {
        match field.r#type() {
            Type::Message | Type::Enum | Type::Group => {
                if let Some((key, value)) = self.map_entries.get(field.type_name()) {
                    format!(
                        "map\\<{}, {}\\>",
                        self.field_type(key, package),
                        self.field_type(value, package)
                    )
                } else {
                    self.link(field.type_name(), package)
                }
            }
            scalar => format!("`{}`", scalar_name(scalar)),
        }
    }
}

fn is_map_entry(message: &DescriptorProto) -> bool {
    message
        .options
        .as_ref()
        .is_some_and(|options| options.map_entry())
}

/// A message or enum to render: its file, its display name (`Outer.Inner`), full name and source
/// code info path.
struct Item<'a, T> {
    file: &'a FileDescriptorProto,
    comments: &'a Comments,
    shown: String,
    full_name: String,
    path: Vec<i32>,
    descriptor: &'a T,
}

/// The messages of a file in declaration order, depth first (a nested message right after its
/// parent; map entries left out), and its enums: the top-level ones, then the nested ones.
fn collect_messages<'a>(
    file: &'a FileDescriptorProto,
    comments: &'a Comments,
    messages: &mut Vec<Item<'a, DescriptorProto>>,
    enums: &mut Vec<Item<'a, EnumDescriptorProto>>,
) {
    fn walk<'a>(
        file: &'a FileDescriptorProto,
        comments: &'a Comments,
        parent: Option<&str>,
        message: &'a DescriptorProto,
        path: Vec<i32>,
        messages: &mut Vec<Item<'a, DescriptorProto>>,
        nested_enums: &mut Vec<Item<'a, EnumDescriptorProto>>,
    ) {
        if is_map_entry(message) {
            return;
        }
        let shown = match parent {
            Some(parent) => format!("{parent}.{}", message.name()),
            None => message.name().to_string(),
        };
        let full_name = format!(".{}.{shown}", file.package());
        for (index, enumeration) in message.enum_type.iter().enumerate() {
            nested_enums.push(Item {
                file,
                comments,
                shown: format!("{shown}.{}", enumeration.name()),
                full_name: format!("{full_name}.{}", enumeration.name()),
                path: child(&path, MESSAGE_ENUM, index),
                descriptor: enumeration,
            });
        }
        let nested_path = path.clone();
        messages.push(Item {
            file,
            comments,
            shown: shown.clone(),
            full_name,
            path,
            descriptor: message,
        });
        for (index, nested) in message.nested_type.iter().enumerate() {
            let path = child(&nested_path, MESSAGE_NESTED, index);
            walk(file, comments, Some(&shown), nested, path, messages, nested_enums);
        }
    }

    // Top-level enums first, then the enums nested in messages (`Outer.Kind`), in declaration order.
    for (index, enumeration) in file.enum_type.iter().enumerate() {
        enums.push(Item {
            file,
            comments,
            shown: enumeration.name().to_string(),
            full_name: format!(".{}.{}", file.package(), enumeration.name()),
            path: vec![
                FILE_ENUM,
                i32::try_from(index).expect("descriptor index fits an i32"),
            ],
            descriptor: enumeration,
        });
    }
    let mut nested_enums = Vec::new();
    for (index, message) in file.message_type.iter().enumerate() {
        let path = vec![
            FILE_MESSAGE,
            i32::try_from(index).expect("descriptor index fits an i32"),
        ];
        walk(file, comments, None, message, path, messages, &mut nested_enums);
    }
    enums.extend(nested_enums);
}

/// The packages in order of their first file, each with its files in name order.
fn packages<'a>(files: &[&'a FileDescriptorProto]) -> Vec<(String, Vec<&'a FileDescriptorProto>)> {
    let mut packages: Vec<(String, Vec<&FileDescriptorProto>)> = Vec::new();
    for file in files {
        match packages.iter_mut().find(|(name, _)| name == file.package()) {
            Some((_, files)) => files.push(file),
            None => packages.push((file.package().to_string(), vec![file])),
        }
    }
    packages
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Renders `docs/grpc-reference.md` from a descriptor set.
fn render(set: &FileDescriptorSet) -> String {
    let types = Types::of(set);
    let files = lab_files(set);
    let comments: HashMap<&str, Comments> = files
        .iter()
        .map(|file| (file.name(), Comments::of(file)))
        .collect();
    let packages = packages(&files);

    let mut out = String::new();
    out.push_str(
        "<!-- Generated from proto/lab/**/*.proto by proto/tests/reference_docs.rs. Do not edit. -->\n\n",
    );
    out.push_str("# Internal gRPC reference\n\n");
    out.push_str(
        "Every service, rpc, message and enum of the internal `lab.*` packages, rendered from the \
         comments of the\n`.proto` files under `proto/lab/` (the contract: `proto/README.md`). \
         This file is generated: do not edit\nit. After changing a `.proto` file, regenerate it \
         with\n\n",
    );
    let _ = writeln!(out, "    {REGENERATE}\n");
    out.push_str(
        "and commit it; `cargo test -p proto` fails while it and the protos disagree. Types from \
         another package\nare shown with their package; `google.protobuf.*` types are not \
         described here.\n\n",
    );

    // Contents.
    out.push_str("## Contents\n\n");
    for (package, files) in &packages {
        let _ = writeln!(out, "- [`{package}`](#{})", anchor(package));
        let mut messages = Vec::new();
        let mut enums = Vec::new();
        for file in files {
            for service in &file.service {
                let full_name = format!("{package}.{}", service.name());
                let _ = writeln!(
                    out,
                    "  - [`{}`](#{}) ({})",
                    service.name(),
                    anchor(&full_name),
                    plural(service.method.len(), "rpc", "rpcs")
                );
            }
            collect_messages(file, &comments[file.name()], &mut messages, &mut enums);
        }
        if !messages.is_empty() {
            let _ = writeln!(
                out,
                "  - [Messages](#{}-messages) ({})",
                anchor(package),
                messages.len()
            );
        }
        if !enums.is_empty() {
            let _ = writeln!(out, "  - [Enums](#{}-enums) ({})", anchor(package), enums.len());
        }
    }
    out.push('\n');

    for (package, files) in &packages {
        render_package(&mut out, &types, package, files, &comments);
    }
    out
}

fn render_package(
    out: &mut String,
    types: &Types<'_>,
    package: &str,
    files: &[&FileDescriptorProto],
    comments: &HashMap<&str, Comments>,
) {
    let _ = writeln!(out, "## {}`{package}`\n", anchor_tag(package));
    for file in files {
        let about = block(comments[file.name()].get(&[FILE_PACKAGE]));
        if about.is_empty() {
            let _ = writeln!(out, "- `{}`", file.name());
        } else {
            let _ = writeln!(out, "- `{}`: {about}", file.name());
        }
    }
    out.push('\n');

    // Services and their rpcs.
    for file in files {
        let comments = &comments[file.name()];
        for (index, service) in file.service.iter().enumerate() {
            let path = vec![
                FILE_SERVICE,
                i32::try_from(index).expect("descriptor index fits an i32"),
            ];
            let full_name = format!("{package}.{}", service.name());
            let _ = writeln!(out, "### {}`{}`\n", anchor_tag(&full_name), service.name());
            push_paragraphs(out, comments.get(&path));
            let _ = writeln!(out, "Defined in `{}`.\n", file.name());
            for (index, method) in service.method.iter().enumerate() {
                let method_path = child(&path, SERVICE_METHOD, index);
                let method_name = format!("{full_name}.{}", method.name());
                let _ = writeln!(out, "#### {}`{}`\n", anchor_tag(&method_name), method.name());
                let stream = |streaming: bool| if streaming { "stream " } else { "" };
                let _ = writeln!(
                    out,
                    "{}{} → {}{}\n",
                    stream(method.client_streaming()),
                    types.link(method.input_type(), package),
                    stream(method.server_streaming()),
                    types.link(method.output_type(), package),
                );
                push_paragraphs(out, comments.get(&method_path));
            }
        }
    }

    let mut messages = Vec::new();
    let mut enums = Vec::new();
    for file in files {
        collect_messages(file, &comments[file.name()], &mut messages, &mut enums);
    }
    if !messages.is_empty() {
        let _ = writeln!(
            out,
            "### {}Messages\n",
            anchor_tag(&format!("{package}.messages"))
        );
        for message in &messages {
            render_message(out, types, package, message);
        }
    }
    if !enums.is_empty() {
        let _ = writeln!(out, "### {}Enums\n", anchor_tag(&format!("{package}.enums")));
        for enumeration in &enums {
            render_enum(out, enumeration);
        }
    }
}

fn push_paragraphs(out: &mut String, paragraphs: &[String]) {
    if !paragraphs.is_empty() {
        out.push_str(&block(paragraphs));
        out.push_str("\n\n");
    }
}

fn render_message(out: &mut String, types: &Types<'_>, package: &str, item: &Item<'_, DescriptorProto>) {
    let message = item.descriptor;
    let _ = writeln!(out, "#### {}`{}`\n", anchor_tag(&item.full_name), item.shown);
    push_paragraphs(out, item.comments.get(&item.path));
    let _ = writeln!(out, "Defined in `{}`.\n", item.file.name());
    if message.field.is_empty() {
        out.push_str("No fields.\n\n");
    } else {
        out.push_str("| Field | Number | Type | Description |\n|---|---|---|---|\n");
        for (index, field) in message.field.iter().enumerate() {
            let mut kind = types.field_type(field, package);
            let is_map = types.map_entries.contains_key(field.type_name());
            if field.proto3_optional() {
                kind = format!("optional {kind}");
            } else if field.label() == Label::Repeated && !is_map {
                kind = format!("repeated {kind}");
            } else if field.label() == Label::Required {
                kind = format!("required {kind}");
            }
            if let Some(oneof) = field.oneof_index.filter(|_| !field.proto3_optional()) {
                let oneof = usize::try_from(oneof).expect("oneof index is not negative");
                let _ = write!(kind, " (oneof `{}`)", message.oneof_decl[oneof].name());
            }
            let mut description = cell(item.comments.get(&child(&item.path, MESSAGE_FIELD, index)));
            if field.options.as_ref().is_some_and(|options| options.deprecated()) {
                description = format!("**Deprecated.** {description}");
            }
            let _ = writeln!(
                out,
                "| `{}` | {} | {kind} | {} |",
                field.name(),
                field.number(),
                description.trim_end()
            );
        }
        out.push('\n');
    }
    // The comments of the real oneofs (a proto3 `optional` field has a synthetic one).
    for (index, oneof) in message.oneof_decl.iter().enumerate() {
        let synthetic = message.field.iter().all(|field| {
            field.oneof_index != Some(i32::try_from(index).expect("oneof index fits an i32"))
                || field.proto3_optional()
        });
        let about = block(item.comments.get(&child(&item.path, MESSAGE_ONEOF, index)));
        if !synthetic && !about.is_empty() {
            let _ = writeln!(out, "Oneof `{}`: {about}\n", oneof.name());
        }
    }
    let mut reserved: Vec<String> = message
        .reserved_range
        .iter()
        // Reserved ranges are end-exclusive.
        .map(|range| match (range.start(), range.end() - 1) {
            (start, end) if start == end => start.to_string(),
            (start, end) => format!("{start}–{end}"),
        })
        .collect();
    reserved.extend(message.reserved_name.iter().map(|name| format!("`{name}`")));
    if !reserved.is_empty() {
        let _ = writeln!(out, "Reserved: {}.\n", reserved.join(", "));
    }
}

fn render_enum(out: &mut String, item: &Item<'_, EnumDescriptorProto>) {
    let _ = writeln!(out, "#### {}`{}`\n", anchor_tag(&item.full_name), item.shown);
    push_paragraphs(out, item.comments.get(&item.path));
    let _ = writeln!(out, "Defined in `{}`.\n", item.file.name());
    out.push_str("| Value | Number | Description |\n|---|---|---|\n");
    for (index, value) in item.descriptor.value.iter().enumerate() {
        let description = cell(item.comments.get(&child(&item.path, ENUM_VALUE, index)));
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            value.name(),
            value.number(),
            description.trim_end()
        );
    }
    out.push('\n');
}

fn reference_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/grpc-reference.md")
}

#[test]
fn reference_docs_match_the_protos() {
    let generated = render(&descriptor_set());
    let path = reference_path();
    if std::env::var("LAB_UPDATE_DOCS").is_ok_and(|value| value == "1") {
        std::fs::write(&path, &generated).expect("write docs/grpc-reference.md");
        return;
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .replace("\r\n", "\n");
    if committed != generated {
        let first_difference = committed
            .lines()
            .zip(generated.lines())
            .position(|(committed, generated)| committed != generated)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "docs/grpc-reference.md does not match the .proto files (first difference at line {}: \
             committed {:?}, generated {:?}). Regenerate it with `{REGENERATE}` and commit it.",
            first_difference + 1,
            committed.lines().nth(first_difference).unwrap_or("<end of file>"),
            generated.lines().nth(first_difference).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn every_rpc_and_message_of_the_lab_packages_is_in_the_reference() {
    let set = descriptor_set();
    let rendered = render(&set);

    let mut anchors = Vec::new();
    let mut rest = rendered.as_str();
    while let Some(start) = rest.find("<a id=\"") {
        let after = &rest[start + "<a id=\"".len()..];
        let end = after.find('"').expect("an anchor's id ends with a quote");
        anchors.push(&after[..end]);
        rest = &after[end..];
    }
    let unique: HashSet<&str> = anchors.iter().copied().collect();
    assert_eq!(
        unique.len(),
        anchors.len(),
        "two items share an anchor: {anchors:?}"
    );

    // The full names from the descriptors themselves, independently of the renderer's walk.
    fn message_names(scope: &str, message: &DescriptorProto, names: &mut Vec<String>) {
        let full_name = format!("{scope}.{}", message.name());
        for nested in &message.nested_type {
            message_names(&full_name, nested, names);
        }
        for enumeration in &message.enum_type {
            names.push(format!("{full_name}.{}", enumeration.name()));
        }
        // A map field's entry is synthetic: the field shows it as `map<K, V>`.
        if !is_map_entry(message) {
            names.push(full_name);
        }
    }
    let mut names = Vec::new();
    for file in set.file.iter().filter(|file| file.package().starts_with("lab.")) {
        names.push(file.package().to_string());
        for service in &file.service {
            let service_name = format!("{}.{}", file.package(), service.name());
            for method in &service.method {
                names.push(format!("{service_name}.{}", method.name()));
            }
            names.push(service_name);
        }
        for message in &file.message_type {
            message_names(file.package(), message, &mut names);
        }
        for enumeration in &file.enum_type {
            names.push(format!("{}.{}", file.package(), enumeration.name()));
        }
    }
    assert!(
        names.len() > 100,
        "the lab packages declare more than {} items",
        names.len()
    );
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !unique.contains(anchor(name).as_str()))
        .collect();
    assert!(missing.is_empty(), "not in the reference: {missing:?}");
    // And nothing else: every anchor is one of these items or a package's messages/enums heading.
    let expected: HashSet<String> = names.iter().map(|name| anchor(name)).collect();
    let unexpected: Vec<&&str> = anchors
        .iter()
        .filter(|id| !expected.contains(**id) && !id.ends_with("-messages") && !id.ends_with("-enums"))
        .collect();
    assert!(unexpected.is_empty(), "anchors of no item: {unexpected:?}");
}

#[test]
fn every_rpc_has_a_comment() {
    // proto/README.md: "every rpc and every field with meaning has a comment".
    let set = descriptor_set();
    let mut uncommented = Vec::new();
    for file in lab_files(&set) {
        for (index, service) in file.service.iter().enumerate() {
            let path = vec![
                FILE_SERVICE,
                i32::try_from(index).expect("descriptor index fits an i32"),
            ];
            for (index, method) in service.method.iter().enumerate() {
                let leading = file
                    .source_code_info
                    .iter()
                    .flat_map(|info| &info.location)
                    .find(|location| location.path == child(&path, SERVICE_METHOD, index))
                    .map(|location| location.leading_comments().trim());
                if leading.is_none_or(str::is_empty) {
                    uncommented.push(format!(
                        "{}.{}.{} ({})",
                        file.package(),
                        service.name(),
                        method.name(),
                        file.name()
                    ));
                }
            }
        }
    }
    assert!(
        uncommented.is_empty(),
        "rpcs without a leading comment: {uncommented:?}"
    );
}

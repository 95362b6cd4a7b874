//! Compiles every `.proto` under `lab/` in process with protox (no system `protoc`).
//!
//! Messages declared in an `events.proto` file are the `data` payloads that customers receive in
//! webhooks, so they also derive `serde::Serialize` with the proto field names (the spec's
//! snake_case names). They use only scalar, string and shared-enum fields (`lab.common.v1`, shown by
//! name: `crate::enums::serialize_name`), except the few fields that only the mesh reads and the
//! `legacy_*` text twins of enum fields, which serde skips.
//!
//! The compiled descriptors are also written to `OUT_DIR` for `proto::FILE_DESCRIPTOR_SET`.

use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let mut files = Vec::new();
    collect_protos(&root.join("lab"), &mut files)?;
    files.sort();
    // The directory too, so that a new .proto file triggers a rebuild.
    println!("cargo:rerun-if-changed={}", root.join("lab").display());
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let descriptors = protox::compile(&files, [&root])?;
    // The encoded descriptors, for `proto::FILE_DESCRIPTOR_SET` (platform::input walks incoming
    // messages with them).
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("file_descriptor_set.bin"),
        protox::prost::Message::encode_to_vec(&descriptors),
    )?;

    let mut builder = tonic_prost_build::configure()
        .build_server(true)
        .build_client(true);
    // Fields of event payloads that only the mesh reads (not part of the webhook `data`).
    let mesh_only = [
        ".lab.shipping.v1.ShipmentLabelCreated.label",
        ".lab.shipping.v1.ShipmentLabelCreated.status",
    ];
    for file in &descriptors.file {
        if !file.name().ends_with("events.proto") {
            continue;
        }
        for message in &file.message_type {
            let path = format!(".{}.{}", file.package(), message.name());
            builder = builder.message_attribute(&path, "#[derive(serde::Serialize)]");
            for field in &message.field {
                let field_path = format!("{path}.{}", field.name());
                if field.name().starts_with("legacy_") || mesh_only.contains(&field_path.as_str()) {
                    // Mesh-only, or the text twin of an enum field kept for one release.
                    builder = builder.field_attribute(field_path, "#[serde(skip)]");
                } else if field.name() == "sandbox" {
                    // `sandbox: true` on a sandbox customer's order, absent on a live one (as in
                    // the REST order document, docs/sandbox.md).
                    builder = builder.field_attribute(
                        field_path,
                        "#[serde(skip_serializing_if = \"std::ops::Not::not\")]",
                    );
                } else if field.type_name().starts_with(".lab.common.v1.") {
                    // An enum field: its name in the webhook `data` (`paid`), not its number.
                    let rust_type = field.type_name().trim_start_matches(".lab.common.v1.");
                    builder = builder.field_attribute(
                        field_path,
                        format!("#[serde(serialize_with = \"crate::enums::serialize_name::<crate::common::{rust_type}, _>\")]"),
                    );
                }
            }
        }
    }
    // The shared enums travel as their snake_case names in SQL and JSON (`crate::enums`).
    builder = builder.enum_attribute(
        ".lab.common.v1",
        "#[derive(serde::Serialize, serde::Deserialize)] #[serde(rename_all = \"snake_case\")]",
    );
    // The label is large next to the other event payloads: boxed, it keeps `Data` small.
    builder = builder.boxed(".lab.shipping.v1.ShipmentLabelCreated.label");
    // An import stream's header next to its many byte chunks: boxed, the chunk stays small.
    builder = builder.boxed(".lab.results.v1.ImportChunk.part.header");
    builder.compile_fds(descriptors)?;
    Ok(())
}

fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

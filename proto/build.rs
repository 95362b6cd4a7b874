//! Compiles every `.proto` under `lab/` in process with protox (no system `protoc`).
//!
//! Messages declared in an `events.proto` file are the `data` payloads that customers receive in
//! webhooks, so they also derive `serde::Serialize` with the proto field names (the spec's
//! snake_case names). They deliberately use only scalar and string fields, except the few fields
//! that only the mesh reads, which serde skips (listed below).
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
    for file in &descriptors.file {
        if !file.name().ends_with("events.proto") {
            continue;
        }
        for message in &file.message_type {
            let path = format!(".{}.{}", file.package(), message.name());
            builder = builder.message_attribute(path, "#[derive(serde::Serialize)]");
        }
    }
    // The shared enums travel as their snake_case names in SQL and JSON (`crate::common`).
    for shared in [".lab.common.v1.PaymentMethod", ".lab.common.v1.InvoiceStatus"] {
        builder = builder.enum_attribute(
            shared,
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(rename_all = \"snake_case\")]",
        );
    }
    // Fields of event payloads that only the mesh reads (not part of the webhook `data`).
    for field in [
        ".lab.shipping.v1.ShipmentLabelCreated.label",
        ".lab.shipping.v1.ShipmentLabelCreated.status",
    ] {
        builder = builder.field_attribute(field, "#[serde(skip)]");
    }
    // The label is large next to the other event payloads: boxed, it keeps `Data` small.
    builder = builder.boxed(".lab.shipping.v1.ShipmentLabelCreated.label");
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

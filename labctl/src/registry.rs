//! `labctl instruments` and `labctl methods`: the lab-wide instrument and method registries of
//! results-svc (docs/registries.md). Any operator lists and shows; QA (`lab.qa`) upserts,
//! records calibrations and sets an instrument's status. Records are given as JSON
//! (`--definition '{…}'` or `--definition @file.json`) with the camelCase names the reads print.

use crate::Connection;
use crate::client::{request, staff_token, status_error, timestamp};
use anyhow::Context;
use clap::Subcommand;
use platform::mesh;
use platform::principal::roles;
use proto::results as pb;
use proto::results::registry_service_client::RegistryServiceClient;
use serde_json::{Value, json};
use tonic::transport::Channel;

#[derive(Debug, Subcommand)]
pub enum InstrumentsCommand {
    /// Lists instruments in id order (any operator).
    List {
        /// Only this kind, for example hplc-uv or icp-ms.
        #[arg(long)]
        kind: Option<String>,
        /// Only this status: in_service, out_of_service or retired.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        limit: Option<i32>,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Shows one instrument with its equipment (any operator).
    Show { id: String },
    /// Creates or updates an instrument and replaces its equipment list (needs lab.qa).
    Upsert {
        /// JSON object: id, name, kind, manufacturer, model, serialNumber, location, equipment
        /// (array of id, kind, description, serialNumber); or @path of a file holding it.
        #[arg(long)]
        definition: String,
    },
    /// Records a calibration (needs lab.qa).
    Calibrate {
        id: String,
        /// When it was calibrated (RFC 3339; default now).
        #[arg(long)]
        calibrated_at: Option<String>,
        /// When it is due again (RFC 3339).
        #[arg(long)]
        due_at: String,
        /// Outcome: calibrated (default), due or overdue.
        #[arg(long)]
        status: Option<String>,
        /// Certificate or record number.
        #[arg(long)]
        certificate: Option<String>,
    },
    /// Puts an instrument in service, out of service or retires it (needs lab.qa).
    Status {
        id: String,
        /// in_service, out_of_service or retired.
        #[arg(long)]
        status: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MethodsCommand {
    /// Lists methods in id order, withdrawn ones included (any operator).
    List {
        #[arg(long)]
        technique: Option<String>,
        /// Catalog matrix id, for example softgel.
        #[arg(long)]
        matrix: Option<String>,
        /// Part of an analyte name, case-insensitive.
        #[arg(long)]
        analyte: Option<String>,
        /// validated, in_validation or withdrawn.
        #[arg(long)]
        validation_status: Option<String>,
        #[arg(long)]
        limit: Option<i32>,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Shows one method with its analytes (any operator).
    Show { id: String },
    /// Creates or updates a method (needs lab.qa); its version goes up when its analytes or
    /// matrices change.
    Upsert {
        /// JSON object: id, name, technique, instrumentKinds, matrices, testIds, analytes (array
        /// of name, unit, loq, lod), validationStatus, validatedAt, reference, description; or
        /// @path of a file holding it.
        #[arg(long)]
        definition: String,
    },
}

async fn client(
    connection: &Connection,
    role: &str,
) -> anyhow::Result<(RegistryServiceClient<Channel>, String)> {
    let token = staff_token(connection, mesh::RESULTS_SVC, role).await?;
    let client = connection
        .channel(&connection.results_addr)
        .await
        .map(RegistryServiceClient::new)
        .with_context(|| format!("cannot reach results-svc at {}", connection.results_addr))?;
    Ok((client, token))
}

/// A JSON definition given inline or as `@path`.
fn definition(text: &str) -> anyhow::Result<Value> {
    let text = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?,
        None => text.to_owned(),
    };
    let value: Value = serde_json::from_str(&text).context("--definition must be a JSON object")?;
    anyhow::ensure!(value.is_object(), "--definition must be a JSON object");
    Ok(value)
}

fn text(value: &Value, name: &str) -> Option<String> {
    value[name].as_str().map(str::to_owned)
}

fn texts(value: &Value, name: &str) -> Vec<String> {
    value[name]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn time(text: Option<&str>, flag: &str) -> anyhow::Result<Option<prost_types::Timestamp>> {
    text.map(|text| {
        chrono::DateTime::parse_from_rfc3339(text)
            .map(|time| platform::time::to_timestamp(time.to_utc()))
            .with_context(|| format!("{flag} must be RFC 3339, for example 2027-05-01T00:00:00Z"))
    })
    .transpose()
}

fn instrument_json(instrument: &pb::Instrument, created: Option<bool>) -> Value {
    let equipment: Vec<Value> = instrument
        .equipment
        .iter()
        .map(|item| {
            json!({
                "id": item.id, "kind": item.kind, "description": item.description,
                "serialNumber": item.serial_number,
            })
        })
        .collect();
    let mut value = json!({
        "id": instrument.id, "name": instrument.name, "kind": instrument.kind,
        "manufacturer": instrument.manufacturer, "model": instrument.model,
        "serialNumber": instrument.serial_number, "location": instrument.location,
        "status": instrument.status, "statusReason": instrument.status_reason,
        "calibrationStatus": instrument.calibration_status,
        "lastCalibratedAt": timestamp(instrument.last_calibrated_at.as_ref()),
        "calibrationDueAt": timestamp(instrument.calibration_due_at.as_ref()),
        "calibrationCertificate": instrument.calibration_certificate,
        "equipment": equipment,
        "updatedAt": timestamp(instrument.updated_at.as_ref()),
    });
    if let Some(created) = created {
        value["created"] = json!(created);
    }
    value
}

fn method_json(method: &pb::Method, created: Option<bool>) -> Value {
    let analytes: Vec<Value> = method
        .analytes
        .iter()
        .map(|analyte| json!({ "name": analyte.name, "unit": analyte.unit, "loq": analyte.loq, "lod": analyte.lod }))
        .collect();
    let mut value = json!({
        "id": method.id, "name": method.name, "version": method.version, "technique": method.technique,
        "instrumentKinds": method.instrument_kinds, "matrices": method.matrices, "testIds": method.test_ids,
        "analytes": analytes, "validationStatus": method.validation_status,
        "validatedAt": timestamp(method.validated_at.as_ref()), "reference": method.reference,
        "description": method.description, "updatedAt": timestamp(method.updated_at.as_ref()),
    });
    if let Some(created) = created {
        value["created"] = json!(created);
    }
    value
}

fn answer_instrument(response: pb::InstrumentResponse, created: Option<bool>) -> Value {
    instrument_json(&response.instrument.unwrap_or_default(), created)
}

/// Runs one `labctl instruments` command with a token carrying the role it needs.
pub async fn instruments(connection: &Connection, command: InstrumentsCommand) -> anyhow::Result<Value> {
    let role = match command {
        InstrumentsCommand::List { .. } | InstrumentsCommand::Show { .. } => "",
        _ => roles::LAB_QA,
    };
    let (mut client, token) = client(connection, role).await?;
    match command {
        InstrumentsCommand::List {
            kind,
            status,
            limit,
            cursor,
        } => {
            let message = pb::ListInstrumentsRequest {
                kind,
                status,
                limit,
                cursor,
            };
            let page = client
                .list_instruments(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            let data: Vec<Value> = page
                .instruments
                .iter()
                .map(|i| instrument_json(i, None))
                .collect();
            Ok(json!({ "data": data, "nextCursor": page.next_cursor }))
        }
        InstrumentsCommand::Show { id } => {
            let response = client
                .get_instrument(request(pb::GetInstrumentRequest { id }, &token))
                .await
                .map_err(status_error)?;
            Ok(answer_instrument(response.into_inner(), None))
        }
        InstrumentsCommand::Upsert { definition: text } => {
            let value = definition(&text)?;
            let equipment = value["equipment"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|item| pb::Equipment {
                            id: text_or_empty(item, "id"),
                            kind: text_or_empty(item, "kind"),
                            description: text_or_empty(item, "description"),
                            serial_number: self::text(item, "serialNumber"),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let message = pb::UpsertInstrumentRequest {
                id: text_or_empty(&value, "id"),
                name: text_or_empty(&value, "name"),
                kind: text_or_empty(&value, "kind"),
                manufacturer: text_or_empty(&value, "manufacturer"),
                model: text_or_empty(&value, "model"),
                serial_number: self::text(&value, "serialNumber"),
                location: text_or_empty(&value, "location"),
                equipment,
            };
            let response = client
                .upsert_instrument(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            let created = response.created;
            Ok(answer_instrument(response, Some(created)))
        }
        InstrumentsCommand::Calibrate {
            id,
            calibrated_at,
            due_at,
            status,
            certificate,
        } => {
            let message = pb::RecordCalibrationRequest {
                id,
                calibrated_at: time(calibrated_at.as_deref(), "--calibrated-at")?,
                due_at: time(Some(&due_at), "--due-at")?,
                status,
                certificate,
            };
            let response = client
                .record_calibration(request(message, &token))
                .await
                .map_err(status_error)?;
            Ok(answer_instrument(response.into_inner(), None))
        }
        InstrumentsCommand::Status { id, status, reason } => {
            let message = pb::SetInstrumentStatusRequest { id, status, reason };
            let response = client
                .set_instrument_status(request(message, &token))
                .await
                .map_err(status_error)?;
            Ok(answer_instrument(response.into_inner(), None))
        }
    }
}

fn text_or_empty(value: &Value, name: &str) -> String {
    text(value, name).unwrap_or_default()
}

/// Runs one `labctl methods` command with a token carrying the role it needs.
pub async fn methods(connection: &Connection, command: MethodsCommand) -> anyhow::Result<Value> {
    let role = match command {
        MethodsCommand::Upsert { .. } => roles::LAB_QA,
        _ => "",
    };
    let (mut client, token) = client(connection, role).await?;
    match command {
        MethodsCommand::List {
            technique,
            matrix,
            analyte,
            validation_status,
            limit,
            cursor,
        } => {
            let message = pb::ListMethodsRequest {
                technique,
                matrix,
                analyte,
                validation_status,
                limit,
                cursor,
            };
            let page = client
                .list_methods(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            let data: Vec<Value> = page.methods.iter().map(|m| method_json(m, None)).collect();
            Ok(json!({ "data": data, "nextCursor": page.next_cursor }))
        }
        MethodsCommand::Show { id } => {
            let response = client
                .get_method(request(pb::GetMethodRequest { id }, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(method_json(&response.method.unwrap_or_default(), None))
        }
        MethodsCommand::Upsert { definition: text } => {
            let value = definition(&text)?;
            let analytes = value["analytes"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|item| pb::MethodAnalyte {
                            name: text_or_empty(item, "name"),
                            unit: text_or_empty(item, "unit"),
                            loq: self::text(item, "loq"),
                            lod: self::text(item, "lod"),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let message = pb::UpsertMethodRequest {
                id: text_or_empty(&value, "id"),
                name: text_or_empty(&value, "name"),
                technique: text_or_empty(&value, "technique"),
                instrument_kinds: texts(&value, "instrumentKinds"),
                matrices: texts(&value, "matrices"),
                test_ids: texts(&value, "testIds"),
                analytes,
                validation_status: text_or_empty(&value, "validationStatus"),
                validated_at: time(value["validatedAt"].as_str(), "validatedAt")?,
                reference: text_or_empty(&value, "reference"),
                description: self::text(&value, "description"),
            };
            let response = client
                .upsert_method(request(message, &token))
                .await
                .map_err(status_error)?
                .into_inner();
            Ok(method_json(
                &response.method.unwrap_or_default(),
                Some(response.created),
            ))
        }
    }
}

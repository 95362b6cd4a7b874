//! SQL of the registries (`results.instruments`, `results.instrument_equipment`,
//! `results.methods`, `results.method_analytes`). A record is read in one statement with its
//! equipment or analytes aggregated as JSON; listings are keyset pages in id order.

use super::instrument::{
    Calibration, CalibrationStatus, Equipment, Instrument, InstrumentDraft, InstrumentFilter,
    InstrumentStatus,
};
use super::method::{Method, MethodAnalyte, MethodDraft, MethodFilter, ValidationStatus};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::PgConnection;
use sqlx::types::Json;

/// `SELECT` of an instrument with its equipment, up to the `WHERE` tail.
macro_rules! select_instruments {
    ($tail:literal) => {
        concat!(
            "SELECT i.id, i.name, i.kind, i.manufacturer, i.model, i.serial_number, i.location, i.status, \
               i.status_reason, i.calibration_status, i.last_calibrated_at, i.calibration_due_at, \
               i.calibration_certificate, i.created_at, i.updated_at, \
               (SELECT json_agg(e ORDER BY e.position) FROM ( \
                  SELECT id, kind, description, serial_number, position \
                  FROM results.instrument_equipment WHERE instrument_id = i.id) e) AS equipment \
             FROM results.instruments i ",
            $tail
        )
    };
}

/// `SELECT` of a method with its analytes, up to the `WHERE` tail.
macro_rules! select_methods {
    ($tail:literal) => {
        concat!(
            "SELECT m.id, m.name, m.version, m.technique, m.instrument_kinds, m.matrices, m.test_ids, \
               m.validation_status, m.validated_at, m.reference, m.description, m.created_at, m.updated_at, \
               (SELECT json_agg(a ORDER BY a.position) FROM ( \
                  SELECT name, unit, loq, lod, position \
                  FROM results.method_analytes WHERE method_id = m.id) a) AS analytes \
             FROM results.methods m ",
            $tail
        )
    };
}

/// One page of instruments in id order (`filter.limit` rows after `filter.after`).
pub async fn list_instruments(
    conn: &mut PgConnection,
    filter: &InstrumentFilter,
) -> Result<Vec<Instrument>, sqlx::Error> {
    let rows: Vec<InstrumentRow> = sqlx::query_as(select_instruments!(
        "WHERE ($1::text IS NULL OR i.kind = $1) AND ($2::text IS NULL OR i.status = $2) \
           AND ($3::text IS NULL OR i.id > $3) \
         ORDER BY i.id LIMIT $4"
    ))
    .bind(&filter.kind)
    .bind(filter.status.map(InstrumentStatus::as_str))
    .bind(&filter.after)
    .bind(filter.limit)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(InstrumentRow::into_instrument).collect()
}

/// One instrument by id.
pub async fn find_instrument(conn: &mut PgConnection, id: &str) -> Result<Option<Instrument>, sqlx::Error> {
    let row: Option<InstrumentRow> = sqlx::query_as(select_instruments!("WHERE i.id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(InstrumentRow::into_instrument).transpose()
}

/// Creates or updates an instrument's description and replaces its equipment list (an
/// equipment id linked elsewhere moves here); true when it was created.
pub async fn upsert_instrument(
    conn: &mut PgConnection,
    draft: &InstrumentDraft,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let created: bool = sqlx::query_scalar(
        "INSERT INTO results.instruments (id, name, kind, manufacturer, model, serial_number, location, \
           created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) \
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind, \
           manufacturer = EXCLUDED.manufacturer, model = EXCLUDED.model, serial_number = EXCLUDED.serial_number, \
           location = EXCLUDED.location, updated_at = EXCLUDED.updated_at \
         RETURNING (xmax = 0)",
    )
    .bind(&draft.id)
    .bind(&draft.name)
    .bind(&draft.kind)
    .bind(&draft.manufacturer)
    .bind(&draft.model)
    .bind(&draft.serial_number)
    .bind(&draft.location)
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    let kept: Vec<String> = draft.equipment.iter().map(|item| item.id.clone()).collect();
    sqlx::query("DELETE FROM results.instrument_equipment WHERE instrument_id = $1 AND NOT (id = ANY($2))")
        .bind(&draft.id)
        .bind(&kept)
        .execute(&mut *conn)
        .await?;
    for (position, item) in (1..).zip(&draft.equipment) {
        sqlx::query(
            "INSERT INTO results.instrument_equipment (id, instrument_id, position, kind, description, serial_number) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (id) DO UPDATE SET instrument_id = EXCLUDED.instrument_id, position = EXCLUDED.position, \
               kind = EXCLUDED.kind, description = EXCLUDED.description, serial_number = EXCLUDED.serial_number",
        )
        .bind(&item.id)
        .bind(&draft.id)
        .bind(position)
        .bind(&item.kind)
        .bind(&item.description)
        .bind(&item.serial_number)
        .execute(&mut *conn)
        .await?;
    }
    Ok(created)
}

/// Records a calibration of an instrument; false when there is no such instrument.
pub async fn record_calibration(
    conn: &mut PgConnection,
    id: &str,
    calibration: &Calibration,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE results.instruments SET last_calibrated_at = $2, calibration_due_at = $3, calibration_status = $4, \
           calibration_certificate = $5, updated_at = $6 WHERE id = $1",
    )
    .bind(id)
    .bind(calibration.calibrated_at)
    .bind(calibration.due_at)
    .bind(calibration.status.as_str())
    .bind(&calibration.certificate)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets an instrument's status and its reason; false when there is no such instrument.
pub async fn set_instrument_status(
    conn: &mut PgConnection,
    id: &str,
    status: InstrumentStatus,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE results.instruments SET status = $2, status_reason = $3, updated_at = $4 WHERE id = $1",
    )
    .bind(id)
    .bind(status.as_str())
    .bind(reason)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// One page of methods in id order (`filter.limit` rows after `filter.after`). The analyte
/// filter matches any part of an analyte's name, case-insensitively.
pub async fn list_methods(
    conn: &mut PgConnection,
    filter: &MethodFilter,
) -> Result<Vec<Method>, sqlx::Error> {
    let rows: Vec<MethodRow> = sqlx::query_as(select_methods!(
        "WHERE ($1::text IS NULL OR m.technique = $1) AND ($2::text IS NULL OR $2 = ANY (m.matrices)) \
           AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM results.method_analytes x \
                WHERE x.method_id = m.id AND strpos(lower(x.name), lower($3)) > 0)) \
           AND ($4::text IS NULL OR m.validation_status = $4) AND ($5::text IS NULL OR m.id > $5) \
         ORDER BY m.id LIMIT $6"
    ))
    .bind(&filter.technique)
    .bind(&filter.matrix)
    .bind(&filter.analyte)
    .bind(filter.validation_status.map(ValidationStatus::as_str))
    .bind(&filter.after)
    .bind(filter.limit)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(MethodRow::into_method).collect()
}

/// One method by id; `FOR UPDATE` locks it for an upsert.
pub async fn find_method(
    conn: &mut PgConnection,
    id: &str,
    for_update: bool,
) -> Result<Option<Method>, sqlx::Error> {
    let statement = if for_update {
        select_methods!("WHERE m.id = $1 FOR UPDATE")
    } else {
        select_methods!("WHERE m.id = $1")
    };
    let row: Option<MethodRow> = sqlx::query_as(statement).bind(id).fetch_optional(conn).await?;
    row.map(MethodRow::into_method).transpose()
}

/// Stores a method at `version` (inserting it when `created`) and replaces its analytes.
pub async fn save_method(
    conn: &mut PgConnection,
    draft: &MethodDraft,
    version: i32,
    validated_at: Option<DateTime<Utc>>,
    created: bool,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let statement = if created {
        "INSERT INTO results.methods (id, name, version, technique, instrument_kinds, matrices, test_ids, \
           validation_status, validated_at, reference, description, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)"
    } else {
        "UPDATE results.methods SET name = $2, version = $3, technique = $4, instrument_kinds = $5, matrices = $6, \
           test_ids = $7, validation_status = $8, validated_at = $9, reference = $10, description = $11, \
           updated_at = $12 WHERE id = $1"
    };
    sqlx::query(statement)
        .bind(&draft.id)
        .bind(&draft.name)
        .bind(version)
        .bind(&draft.technique)
        .bind(&draft.instrument_kinds)
        .bind(&draft.matrices)
        .bind(&draft.test_ids)
        .bind(draft.validation_status.as_str())
        .bind(validated_at)
        .bind(&draft.reference)
        .bind(&draft.description)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM results.method_analytes WHERE method_id = $1")
        .bind(&draft.id)
        .execute(&mut *conn)
        .await?;
    for (position, analyte) in (1..).zip(&draft.analytes) {
        sqlx::query(
            "INSERT INTO results.method_analytes (method_id, position, name, unit, loq, lod) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&draft.id)
        .bind(position)
        .bind(&analyte.name)
        .bind(&analyte.unit)
        .bind(&analyte.loq)
        .bind(&analyte.lod)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct InstrumentRow {
    id: String,
    name: String,
    kind: String,
    manufacturer: String,
    model: String,
    serial_number: Option<String>,
    location: String,
    status: String,
    status_reason: Option<String>,
    calibration_status: String,
    last_calibrated_at: Option<DateTime<Utc>>,
    calibration_due_at: Option<DateTime<Utc>>,
    calibration_certificate: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    equipment: Option<Json<Vec<EquipmentJson>>>,
}

#[derive(Deserialize)]
struct EquipmentJson {
    id: String,
    kind: String,
    description: String,
    serial_number: Option<String>,
}

fn stored<T>(what: &str, text: &str, parsed: Option<T>) -> Result<T, sqlx::Error> {
    parsed.ok_or_else(|| sqlx::Error::Decode(format!("stored {what} {text:?}").into()))
}

impl InstrumentRow {
    fn into_instrument(self) -> Result<Instrument, sqlx::Error> {
        Ok(Instrument {
            status: stored(
                "instrument status",
                &self.status,
                InstrumentStatus::parse(&self.status),
            )?,
            recorded_calibration: stored(
                "calibration status",
                &self.calibration_status,
                CalibrationStatus::parse(&self.calibration_status),
            )?,
            id: self.id,
            name: self.name,
            kind: self.kind,
            manufacturer: self.manufacturer,
            model: self.model,
            serial_number: self.serial_number,
            location: self.location,
            status_reason: self.status_reason,
            last_calibrated_at: self.last_calibrated_at,
            calibration_due_at: self.calibration_due_at,
            calibration_certificate: self.calibration_certificate,
            equipment: self
                .equipment
                .map(|json| json.0)
                .unwrap_or_default()
                .into_iter()
                .map(|item| Equipment {
                    id: item.id,
                    kind: item.kind,
                    description: item.description,
                    serial_number: item.serial_number,
                })
                .collect(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(sqlx::FromRow)]
struct MethodRow {
    id: String,
    name: String,
    version: i32,
    technique: String,
    instrument_kinds: Vec<String>,
    matrices: Vec<String>,
    test_ids: Vec<String>,
    validation_status: String,
    validated_at: Option<DateTime<Utc>>,
    reference: String,
    description: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    analytes: Option<Json<Vec<AnalyteJson>>>,
}

#[derive(Deserialize)]
struct AnalyteJson {
    name: String,
    unit: String,
    loq: Option<String>,
    lod: Option<String>,
}

impl MethodRow {
    fn into_method(self) -> Result<Method, sqlx::Error> {
        Ok(Method {
            validation_status: stored(
                "validation status",
                &self.validation_status,
                ValidationStatus::parse(&self.validation_status),
            )?,
            id: self.id,
            name: self.name,
            version: self.version,
            technique: self.technique,
            instrument_kinds: self.instrument_kinds,
            matrices: self.matrices,
            test_ids: self.test_ids,
            analytes: self
                .analytes
                .map(|json| json.0)
                .unwrap_or_default()
                .into_iter()
                .map(|analyte| MethodAnalyte {
                    name: analyte.name,
                    unit: analyte.unit,
                    loq: analyte.loq,
                    lod: analyte.lod,
                })
                .collect(),
            validated_at: self.validated_at,
            reference: self.reference,
            description: self.description,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

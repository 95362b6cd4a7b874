//! Registry shapes: the queries of `GET /instruments` and `GET /methods`, the instrument with its
//! linked equipment and calibration state, and the method with its analytes and limits.

use super::common::{list_envelope, optional_time, required_time, rfc3339, rfc3339_opt};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::results as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Query of `GET /instruments`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InstrumentsQuery {
    /// Only instruments of this kind, for example `hplc-uv`, `lc-ms-ms`, `gc-ms-headspace`,
    /// `icp-ms`, `nmr`, `karl-fischer`, `lal-kinetic-reader`, `incubator`.
    pub kind: Option<String>,
    /// Only instruments in this status: `in_service`, `out_of_service` or `retired`.
    pub status: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

impl From<InstrumentsQuery> for pb::ListInstrumentsRequest {
    fn from(query: InstrumentsQuery) -> Self {
        Self {
            kind: query.kind,
            status: query.status,
            limit: query.limit,
            cursor: query.cursor,
        }
    }
}

/// Query of `GET /methods`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MethodsQuery {
    /// Only methods of this technique, for example `hplc-uv`, `icp-ms`, `gc-ms-headspace`.
    pub technique: Option<String>,
    /// Only methods validated for this catalog matrix id, for example `softgel`.
    pub matrix: Option<String>,
    /// Only methods with an analyte whose name contains this text, case-insensitively
    /// (`lead` finds `Lead (Pb)`).
    pub analyte: Option<String>,
    /// Only methods in this validation status: `validated`, `in_validation` or `withdrawn`.
    pub validation_status: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

impl From<MethodsQuery> for pb::ListMethodsRequest {
    fn from(query: MethodsQuery) -> Self {
        Self {
            technique: query.technique,
            matrix: query.matrix,
            analyte: query.analyte,
            validation_status: query.validation_status,
            limit: query.limit,
            cursor: query.cursor,
        }
    }
}

/// A piece of equipment linked to an instrument (autosampler, column, detector, balance, …).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Equipment {
    pub id: String,
    pub kind: String,
    pub description: String,
    pub serial_number: Option<String>,
}

/// An instrument of the lab with its linked equipment and calibration state.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Instrument {
    /// Registry id, for example `hplc-uv-01`.
    pub id: String,
    pub name: String,
    /// Instrument kind (technique), for example `hplc-uv`.
    pub kind: String,
    pub manufacturer: String,
    pub model: String,
    pub serial_number: Option<String>,
    pub location: String,
    /// `in_service`, `out_of_service` or `retired`.
    pub status: String,
    pub status_reason: Option<String>,
    /// `calibrated`, `due` (due within 30 days, or never calibrated) or `overdue` (past its due
    /// date), derived at the time of the answer.
    pub calibration_status: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub last_calibrated_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub calibration_due_at: Option<DateTime<Utc>>,
    pub calibration_certificate: Option<String>,
    pub equipment: Vec<Equipment>,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

/// An analyte a method determines, with its published limits.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MethodAnalyte {
    /// As COAs print it, for example `Lead (Pb)`.
    pub name: String,
    pub unit: String,
    /// Limit of quantitation, a decimal as a string; `null` for qualitative analytes.
    pub loq: Option<String>,
    /// Limit of detection, a decimal as a string; `null` when not published.
    pub lod: Option<String>,
}

/// An analytical method of the lab.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Method {
    /// Registry id, for example `hplc-uv-purity`.
    pub id: String,
    pub name: String,
    /// Goes up by one when the analytes or matrices change.
    pub version: i32,
    pub technique: String,
    /// Instrument kinds the method runs on (`Instrument.kind`).
    pub instrument_kinds: Vec<String>,
    /// Catalog matrix ids the method is validated for.
    pub matrices: Vec<String>,
    /// Catalog test ids the method serves.
    pub test_ids: Vec<String>,
    pub analytes: Vec<MethodAnalyte>,
    /// `validated`, `in_validation` or `withdrawn` (a withdrawn method stays listed).
    pub validation_status: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub validated_at: Option<DateTime<Utc>>,
    /// Compendial or guideline reference, for example `USP <232>/<233>; ICH Q3D(R2)`.
    pub reference: String,
    pub description: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

list_envelope!(InstrumentList, Instrument);
list_envelope!(MethodList, Method);

impl TryFrom<pb::Instrument> for Instrument {
    type Error = ApiError;

    fn try_from(instrument: pb::Instrument) -> Result<Self, ApiError> {
        Ok(Self {
            updated_at: required_time(instrument.updated_at.as_ref(), "instrument update time")?,
            last_calibrated_at: optional_time(instrument.last_calibrated_at.as_ref()),
            calibration_due_at: optional_time(instrument.calibration_due_at.as_ref()),
            id: instrument.id,
            name: instrument.name,
            kind: instrument.kind,
            manufacturer: instrument.manufacturer,
            model: instrument.model,
            serial_number: instrument.serial_number,
            location: instrument.location,
            status: instrument.status,
            status_reason: instrument.status_reason,
            calibration_status: instrument.calibration_status,
            calibration_certificate: instrument.calibration_certificate,
            equipment: instrument
                .equipment
                .into_iter()
                .map(|item| Equipment {
                    id: item.id,
                    kind: item.kind,
                    description: item.description,
                    serial_number: item.serial_number,
                })
                .collect(),
        })
    }
}

impl TryFrom<pb::Method> for Method {
    type Error = ApiError;

    fn try_from(method: pb::Method) -> Result<Self, ApiError> {
        Ok(Self {
            updated_at: required_time(method.updated_at.as_ref(), "method update time")?,
            validated_at: optional_time(method.validated_at.as_ref()),
            id: method.id,
            name: method.name,
            version: method.version,
            technique: method.technique,
            instrument_kinds: method.instrument_kinds,
            matrices: method.matrices,
            test_ids: method.test_ids,
            analytes: method
                .analytes
                .into_iter()
                .map(|analyte| MethodAnalyte {
                    name: analyte.name,
                    unit: analyte.unit,
                    loq: analyte.loq,
                    lod: analyte.lod,
                })
                .collect(),
            validation_status: method.validation_status,
            reference: method.reference,
            description: method.description,
        })
    }
}

//! Conversions between the registry's protobuf messages and its domain: requests to checked
//! drafts and filters (refusals name the field), records to messages with the calibration
//! status derived at the time of the answer.

use super::instrument::{Calibration, Equipment, Instrument, InstrumentDraft, InstrumentFilter};
use super::method::{Method, MethodAnalyte, MethodDraft, MethodFilter, ValidationStatus};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use platform::time::{from_timestamp, to_timestamp, to_timestamp_opt};
use proto::results as pb;

/// A timestamp of a request as converted (`None` absent, `Some(None)` out of range); an
/// invalid one is refused naming `field`.
fn time(field: &str, converted: Option<Option<DateTime<Utc>>>) -> Result<Option<DateTime<Utc>>, ApiError> {
    converted
        .map(|time| time.ok_or_else(|| super::checks::invalid(field, "not a valid time")))
        .transpose()
}

impl TryFrom<pb::UpsertInstrumentRequest> for InstrumentDraft {
    type Error = ApiError;

    fn try_from(message: pb::UpsertInstrumentRequest) -> Result<Self, ApiError> {
        InstrumentDraft {
            id: message.id,
            name: message.name,
            kind: message.kind,
            manufacturer: message.manufacturer,
            model: message.model,
            serial_number: message.serial_number,
            location: message.location,
            equipment: message
                .equipment
                .into_iter()
                .map(|item| Equipment {
                    id: item.id,
                    kind: item.kind,
                    description: item.description,
                    serial_number: item.serial_number,
                })
                .collect(),
        }
        .checked()
    }
}

/// The calibration a request records, checked at `now`.
pub fn calibration(
    message: &pb::RecordCalibrationRequest,
    now: DateTime<Utc>,
) -> Result<Calibration, ApiError> {
    Calibration::check(
        time("calibratedAt", message.calibrated_at.as_ref().map(from_timestamp))?,
        time("dueAt", message.due_at.as_ref().map(from_timestamp))?,
        message.status.as_deref(),
        message.certificate.clone(),
        now,
    )
}

impl TryFrom<&pb::ListInstrumentsRequest> for InstrumentFilter {
    type Error = ApiError;

    fn try_from(message: &pb::ListInstrumentsRequest) -> Result<Self, ApiError> {
        InstrumentFilter::new(message.kind.clone(), message.status.clone())
    }
}

impl TryFrom<&pb::ListMethodsRequest> for MethodFilter {
    type Error = ApiError;

    fn try_from(message: &pb::ListMethodsRequest) -> Result<Self, ApiError> {
        MethodFilter::new(
            message.technique.clone(),
            message.matrix.clone(),
            message.analyte.clone(),
            message.validation_status.clone(),
        )
    }
}

impl TryFrom<pb::UpsertMethodRequest> for MethodDraft {
    type Error = ApiError;

    fn try_from(message: pb::UpsertMethodRequest) -> Result<Self, ApiError> {
        MethodDraft {
            validation_status: ValidationStatus::parse_field("validationStatus", &message.validation_status)?,
            validated_at: time("validatedAt", message.validated_at.as_ref().map(from_timestamp))?,
            id: message.id,
            name: message.name,
            technique: message.technique,
            instrument_kinds: message.instrument_kinds,
            matrices: message.matrices,
            test_ids: message.test_ids,
            analytes: message
                .analytes
                .into_iter()
                .map(|analyte| MethodAnalyte {
                    name: analyte.name,
                    unit: analyte.unit,
                    loq: analyte.loq,
                    lod: analyte.lod,
                })
                .collect(),
            reference: message.reference,
            description: message.description,
        }
        .checked()
    }
}

/// An instrument as read at `now` (its calibration status derived then).
pub fn instrument(instrument: &Instrument, now: DateTime<Utc>) -> pb::Instrument {
    pb::Instrument {
        id: instrument.id.clone(),
        name: instrument.name.clone(),
        kind: instrument.kind.clone(),
        manufacturer: instrument.manufacturer.clone(),
        model: instrument.model.clone(),
        serial_number: instrument.serial_number.clone(),
        location: instrument.location.clone(),
        status: instrument.status.as_str().to_owned(),
        status_reason: instrument.status_reason.clone(),
        calibration_status: instrument.calibration_status(now).as_str().to_owned(),
        last_calibrated_at: to_timestamp_opt(instrument.last_calibrated_at),
        calibration_due_at: to_timestamp_opt(instrument.calibration_due_at),
        calibration_certificate: instrument.calibration_certificate.clone(),
        equipment: instrument
            .equipment
            .iter()
            .map(|item| pb::Equipment {
                id: item.id.clone(),
                kind: item.kind.clone(),
                description: item.description.clone(),
                serial_number: item.serial_number.clone(),
            })
            .collect(),
        created_at: Some(to_timestamp(instrument.created_at)),
        updated_at: Some(to_timestamp(instrument.updated_at)),
    }
}

impl From<&Method> for pb::Method {
    fn from(method: &Method) -> Self {
        pb::Method {
            id: method.id.clone(),
            name: method.name.clone(),
            version: method.version,
            technique: method.technique.clone(),
            instrument_kinds: method.instrument_kinds.clone(),
            matrices: method.matrices.clone(),
            test_ids: method.test_ids.clone(),
            analytes: method
                .analytes
                .iter()
                .map(|analyte| pb::MethodAnalyte {
                    name: analyte.name.clone(),
                    unit: analyte.unit.clone(),
                    loq: analyte.loq.clone(),
                    lod: analyte.lod.clone(),
                })
                .collect(),
            validation_status: method.validation_status.as_str().to_owned(),
            validated_at: to_timestamp_opt(method.validated_at),
            reference: method.reference.clone(),
            description: method.description.clone(),
            created_at: Some(to_timestamp(method.created_at)),
            updated_at: Some(to_timestamp(method.updated_at)),
        }
    }
}

//! An instrument of the lab: what it is, its linked equipment, its service status and its
//! calibration record. The calibration status readers see is derived when read
//! ([`calibration_status`]): the worse of the outcome QA recorded and what the due date says
//! now (overdue once past it, due within [`DUE_WINDOW`] of it), so a lapse shows without anyone
//! recording it.

use super::checks::{self, invalid};
use chrono::{DateTime, Duration, Utc};
use platform::error::ApiError;

/// How long before its due date a calibration reads `due`.
pub const DUE_WINDOW: Duration = Duration::days(30);
/// Most equipment items one instrument lists.
pub const MAX_EQUIPMENT: usize = 30;
/// How far in the future a calibration time may be (clock skew between QA's machine and ours).
const CLOCK_SKEW: Duration = Duration::minutes(5);

/// Whether an instrument may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstrumentStatus {
    InService,
    OutOfService,
    Retired,
}

impl InstrumentStatus {
    pub const NAMES: [&str; 3] = ["in_service", "out_of_service", "retired"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InService => "in_service",
            Self::OutOfService => "out_of_service",
            Self::Retired => "retired",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "in_service" => Some(Self::InService),
            "out_of_service" => Some(Self::OutOfService),
            "retired" => Some(Self::Retired),
            _ => None,
        }
    }

    /// Parses `field`, or refuses it naming the allowed values.
    pub fn parse_field(field: &str, text: &str) -> Result<Self, ApiError> {
        Self::parse(text.trim()).ok_or_else(|| allowed(field, "not an instrument status", &Self::NAMES))
    }
}

/// Calibration state, from best to worst (the derived status is the maximum).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CalibrationStatus {
    Calibrated,
    Due,
    Overdue,
}

impl CalibrationStatus {
    pub const NAMES: [&str; 3] = ["calibrated", "due", "overdue"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Calibrated => "calibrated",
            Self::Due => "due",
            Self::Overdue => "overdue",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "calibrated" => Some(Self::Calibrated),
            "due" => Some(Self::Due),
            "overdue" => Some(Self::Overdue),
            _ => None,
        }
    }

    /// Parses `field`, or refuses it naming the allowed values.
    pub fn parse_field(field: &str, text: &str) -> Result<Self, ApiError> {
        Self::parse(text.trim()).ok_or_else(|| allowed(field, "not a calibration status", &Self::NAMES))
    }
}

fn allowed(field: &str, message: &str, names: &[&str]) -> ApiError {
    invalid(field, message).with_details(serde_json::json!({ "field": field, "allowed": names }))
}

/// The calibration status as read at `now`: the worse of the `recorded` outcome and the due
/// date's verdict. Without a due date (never calibrated) the recorded outcome stands, which is
/// `due` for a new instrument.
pub fn calibration_status(
    recorded: CalibrationStatus,
    due_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> CalibrationStatus {
    let by_date = match due_at {
        None => CalibrationStatus::Calibrated,
        Some(due_at) if due_at <= now => CalibrationStatus::Overdue,
        Some(due_at) if due_at - now <= DUE_WINDOW => CalibrationStatus::Due,
        Some(_) => CalibrationStatus::Calibrated,
    };
    recorded.max(by_date)
}

/// A piece of equipment linked to an instrument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Equipment {
    pub id: String,
    pub kind: String,
    pub description: String,
    pub serial_number: Option<String>,
}

/// An instrument as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Instrument {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub manufacturer: String,
    pub model: String,
    pub serial_number: Option<String>,
    pub location: String,
    pub status: InstrumentStatus,
    pub status_reason: Option<String>,
    /// The outcome QA recorded with the last calibration (not what readers see).
    pub recorded_calibration: CalibrationStatus,
    pub last_calibrated_at: Option<DateTime<Utc>>,
    pub calibration_due_at: Option<DateTime<Utc>>,
    pub calibration_certificate: Option<String>,
    pub equipment: Vec<Equipment>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Instrument {
    /// The calibration status readers see at `now` ([`calibration_status`]).
    pub fn calibration_status(&self, now: DateTime<Utc>) -> CalibrationStatus {
        calibration_status(self.recorded_calibration, self.calibration_due_at, now)
    }
}

/// What QA describes of an instrument in an upsert (status and calibration have their own steps).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstrumentDraft {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub manufacturer: String,
    pub model: String,
    pub serial_number: Option<String>,
    pub location: String,
    pub equipment: Vec<Equipment>,
}

impl InstrumentDraft {
    /// Trims and checks every field: slugs for ids and kinds, bounded text, at most
    /// [`MAX_EQUIPMENT`] equipment items with distinct ids.
    pub fn checked(self) -> Result<Self, ApiError> {
        if self.equipment.len() > MAX_EQUIPMENT {
            return Err(invalid(
                "equipment",
                format!("list at most {MAX_EQUIPMENT} items"),
            ));
        }
        let mut equipment: Vec<Equipment> = Vec::with_capacity(self.equipment.len());
        for (index, item) in self.equipment.into_iter().enumerate() {
            let field = |name: &str| format!("equipment[{index}].{name}");
            let id = checks::slug(&field("id"), &item.id)?;
            if equipment.iter().any(|seen| seen.id == id) {
                return Err(invalid(&field("id"), "the equipment id is listed twice"));
            }
            equipment.push(Equipment {
                id,
                kind: checks::slug(&field("kind"), &item.kind)?,
                description: checks::text(&field("description"), &item.description, 300)?,
                serial_number: checks::optional_text(&field("serialNumber"), item.serial_number, 64)?,
            });
        }
        Ok(Self {
            id: checks::slug("id", &self.id)?,
            name: checks::text("name", &self.name, 120)?,
            kind: checks::slug("kind", &self.kind)?,
            manufacturer: checks::text("manufacturer", &self.manufacturer, 120)?,
            model: checks::text("model", &self.model, 160)?,
            serial_number: checks::optional_text("serialNumber", self.serial_number, 64)?,
            location: checks::text("location", &self.location, 120)?,
            equipment,
        })
    }
}

/// A calibration QA records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Calibration {
    pub calibrated_at: DateTime<Utc>,
    pub due_at: DateTime<Utc>,
    pub status: CalibrationStatus,
    pub certificate: Option<String>,
}

impl Calibration {
    /// Checks a calibration recorded at `now`: not in the future (beyond clock skew), due after
    /// it was done; `calibrated_at` defaults to `now` and the outcome to `calibrated`.
    pub fn check(
        calibrated_at: Option<DateTime<Utc>>,
        due_at: Option<DateTime<Utc>>,
        status: Option<&str>,
        certificate: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Self, ApiError> {
        let calibrated_at = calibrated_at.unwrap_or(now);
        if calibrated_at > now + CLOCK_SKEW {
            return Err(invalid(
                "calibratedAt",
                "a calibration cannot be recorded in the future",
            ));
        }
        let due_at = due_at.ok_or_else(|| invalid("dueAt", "give the date the calibration is due again"))?;
        if due_at <= calibrated_at {
            return Err(invalid("dueAt", "the due date must be after the calibration"));
        }
        let status = match status.map(str::trim).filter(|status| !status.is_empty()) {
            Some(status) => CalibrationStatus::parse_field("status", status)?,
            None => CalibrationStatus::Calibrated,
        };
        Ok(Self {
            calibrated_at,
            due_at,
            status,
            certificate: checks::optional_text("certificate", certificate, 64)?,
        })
    }
}

/// Which instruments a listing returns, and where its page starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstrumentFilter {
    pub kind: Option<String>,
    pub status: Option<InstrumentStatus>,
    /// The id the page starts after (pages are in id order).
    pub after: Option<String>,
    pub limit: i64,
}

impl InstrumentFilter {
    /// Checks the filters as received (blank means absent).
    pub fn new(kind: Option<String>, status: Option<String>) -> Result<Self, ApiError> {
        let kind = kind.filter(|kind| !kind.trim().is_empty());
        let status = status.filter(|status| !status.trim().is_empty());
        Ok(Self {
            kind: kind.map(|kind| checks::slug("kind", &kind)).transpose()?,
            status: status
                .map(|status| InstrumentStatus::parse_field("status", &status))
                .transpose()?,
            ..Self::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    #[test]
    fn the_calibration_status_is_the_worse_of_the_recorded_outcome_and_the_due_date() {
        let now = at("2026-11-28T12:00:00Z");
        let status = |recorded, due: Option<&str>| calibration_status(recorded, due.map(at), now);
        use CalibrationStatus::*;
        assert_eq!(status(Calibrated, Some("2027-02-12T00:00:00Z")), Calibrated);
        assert_eq!(status(Calibrated, Some("2026-12-09T00:00:00Z")), Due);
        assert_eq!(status(Calibrated, Some("2026-11-28T12:00:00Z")), Overdue);
        assert_eq!(status(Calibrated, Some("2026-10-15T00:00:00Z")), Overdue);
        assert_eq!(status(Due, Some("2027-02-12T00:00:00Z")), Due);
        assert_eq!(status(Overdue, Some("2027-02-12T00:00:00Z")), Overdue);
        assert_eq!(status(Due, None), Due);
    }

    #[test]
    fn a_calibration_in_the_future_or_due_before_it_was_done_is_refused() {
        let now = at("2026-11-28T12:00:00Z");
        let due = Some(at("2027-05-28T00:00:00Z"));
        let recorded = Calibration::check(None, due, None, None, now).unwrap();
        assert_eq!(
            (recorded.calibrated_at, recorded.status),
            (now, CalibrationStatus::Calibrated)
        );
        let future = Calibration::check(Some(at("2026-11-29T12:00:00Z")), due, None, None, now);
        assert_eq!(future.unwrap_err().details.unwrap()["field"], "calibratedAt");
        let backwards = Calibration::check(None, Some(at("2026-11-01T00:00:00Z")), None, None, now);
        assert_eq!(backwards.unwrap_err().details.unwrap()["field"], "dueAt");
        let unknown = Calibration::check(None, due, Some("fine"), None, now).unwrap_err();
        assert_eq!(unknown.details.unwrap()["allowed"][0], "calibrated");
    }

    #[test]
    fn a_draft_is_trimmed_and_duplicate_equipment_ids_are_refused() {
        let item = |id: &str| Equipment {
            id: id.into(),
            kind: "column".into(),
            description: " C18 ".into(),
            serial_number: Some(" ".into()),
        };
        let draft = InstrumentDraft {
            id: " hplc-uv-09 ".into(),
            name: "HPLC 09".into(),
            kind: "hplc-uv".into(),
            manufacturer: "Agilent".into(),
            model: "1260".into(),
            serial_number: None,
            location: "bench 9".into(),
            equipment: vec![item("col-1")],
        };
        let checked = draft.clone().checked().unwrap();
        assert_eq!(checked.id, "hplc-uv-09");
        assert_eq!(checked.equipment[0].description, "C18");
        assert_eq!(checked.equipment[0].serial_number, None);
        let twice = InstrumentDraft {
            equipment: vec![item("col-1"), item("col-1")],
            ..draft.clone()
        };
        assert_eq!(
            twice.checked().unwrap_err().details.unwrap()["field"],
            "equipment[1].id"
        );
        let bad_kind = InstrumentDraft {
            kind: "HPLC UV".into(),
            ..draft
        };
        assert_eq!(bad_kind.checked().unwrap_err().details.unwrap()["field"], "kind");
    }
}

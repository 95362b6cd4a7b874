//! An analytical method of the lab: technique, the instrument kinds it runs on, the catalog
//! matrices and tests it serves, its analytes with LOQ/LOD and unit, its validation state and
//! reference. Its version goes up by one when what a result depends on changes: the analytes
//! (names, units, limits) or the matrices ([`next_version`]). A withdrawn method stays listed.

use super::checks::{self, invalid};
use chrono::{DateTime, Utc};
use platform::error::ApiError;

/// Most analytes one method lists.
pub const MAX_ANALYTES: usize = 100;
/// Most matrices, test ids or instrument kinds one method lists.
pub const MAX_LINKS: usize = 20;

/// Where a method stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidationStatus {
    Validated,
    InValidation,
    Withdrawn,
}

impl ValidationStatus {
    pub const NAMES: [&str; 3] = ["validated", "in_validation", "withdrawn"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validated => "validated",
            Self::InValidation => "in_validation",
            Self::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "validated" => Some(Self::Validated),
            "in_validation" => Some(Self::InValidation),
            "withdrawn" => Some(Self::Withdrawn),
            _ => None,
        }
    }

    /// Parses `field`, or refuses it naming the allowed values.
    pub fn parse_field(field: &str, text: &str) -> Result<Self, ApiError> {
        Self::parse(text.trim()).ok_or_else(|| {
            invalid(field, "not a validation status")
                .with_details(serde_json::json!({ "field": field, "allowed": Self::NAMES }))
        })
    }
}

/// An analyte a method determines, with its published limits.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MethodAnalyte {
    pub name: String,
    pub unit: String,
    pub loq: Option<String>,
    pub lod: Option<String>,
}

/// A method as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Method {
    pub id: String,
    pub name: String,
    pub version: i32,
    pub technique: String,
    pub instrument_kinds: Vec<String>,
    pub matrices: Vec<String>,
    pub test_ids: Vec<String>,
    pub analytes: Vec<MethodAnalyte>,
    pub validation_status: ValidationStatus,
    pub validated_at: Option<DateTime<Utc>>,
    pub reference: String,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What QA describes of a method in an upsert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodDraft {
    pub id: String,
    pub name: String,
    pub technique: String,
    pub instrument_kinds: Vec<String>,
    pub matrices: Vec<String>,
    pub test_ids: Vec<String>,
    pub analytes: Vec<MethodAnalyte>,
    pub validation_status: ValidationStatus,
    pub validated_at: Option<DateTime<Utc>>,
    pub reference: String,
    pub description: Option<String>,
}

impl MethodDraft {
    /// Trims and checks every field: slugs for the id, technique and links, 1 to
    /// [`MAX_ANALYTES`] analytes with distinct names (case-insensitive), decimal limits with the
    /// LOD at most the LOQ.
    pub fn checked(self) -> Result<Self, ApiError> {
        if self.analytes.is_empty() || self.analytes.len() > MAX_ANALYTES {
            return Err(invalid("analytes", format!("list 1 to {MAX_ANALYTES} analytes")));
        }
        let mut analytes: Vec<MethodAnalyte> = Vec::with_capacity(self.analytes.len());
        for (index, analyte) in self.analytes.into_iter().enumerate() {
            let field = |name: &str| format!("analytes[{index}].{name}");
            let name = checks::text(&field("name"), &analyte.name, 100)?;
            if analytes.iter().any(|seen| seen.name.eq_ignore_ascii_case(&name)) {
                return Err(invalid(&field("name"), "the analyte is listed twice"));
            }
            let loq = checks::optional_limit(&field("loq"), analyte.loq)?;
            let lod = checks::optional_limit(&field("lod"), analyte.lod)?;
            if let (Some(loq), Some(lod)) = (&loq, &lod)
                && decimal(lod) > decimal(loq)
            {
                return Err(invalid(&field("lod"), "the LOD cannot exceed the LOQ"));
            }
            analytes.push(MethodAnalyte {
                name,
                unit: checks::text(&field("unit"), &analyte.unit, 30)?,
                loq,
                lod,
            });
        }
        Ok(Self {
            id: checks::slug("id", &self.id)?,
            name: checks::text("name", &self.name, 160)?,
            technique: checks::slug("technique", &self.technique)?,
            instrument_kinds: checks::slugs("instrumentKinds", self.instrument_kinds, MAX_LINKS)?,
            matrices: checks::slugs("matrices", self.matrices, MAX_LINKS)?,
            test_ids: checks::slugs("testIds", self.test_ids, MAX_LINKS)?,
            analytes,
            validation_status: self.validation_status,
            validated_at: self.validated_at,
            reference: checks::text("reference", &self.reference, 200)?,
            description: checks::optional_text("description", self.description, 1000)?,
        })
    }
}

/// A checked limit as a number, for comparing an LOD with its LOQ only (stored as text).
fn decimal(text: &str) -> f64 {
    text.parse().unwrap_or(f64::NAN)
}

/// The version an update of `current` to `draft` gets: one more when the analytes (as a set of
/// name, unit and limits) or the matrices (as a set) change, the same otherwise.
pub fn next_version(current: &Method, draft: &MethodDraft) -> i32 {
    let sorted = |list: &[MethodAnalyte]| {
        let mut list = list.to_vec();
        list.sort();
        list
    };
    let set = |list: &[String]| {
        let mut list = list.to_vec();
        list.sort();
        list
    };
    let changed = sorted(&current.analytes) != sorted(&draft.analytes)
        || set(&current.matrices) != set(&draft.matrices);
    if changed {
        current.version.saturating_add(1)
    } else {
        current.version
    }
}

/// When the method counts as validated: the time given; else, when it is validated, the time
/// it was validated before (if it was) or `now`; a method never validated has none.
pub fn validated_at(
    current: Option<&Method>,
    draft: &MethodDraft,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let before = current.and_then(|method| method.validated_at);
    match (draft.validated_at, draft.validation_status) {
        (Some(at), _) => Some(at),
        (None, ValidationStatus::Validated) => Some(before.unwrap_or(now)),
        (None, _) => before,
    }
}

/// Which methods a listing returns, and where its page starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodFilter {
    pub technique: Option<String>,
    pub matrix: Option<String>,
    /// Part of an analyte name, compared case-insensitively ("lead" finds "Lead (Pb)").
    pub analyte: Option<String>,
    pub validation_status: Option<ValidationStatus>,
    /// The id the page starts after (pages are in id order).
    pub after: Option<String>,
    pub limit: i64,
}

impl MethodFilter {
    /// Checks the filters as received (blank means absent).
    pub fn new(
        technique: Option<String>,
        matrix: Option<String>,
        analyte: Option<String>,
        validation_status: Option<String>,
    ) -> Result<Self, ApiError> {
        let given = |value: Option<String>| value.filter(|value| !value.trim().is_empty());
        Ok(Self {
            technique: given(technique)
                .map(|value| checks::slug("technique", &value))
                .transpose()?,
            matrix: given(matrix)
                .map(|value| checks::slug("matrix", &value))
                .transpose()?,
            analyte: given(analyte)
                .map(|value| checks::text("analyte", &value, 100))
                .transpose()?,
            validation_status: given(validation_status)
                .map(|value| ValidationStatus::parse_field("validationStatus", &value))
                .transpose()?,
            ..Self::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyte(name: &str, loq: &str) -> MethodAnalyte {
        MethodAnalyte {
            name: name.into(),
            unit: "ppm".into(),
            loq: Some(loq.into()),
            lod: None,
        }
    }

    fn draft() -> MethodDraft {
        MethodDraft {
            id: "icpms-metals".into(),
            name: "Metals".into(),
            technique: "icp-ms".into(),
            instrument_kinds: vec!["icp-ms".into()],
            matrices: vec!["softgel".into(), "powder-blend".into()],
            test_ids: vec!["heavy-metals-icpms".into()],
            analytes: vec![analyte("Lead (Pb)", "0.05"), analyte("Arsenic (As)", "0.05")],
            validation_status: ValidationStatus::Validated,
            validated_at: None,
            reference: "USP <233>".into(),
            description: None,
        }
    }

    fn stored(draft: &MethodDraft) -> Method {
        let now = platform::time::now();
        Method {
            id: draft.id.clone(),
            name: draft.name.clone(),
            version: 2,
            technique: draft.technique.clone(),
            instrument_kinds: draft.instrument_kinds.clone(),
            matrices: draft.matrices.clone(),
            test_ids: draft.test_ids.clone(),
            analytes: draft.analytes.clone(),
            validation_status: draft.validation_status,
            validated_at: Some(now),
            reference: draft.reference.clone(),
            description: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn the_version_goes_up_when_analytes_or_matrices_change_and_not_otherwise() {
        let current = stored(&draft());
        let renamed = MethodDraft {
            name: "Heavy metals".into(),
            reference: "USP <232>/<233>".into(),
            ..draft()
        };
        assert_eq!(next_version(&current, &renamed), 2);
        let reordered = MethodDraft {
            matrices: vec!["powder-blend".into(), "softgel".into()],
            analytes: vec![analyte("Arsenic (As)", "0.05"), analyte("Lead (Pb)", "0.05")],
            ..draft()
        };
        assert_eq!(next_version(&current, &reordered), 2);
        let tighter = MethodDraft {
            analytes: vec![analyte("Lead (Pb)", "0.02"), analyte("Arsenic (As)", "0.05")],
            ..draft()
        };
        assert_eq!(next_version(&current, &tighter), 3);
        let wider = MethodDraft {
            matrices: vec!["softgel".into(), "powder-blend".into(), "tablet-capsule".into()],
            ..draft()
        };
        assert_eq!(next_version(&current, &wider), 3);
    }

    #[test]
    fn an_lod_above_the_loq_a_repeated_analyte_and_an_empty_list_are_refused() {
        let mut inverted = draft();
        inverted.analytes[0].lod = Some("0.1".into());
        assert_eq!(
            inverted.checked().unwrap_err().details.unwrap()["field"],
            "analytes[0].lod"
        );
        let mut twice = draft();
        twice.analytes[1].name = "lead (pb)".into();
        assert_eq!(
            twice.checked().unwrap_err().details.unwrap()["field"],
            "analytes[1].name"
        );
        let none = MethodDraft {
            analytes: Vec::new(),
            ..draft()
        };
        assert_eq!(none.checked().unwrap_err().details.unwrap()["field"], "analytes");
        let no_matrix = MethodDraft {
            matrices: Vec::new(),
            ..draft()
        };
        assert_eq!(
            no_matrix.checked().unwrap_err().details.unwrap()["field"],
            "matrices"
        );
    }

    #[test]
    fn a_validated_method_keeps_its_validation_time_and_a_new_one_gets_now() {
        let now = platform::time::now();
        let current = stored(&draft());
        assert_eq!(validated_at(Some(&current), &draft(), now), current.validated_at);
        assert_eq!(validated_at(None, &draft(), now), Some(now));
        let in_validation = MethodDraft {
            validation_status: ValidationStatus::InValidation,
            ..draft()
        };
        assert_eq!(validated_at(None, &in_validation, now), None);
    }
}

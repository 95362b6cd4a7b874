//! Ids and references as callers write them: the one UUID parser of the mesh and the one
//! reference parser (a UUID, or a number such as `ORD-…`, `INV-…`, a tracking number).
//!
//! A UUID is any form the `uuid` crate parses (hyphenated, simple, braced, URN), with
//! surrounding white space ignored; a malformed one is 400 `invalid_request` naming the field.

use crate::error::{ApiError, ErrorCode};
use uuid::Uuid;

/// Parses a required UUID; `invalid_request` on `field` when it is not one.
pub fn parse_uuid(field: &str, value: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(value.trim()).map_err(|_| not_a_uuid(field))
}

/// Parses an optional UUID (absent or blank is `None`); `invalid_request` on `field` when it
/// is present and not one.
pub fn parse_optional_uuid(field: &str, value: Option<&str>) -> Result<Option<Uuid>, ApiError> {
    match value.map(str::trim).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(value) => parse_uuid(field, value).map(Some),
    }
}

fn not_a_uuid(field: &str) -> ApiError {
    ApiError::field(
        ErrorCode::InvalidRequest,
        field,
        format!("{field} must be a UUID"),
    )
}

/// A reference to a record: its UUID, or a text (a number) looked up exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reference {
    Id(Uuid),
    Text(String),
}

impl Reference {
    /// Reads a reference, surrounding white space ignored: a UUID is an id, anything else text.
    pub fn parse(value: &str) -> Self {
        let value = value.trim();
        match Uuid::parse_str(value) {
            Ok(id) => Reference::Id(id),
            Err(_) => Reference::Text(value.to_owned()),
        }
    }

    /// [`Reference::parse`] for a required field: empty is `invalid_request` on `field`.
    pub fn parse_required(field: &str, value: &str) -> Result<Self, ApiError> {
        if value.trim().is_empty() {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                field,
                format!("{field} is required"),
            ));
        }
        Ok(Self::parse(value))
    }

    /// The id, when the reference is a UUID.
    pub fn id(&self) -> Option<Uuid> {
        match self {
            Reference::Id(id) => Some(*id),
            Reference::Text(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_parse_in_any_form_and_others_name_their_field() {
        let id = Uuid::now_v7();
        assert_eq!(parse_uuid("orderId", &id.to_string()).unwrap(), id);
        assert_eq!(parse_uuid("orderId", &format!(" {} ", id.simple())).unwrap(), id);
        let refused = parse_uuid("orderId", "ORD-1").unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidRequest);
        assert_eq!(refused.message, "orderId must be a UUID");
        assert_eq!(refused.details, Some(serde_json::json!({ "field": "orderId" })));
    }

    #[test]
    fn an_absent_or_blank_optional_uuid_is_none() {
        assert_eq!(parse_optional_uuid("invoiceId", None).unwrap(), None);
        assert_eq!(parse_optional_uuid("invoiceId", Some("  ")).unwrap(), None);
        let id = Uuid::now_v7();
        assert_eq!(
            parse_optional_uuid("invoiceId", Some(&id.to_string())).unwrap(),
            Some(id)
        );
        assert!(parse_optional_uuid("invoiceId", Some("nope")).is_err());
    }

    #[test]
    fn references_are_ids_when_they_are_uuids_and_text_otherwise() {
        let id = Uuid::now_v7();
        assert_eq!(Reference::parse(&format!(" {id}")), Reference::Id(id));
        assert_eq!(
            Reference::parse(" 1ZLAB0010300000011 "),
            Reference::Text("1ZLAB0010300000011".into())
        );
        assert_eq!(Reference::parse("ORD-1").id(), None);
        let refused = Reference::parse_required("reference", " ").unwrap_err();
        assert_eq!(refused.message, "reference is required");
    }
}

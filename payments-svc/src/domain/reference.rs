//! References to an invoice as callers write them: a UUID or an invoice number (`INV-…`).

use platform::error::{ApiError, ErrorCode};
use uuid::Uuid;

/// An invoice reference. A UUID names the invoice (or, where the operation allows, its order);
/// anything else is compared exactly with invoice numbers, so an unknown string is a 404.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvoiceReference {
    Id(Uuid),
    Number(String),
}

impl InvoiceReference {
    /// Parses a reference; empty is `invalid_request` on `field`.
    pub fn parse(value: &str, field: &str) -> Result<Self, ApiError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                field,
                format!("{field} is required"),
            ));
        }
        Ok(match Uuid::parse_str(value) {
            Ok(id) => InvoiceReference::Id(id),
            Err(_) => InvoiceReference::Number(value.to_owned()),
        })
    }
}

/// Parses an optional UUID filter; a malformed value is `invalid_request` on `field`.
pub fn optional_uuid(value: Option<&str>, field: &str) -> Result<Option<Uuid>, ApiError> {
    match value.map(str::trim).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(value) => Uuid::parse_str(value).map(Some).map_err(|_| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                field,
                format!("{field} must be a uuid"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_and_invoice_numbers_are_told_apart() {
        let id = Uuid::now_v7();
        assert_eq!(
            InvoiceReference::parse(&id.to_string(), "reference").unwrap(),
            InvoiceReference::Id(id)
        );
        assert_eq!(
            InvoiceReference::parse(" INV-2026-000001 ", "reference").unwrap(),
            InvoiceReference::Number("INV-2026-000001".into())
        );
        assert_eq!(
            InvoiceReference::parse("", "reference").unwrap_err().code,
            ErrorCode::InvalidRequest
        );
    }

    #[test]
    fn an_absent_filter_is_none_and_a_malformed_one_is_refused() {
        assert_eq!(optional_uuid(None, "orderId").unwrap(), None);
        assert_eq!(optional_uuid(Some(""), "orderId").unwrap(), None);
        assert!(optional_uuid(Some("nope"), "orderId").is_err());
    }
}

//! Small checks shared by the request validators: field errors, lengths and UUIDs.

use platform::error::{ApiError, ErrorCode};
use uuid::Uuid;

/// An `invalid_request` naming `field` (the REST camelCase name).
pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message)
}

/// Parses a hyphenated UUID, naming `field` when it is not one.
pub fn parse_uuid(field: &str, value: &str) -> Result<Uuid, ApiError> {
    match Uuid::parse_str(value) {
        Ok(id) if value.len() == 36 => Ok(id),
        _ => Err(invalid(field, format!("{field} must be a UUID"))),
    }
}

/// Checks an optional text's length in characters (not bytes) against `min..=max`.
pub fn check_length(field: &str, value: Option<&str>, min: usize, max: usize) -> Result<(), ApiError> {
    let Some(value) = value else { return Ok(()) };
    let length = value.chars().count();
    if length < min {
        return Err(invalid(field, format!("{field} must not be empty")));
    }
    if length > max {
        return Err(invalid(
            field,
            format!("{field} must be at most {max} characters"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_count_characters_and_uuids_must_be_hyphenated() {
        assert!(check_length("f", Some("éé"), 1, 2).is_ok());
        assert!(check_length("f", Some("ééé"), 1, 2).is_err());
        assert!(check_length("f", None, 1, 2).is_ok());
        let id = Uuid::now_v7();
        assert_eq!(parse_uuid("f", &id.to_string()).unwrap(), id);
        assert!(parse_uuid("f", &id.simple().to_string()).is_err());
    }
}

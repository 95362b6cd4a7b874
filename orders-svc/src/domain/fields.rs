//! Small checks shared by the request validators: field errors and lengths (UUIDs:
//! `platform::ids`).

use platform::error::{ApiError, ErrorCode};

/// An `invalid_request` naming `field` (the REST camelCase name).
pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message)
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
    fn lengths_count_characters() {
        assert!(check_length("f", Some("éé"), 1, 2).is_ok());
        assert!(check_length("f", Some("ééé"), 1, 2).is_err());
        assert!(check_length("f", None, 1, 2).is_ok());
    }
}

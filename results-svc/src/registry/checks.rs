//! Field checks shared by the instrument and method records: slugs, bounded text, decimals.
//! Every refusal is 400 `invalid_request` naming the field (camelCase, with its index in a list).

use platform::error::{ApiError, ErrorCode};

/// Longest slug (record ids, kinds, techniques, matrix and test ids).
pub const MAX_SLUG_CHARS: usize = 64;

/// The refusal of `field`.
pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::field(ErrorCode::InvalidRequest, field, message)
}

/// True for a lowercase slug: `a-z0-9` words joined by single hyphens (`hplc-uv-01`).
pub fn is_slug(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_SLUG_CHARS
        && text.split('-').all(|word| {
            !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// A slug, trimmed.
pub fn slug(field: &str, value: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if !is_slug(value) {
        return Err(invalid(
            field,
            format!(
                "must be a lowercase slug of letters, digits and single hyphens, at most {MAX_SLUG_CHARS} characters (for example hplc-uv-01)"
            ),
        ));
    }
    Ok(value.to_owned())
}

/// A list of 1 to `max` distinct slugs (order kept).
pub fn slugs(field: &str, values: Vec<String>, max: usize) -> Result<Vec<String>, ApiError> {
    if values.is_empty() || values.len() > max {
        return Err(invalid(field, format!("list 1 to {max} values")));
    }
    let mut checked: Vec<String> = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let value = slug(&format!("{field}[{index}]"), value)?;
        if checked.contains(&value) {
            return Err(invalid(&format!("{field}[{index}]"), "the value is listed twice"));
        }
        checked.push(value);
    }
    Ok(checked)
}

/// Text of 1 to `max` characters, trimmed.
pub fn text(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max {
        return Err(invalid(field, format!("must be 1 to {max} characters")));
    }
    Ok(value.to_owned())
}

/// Optional text: absent or blank is `None`, otherwise as [`text`].
pub fn optional_text(field: &str, value: Option<String>, max: usize) -> Result<Option<String>, ApiError> {
    match value.filter(|value| !value.trim().is_empty()) {
        Some(value) => text(field, &value, max).map(Some),
        None => Ok(None),
    }
}

/// An optional non-negative decimal as text (`0.05`), as COA rows carry limits.
pub fn optional_limit(field: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    match value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
    {
        Some(value) if crate::domain::analyte::is_decimal(&value) && !value.starts_with('-') => {
            Ok(Some(value))
        }
        Some(_) => Err(invalid(
            field,
            "must be a non-negative decimal number such as 0.05",
        )),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercase_words_joined_by_single_hyphens() {
        for good in ["hplc-uv-01", "icpms-01", "a", "lal-kinetic-reader"] {
            assert!(is_slug(good), "{good}");
        }
        for bad in [
            "",
            "HPLC",
            "hplc--uv",
            "-hplc",
            "hplc-",
            "hplc uv",
            "hplc_uv",
            &"a".repeat(65),
        ] {
            assert!(!is_slug(bad), "{bad}");
        }
    }

    #[test]
    fn limits_are_non_negative_decimals_and_blank_is_absent() {
        assert_eq!(
            optional_limit("loq", Some(" 0.05 ".into())).unwrap().as_deref(),
            Some("0.05")
        );
        assert_eq!(optional_limit("loq", Some(String::new())).unwrap(), None);
        for bad in ["-1", "1e-3", "0,05", "abc"] {
            let error = optional_limit("analytes[0].loq", Some(bad.into())).unwrap_err();
            assert_eq!(error.details.unwrap()["field"], "analytes[0].loq");
        }
    }
}

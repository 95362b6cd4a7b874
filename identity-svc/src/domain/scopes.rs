//! The scopes an API key may hold (`proto::scopes`, the one list the gateway enforces), as staff
//! name them when they create a key.

use platform::error::{ApiError, ErrorCode};
use proto::scopes::ALL_SCOPES;

/// The value that stands for every scope when a key is created.
pub const ALL: &str = "all";

/// Expands and validates requested scopes: `all` means every scope; an unknown name is
/// `invalid_request` on field `scopes`; the result is deduplicated in canonical order.
pub fn expand(requested: &[String]) -> Result<Vec<String>, ApiError> {
    if requested.is_empty() {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "scopes",
            "at least one scope is required",
        ));
    }
    let mut wanted = [false; ALL_SCOPES.len()];
    for name in requested.iter().map(|name| name.trim()) {
        if name == ALL {
            wanted = [true; ALL_SCOPES.len()];
        } else if let Some(index) = ALL_SCOPES.iter().position(|scope| *scope == name) {
            wanted[index] = true;
        } else {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "scopes",
                format!("unknown scope {name:?}"),
            )
            .with_details(serde_json::json!({ "allowed": ALL_SCOPES })));
        }
    }
    Ok(ALL_SCOPES
        .iter()
        .zip(wanted)
        .filter(|(_, on)| *on)
        .map(|(scope, _)| (*scope).to_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_expands_to_every_scope_and_unknown_scopes_are_refused() {
        assert_eq!(expand(&[ALL.into()]).unwrap().len(), ALL_SCOPES.len());
        let expanded = expand(&[
            "orders:write".into(),
            " catalog:read".into(),
            "orders:write".into(),
        ])
        .unwrap();
        assert_eq!(expanded, vec!["catalog:read", "orders:write"]);
        let error = expand(&["orders:delete".into()]).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(expand(&[]).is_err());
    }
}

//! Opaque cursors and page-size rules shared by every list operation.

use crate::error::{ApiError, ErrorCode};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Default page size of list operations.
pub const DEFAULT_LIMIT: i32 = 50;
/// Largest page size of list operations.
pub const MAX_LIMIT: i32 = 200;

/// Validates an optional `limit` against 1..=`MAX_LIMIT`.
pub fn page_limit(limit: Option<i32>) -> Result<i64, ApiError> {
    match limit {
        None => Ok(i64::from(DEFAULT_LIMIT)),
        Some(limit) if (1..=MAX_LIMIT).contains(&limit) => Ok(i64::from(limit)),
        Some(_) => Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "limit",
            format!("limit must be between 1 and {MAX_LIMIT}"),
        )),
    }
}

#[derive(Serialize, serde::Deserialize)]
struct Wrapped<T> {
    k: String,
    v: T,
}

/// Encodes a cursor position of listing `kind`.
pub fn encode_cursor<T: Serialize>(kind: &str, position: &T) -> String {
    let wrapped = Wrapped {
        k: kind.to_owned(),
        v: position,
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wrapped).unwrap_or_default())
}

/// Decodes a cursor of listing `kind`; `invalid_cursor` when malformed or of another listing.
pub fn decode_cursor<T: DeserializeOwned>(kind: &str, cursor: &str) -> Result<T, ApiError> {
    let invalid = || {
        ApiError::field(
            ErrorCode::InvalidCursor,
            "cursor",
            "the cursor is not valid for this listing",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor.as_bytes()).map_err(|_| invalid())?;
    let wrapped: Wrapped<T> = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if wrapped.k != kind {
        return Err(invalid());
    }
    Ok(wrapped.v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_is_refused_by_another_listing() {
        let cursor = encode_cursor("orders", &("2026-01-01", 7));
        assert_eq!(
            decode_cursor::<(String, i32)>("orders", &cursor).unwrap(),
            ("2026-01-01".to_owned(), 7)
        );
        assert_eq!(
            decode_cursor::<(String, i32)>("invoices", &cursor)
                .unwrap_err()
                .code,
            ErrorCode::InvalidCursor
        );
        assert_eq!(
            decode_cursor::<(String, i32)>("orders", "%%%").unwrap_err().code,
            ErrorCode::InvalidCursor
        );
    }

    #[test]
    fn limits_outside_one_to_two_hundred_are_refused() {
        assert_eq!(page_limit(None).unwrap(), 50);
        assert_eq!(page_limit(Some(200)).unwrap(), 200);
        assert!(page_limit(Some(0)).is_err());
        assert!(page_limit(Some(201)).is_err());
    }
}

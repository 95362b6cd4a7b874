//! Newest-first cursor pages over (created_at, id), on top of `platform::pagination`.

use crate::repo::After;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{decode_cursor, encode_cursor};
use uuid::Uuid;

/// A requested page: a validated size and an optional cursor.
#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    pub limit: i64,
    pub cursor: Option<String>,
}

/// One page of a listing and the cursor of the next, if any.
#[derive(Clone, Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Decodes the cursor of listing `kind` into the position after which the page starts.
pub fn decode_after(kind: &str, cursor: Option<&str>) -> Result<Option<After>, ApiError> {
    let Some(cursor) = cursor.filter(|cursor| !cursor.is_empty()) else {
        return Ok(None);
    };
    let (micros, id): (i64, Uuid) = decode_cursor(kind, cursor)?;
    let created_at = DateTime::<Utc>::from_timestamp_micros(micros).ok_or_else(|| {
        ApiError::field(
            ErrorCode::InvalidCursor,
            "cursor",
            "the cursor is not valid for this listing",
        )
    })?;
    Ok(Some(After { created_at, id }))
}

/// Cuts a `limit + 1` fetch to `limit` and encodes the next cursor from the last row kept.
pub fn paginate<T>(
    kind: &str,
    mut rows: Vec<T>,
    limit: i64,
    key: impl Fn(&T) -> (DateTime<Utc>, Uuid),
) -> Page<T> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if rows.len() <= limit {
        return Page {
            items: rows,
            next_cursor: None,
        };
    }
    rows.truncate(limit);
    let next_cursor = rows.last().map(|last| {
        let (created_at, id) = key(last);
        encode_cursor(kind, &(created_at.timestamp_micros(), id))
    });
    Page {
        items: rows,
        next_cursor,
    }
}

//! Newest-first cursor pages over (created_at, id), on top of `platform::pagination`.

use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::pagination::{decode_cursor, encode_cursor, page_limit};
use uuid::Uuid;

/// Cursor kind of the endpoint listing.
pub const ENDPOINTS: &str = "webhook_endpoints";
/// Cursor kind of the delivery listing.
pub const DELIVERIES: &str = "webhook_deliveries";

/// The position after which a page starts (exclusive), newest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct After {
    pub created_at: DateTime<Utc>,
    pub id: Uuid,
}

/// A validated page request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: i64,
    pub after: Option<After>,
}

impl PageRequest {
    /// Validates `limit` (1 to 200, default 50) and decodes the cursor of listing `kind`.
    pub fn parse(kind: &str, limit: Option<i32>, cursor: Option<&str>) -> Result<Self, ApiError> {
        let limit = page_limit(limit)?;
        let after = match cursor.filter(|cursor| !cursor.is_empty()) {
            None => None,
            Some(cursor) => {
                let (micros, id): (i64, Uuid) = decode_cursor(kind, cursor)?;
                let created_at = DateTime::<Utc>::from_timestamp_micros(micros).ok_or_else(|| {
                    ApiError::field(
                        ErrorCode::InvalidCursor,
                        "cursor",
                        "the cursor is not valid for this listing",
                    )
                })?;
                Some(After { created_at, id })
            }
        };
        Ok(Self { limit, after })
    }
}

/// One page and the cursor of the next, if any.
#[derive(Clone, Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
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

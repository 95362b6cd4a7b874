//! Keyset pagination and the one opaque cursor format of every listing.
//!
//! A listing reads `limit + 1` rows after a position, keeps `limit` and, when a row was left
//! over, answers the cursor of the last row kept. Every listing of the mesh does it through
//! [`PageRequest`] (the validated size and the cursor as received) and its [`Listing`] (which
//! decodes the position a page starts after and cuts the next page). Most listings are newest
//! first over `(created_at, id)` ([`After`]); a listing with another order keeps its own
//! position type (catalog-svc's pins a catalog revision and its filters) in the same format.
//!
//! The cursor is `base64url(JSON {"l": listing, "p": position} ‖ check)`, where `check` is the
//! first 8 bytes of SHA-256 over the JSON. Clients treat it as opaque: a cursor that does not
//! decode, was edited (the check no longer matches) or belongs to another listing is 400
//! `invalid_cursor`. The check is not a secret: it refuses corrupted and hand-edited cursors,
//! while tenant isolation never depends on a cursor (every page is still filtered by customer).

use crate::error::{ApiError, ErrorCode};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Default page size of list operations.
pub const DEFAULT_LIMIT: i32 = 50;
/// Largest page size of list operations.
pub const MAX_LIMIT: i32 = 200;
/// Bytes of the check appended to a cursor's JSON.
const CHECK_LEN: usize = 8;

/// Validates an optional `limit` against 1..=`MAX_LIMIT` (default [`DEFAULT_LIMIT`]).
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

/// A page as requested: its validated size and the cursor as received (not yet decoded: only
/// the listing knows its positions).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: i64,
    pub cursor: Option<String>,
}

impl PageRequest {
    /// Validates `limit` (1 to 200, default 50); an empty cursor means the first page.
    pub fn new(limit: Option<i32>, cursor: Option<String>) -> Result<Self, ApiError> {
        Ok(Self {
            limit: page_limit(limit)?,
            cursor: cursor.filter(|cursor| !cursor.is_empty()),
        })
    }

    /// How many rows to read: one more than the page, to learn whether another page follows.
    pub fn fetch(&self) -> i64 {
        self.limit.saturating_add(1)
    }
}

/// One page of a listing and the cursor of the next, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Where a newest-first page over `(created_at, id)` starts: after the row with this creation
/// time and id (compared as a pair, so rows created in the same microsecond are not skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "(i64, Uuid)", try_from = "(i64, Uuid)")]
pub struct After {
    pub created_at: DateTime<Utc>,
    pub id: Uuid,
}

impl After {
    pub fn new(created_at: DateTime<Utc>, id: Uuid) -> Self {
        Self { created_at, id }
    }
}

impl From<After> for (i64, Uuid) {
    fn from(after: After) -> Self {
        (after.created_at.timestamp_micros(), after.id)
    }
}

impl TryFrom<(i64, Uuid)> for After {
    type Error = String;

    fn try_from((micros, id): (i64, Uuid)) -> Result<Self, String> {
        let created_at = DateTime::<Utc>::from_timestamp_micros(micros)
            .ok_or_else(|| format!("time {micros} out of range"))?;
        Ok(Self { created_at, id })
    }
}

/// One listing of the mesh, by the name its cursors carry (`orders`, `webhook_deliveries`):
/// a cursor is accepted only by the listing that issued it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listing(&'static str);

#[derive(Serialize, Deserialize)]
struct Wrapped<P> {
    #[serde(rename = "l")]
    listing: String,
    #[serde(rename = "p")]
    position: P,
}

fn check(json: &[u8]) -> [u8; CHECK_LEN] {
    let digest = Sha256::digest(json);
    let mut check = [0; CHECK_LEN];
    check.copy_from_slice(&digest[..CHECK_LEN]);
    check
}

fn invalid_cursor() -> ApiError {
    ApiError::field(
        ErrorCode::InvalidCursor,
        "cursor",
        "the cursor is not valid for this listing; pass back pagination.nextCursor unchanged",
    )
}

impl Listing {
    /// Names a listing; the name must be unique in the mesh.
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    /// The name its cursors carry.
    pub fn name(self) -> &'static str {
        self.0
    }

    /// Encodes `position` as an opaque cursor of this listing.
    pub fn encode<P: Serialize>(self, position: &P) -> String {
        let wrapped = Wrapped {
            listing: self.0.to_owned(),
            position,
        };
        let mut bytes = serde_json::to_vec(&wrapped).expect("a cursor position serializes");
        let check = check(&bytes);
        bytes.extend_from_slice(&check);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes a cursor of this listing; `invalid_cursor` when it does not decode, was edited or
    /// belongs to another listing.
    pub fn decode<P: DeserializeOwned>(self, cursor: &str) -> Result<P, ApiError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor.as_bytes())
            .map_err(|_| invalid_cursor())?;
        let split = bytes.len().checked_sub(CHECK_LEN).ok_or_else(invalid_cursor)?;
        let (json, received) = bytes.split_at(split);
        if check(json) != received {
            return Err(invalid_cursor());
        }
        let wrapped: Wrapped<P> = serde_json::from_slice(json).map_err(|_| invalid_cursor())?;
        if wrapped.listing != self.0 {
            return Err(invalid_cursor());
        }
        Ok(wrapped.position)
    }

    /// The position the requested page starts after: `None` for the first page.
    pub fn after<P: DeserializeOwned>(self, page: &PageRequest) -> Result<Option<P>, ApiError> {
        page.cursor
            .as_deref()
            .map(|cursor| self.decode(cursor))
            .transpose()
    }

    /// Cuts a read of [`PageRequest::fetch`] rows to the page and, when a row was left over,
    /// encodes the cursor of the last row kept (its `position`).
    pub fn page<T, P: Serialize>(
        self,
        page: &PageRequest,
        mut rows: Vec<T>,
        position: impl Fn(&T) -> P,
    ) -> Page<T> {
        let limit = usize::try_from(page.limit).unwrap_or(usize::MAX);
        if rows.len() <= limit {
            return Page {
                items: rows,
                next_cursor: None,
            };
        }
        rows.truncate(limit);
        let next_cursor = rows.last().map(|last| self.encode(&position(last)));
        Page {
            items: rows,
            next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORDERS: Listing = Listing::new("orders");
    const INVOICES: Listing = Listing::new("invoices");

    fn position() -> After {
        After::new(crate::time::now(), Uuid::now_v7())
    }

    #[test]
    fn a_cursor_round_trips_in_its_own_listing_only() {
        let after = position();
        let cursor = ORDERS.encode(&after);
        assert_eq!(ORDERS.decode::<After>(&cursor).unwrap(), after);
        let error = INVOICES.decode::<After>(&cursor).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidCursor);
        assert_eq!(error.details.unwrap()["field"], "cursor");
    }

    #[test]
    fn malformed_and_tampered_cursors_are_invalid_cursor() {
        let cursor = ORDERS.encode(&position());
        let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        // One byte of the JSON edited (the listing's first letter), the check left as it was.
        let edited = bytes.iter().position(|byte| *byte == b'"').unwrap() + 1;
        bytes[edited] = if bytes[edited] == b'a' { b'b' } else { b'a' };
        let tampered = URL_SAFE_NO_PAD.encode(&bytes);
        // The JSON alone, as a client who guessed the format would build it.
        let unchecked = URL_SAFE_NO_PAD.encode(&bytes[..bytes.len() - CHECK_LEN]);
        for bad in [
            "%%%",
            "",
            "AAAA",
            &cursor[..cursor.len() - 2],
            &tampered,
            &unchecked,
        ] {
            assert_eq!(
                ORDERS.decode::<After>(bad).unwrap_err().code,
                ErrorCode::InvalidCursor,
                "{bad:?}"
            );
        }
        let wrong_shape = ORDERS.encode(&("not", "a position"));
        assert_eq!(
            ORDERS.decode::<After>(&wrong_shape).unwrap_err().code,
            ErrorCode::InvalidCursor
        );
    }

    #[test]
    fn a_page_keeps_the_limit_and_points_after_its_last_row() {
        let page = PageRequest::new(Some(2), Some(String::new())).unwrap();
        assert_eq!((page.fetch(), page.cursor.as_deref()), (3, None));
        let rows: Vec<After> = (0..3).map(|_| position()).collect();
        let cut = ORDERS.page(&page, rows.clone(), |row| *row);
        assert_eq!(cut.items, rows[..2]);
        let next = PageRequest::new(Some(2), cut.next_cursor).unwrap();
        assert_eq!(ORDERS.after::<After>(&next).unwrap(), Some(rows[1]));
        let last = ORDERS.page(&page, rows[..2].to_vec(), |row| *row);
        assert_eq!(last.next_cursor, None);
    }

    #[test]
    fn limits_outside_one_to_two_hundred_are_refused() {
        assert_eq!(page_limit(None).unwrap(), 50);
        assert_eq!(page_limit(Some(200)).unwrap(), 200);
        assert!(page_limit(Some(0)).is_err());
        assert!(PageRequest::new(Some(201), None).is_err());
    }
}

//! SQL of payments-svc (schema `payments`). Functions take a connection or transaction; the use
//! cases in `service` own `begin`/`commit`. Every query on customer data filters by customer id,
//! except the staff lookups named as such.

pub mod invoices;
pub mod payments;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Where a newest-first page starts: after the row with this creation time and id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct After {
    pub created_at: DateTime<Utc>,
    pub id: Uuid,
}

/// Builds the decode error of a column holding a value outside its closed set.
fn bad_value(column: &str, value: &str) -> sqlx::Error {
    sqlx::Error::Decode(format!("unexpected {column} value {value:?}").into())
}

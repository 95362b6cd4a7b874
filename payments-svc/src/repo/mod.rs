//! SQL of payments-svc (schema `payments`). Functions take a connection or transaction; the use
//! cases in `service` own `begin`/`commit`. Every query on customer data filters by customer id,
//! except the staff lookups named as such.

pub mod checkout;
pub mod invoices;
pub mod payments;
pub mod refunds;
pub mod spend;

/// Builds the decode error of a column holding a value outside its closed set.
fn bad_value(column: &str, value: &str) -> sqlx::Error {
    sqlx::Error::Decode(format!("unexpected {column} value {value:?}").into())
}

//! SQL of the `orders` schema. Every function takes a connection (or transaction) that the use
//! case owns, every statement is schema-qualified, and every statement that touches customer data
//! filters by `customer_id`.

pub mod cancellation;
mod read;
pub mod samples;
pub mod support;
pub mod view;
mod write;

pub use read::{ListFilter, find_order, list_orders, order_status};
pub use write::{
    InvoiceMerge, insert_order, insert_status_change, lock_order, next_order_sequence, quote_consumed,
    set_invoice_status, set_status, store_invoice_summary, store_stablecoin_request,
};

/// Name of the unique constraint that makes one quote yield at most one order.
pub const QUOTE_UNIQUE_CONSTRAINT: &str = "orders_quote_id_key";

/// A stored value that does not decode into the domain (a bug or a manual edit).
fn corrupt(what: &str, value: &str) -> sqlx::Error {
    sqlx::Error::Decode(format!("stored {what} {value:?} is not valid").into())
}

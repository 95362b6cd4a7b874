//! Every SQL statement of shipping-svc, schema-qualified, each filtering by customer where it
//! reads customer data (staff and carrier paths name the shipment by tracking number only).

pub mod cancellations;
pub mod emails;
pub mod pickups;
pub mod shipments;
pub mod webhook_events;

/// A stored value this code cannot read back (a status it never writes).
pub(crate) fn bad_value(what: &str, value: &str) -> sqlx::Error {
    sqlx::Error::Decode(format!("unexpected {what} {value:?}").into())
}

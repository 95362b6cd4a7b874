//! Transport-free domain of orders: the validated create-order request, the quote rules that
//! turn it into an order, the order and its parts, the status state machine, payment rails and
//! order references. No SQL, no gRPC.

pub mod addon;
pub mod cancellation;
pub mod eta;
pub(crate) mod fields;
pub mod order;
pub mod payment_method;
pub mod quote;
pub mod reference;
pub mod request;
pub mod sample;
pub mod sample_items;
pub mod sample_metadata;
pub mod status;
pub mod support;

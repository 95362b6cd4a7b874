//! Identity domain of the gateway, free of SQL and transport: the API-key format and its
//! peppered verifier, and the validated inputs of customers and keys.

pub mod api_key;
pub mod customer;

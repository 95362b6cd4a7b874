//! Identity domain, free of SQL and transport: the API-key format and its
//! peppered verifier, the validated inputs of customers and keys, and lab operators.

pub mod api_key;
pub mod customer;
pub mod operator;
pub mod scopes;

//! shipping-svc against real PostgreSQL: the use cases and the event handler driven directly
//! (the peers it calls over gRPC are not needed by what is tested here), the EasyPost adapter
//! against a local double of the API calls it makes.

mod carrier_double;
mod helpers;
mod label_void;

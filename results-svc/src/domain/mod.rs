//! Transport-free domain of results: the COA and its workflow state machine, the validation of
//! analyte rows, the content signature with its key set, and the public verification rule. No
//! SQL, no gRPC.

pub mod analyte;
pub mod coa;
pub mod coa_keys;
pub mod signing;
pub mod verification;

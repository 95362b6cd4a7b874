//! Domain of catalog-svc, free of SQL and gRPC: the catalog document and its validation, the
//! listing rules (filters, includes, cursors) and quote validation and pricing.

pub mod catalog;
pub mod document;
pub mod item;
pub mod listing;
pub mod quote;

#[cfg(test)]
pub mod fixture;

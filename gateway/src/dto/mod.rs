//! JSON shapes of the REST interface (camelCase, money in integer `...Cents`, RFC 3339 times)
//! and their conversions from the services' protobuf messages.
//!
//! Envelopes: a single resource is `{ "data": { "<resourceName>": { … } } }` (the spec's
//! raw-data shape `{ data: { rawData } }` applied to every resource); a list is
//! `{ "data": [ … ], "pagination": { "nextCursor": "…" | null } }`; an error is
//! `{ "error": { "code", "message", "details"? } }`. Absent optional values are `null`, not
//! omitted. Request bodies refuse unknown fields at every level.

pub mod billing;
pub mod catalog;
pub mod common;
pub mod data;
pub mod export;
pub mod lab;
pub mod notifications;
pub mod orders;
pub mod quotes;
pub mod registry;
pub mod results;
pub mod sandbox;
pub mod shipping;
pub mod stablecoin;
pub mod support;
pub mod webhooks;

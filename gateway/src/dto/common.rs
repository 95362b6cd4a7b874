//! Shapes shared by every operation: the error envelope, pagination, time conversion, and the
//! macros that declare single-resource and list envelopes.

use chrono::{DateTime, Utc};
use platform::error::ApiError;
use serde::{Serialize, Serializer};
use utoipa::ToSchema;

/// The error envelope of every failed request.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// An error: a stable code from the closed table, a lowercase message, optional details.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code, for example `insufficient_scope`.
    #[schema(example = "invalid_body")]
    pub code: String,
    pub message: String,
    /// Structured details: `field`, `path`/`reason`, `required`, `retryAfterSeconds`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

impl From<&ApiError> for ErrorEnvelope {
    fn from(error: &ApiError) -> Self {
        Self {
            error: ErrorBody {
                code: error.code.as_str().to_owned(),
                message: error.message.clone(),
                details: error.details.clone(),
            },
        }
    }
}

/// Where the next page starts.
#[derive(Serialize, ToSchema, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    /// Opaque cursor of the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Serializes a time as RFC 3339 UTC with microseconds (`2026-07-17T10:00:00.123456Z`).
pub fn rfc3339<S: Serializer>(time: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&platform::time::rfc3339(*time))
}

/// Serializes an optional time like [`rfc3339`], or `null`.
pub fn rfc3339_opt<S: Serializer>(time: &Option<DateTime<Utc>>, serializer: S) -> Result<S::Ok, S::Error> {
    match time {
        Some(time) => rfc3339(time, serializer),
        None => serializer.serialize_none(),
    }
}

/// Converts a timestamp that a service must send; its absence is an internal error.
pub fn required_time(
    timestamp: Option<&prost_types::Timestamp>,
    what: &str,
) -> Result<DateTime<Utc>, ApiError> {
    timestamp
        .and_then(platform::time::from_timestamp)
        .ok_or_else(|| ApiError::internal(format!("a service answered without a valid {what}")))
}

/// Converts an optional timestamp.
pub fn optional_time(timestamp: Option<&prost_types::Timestamp>) -> Option<DateTime<Utc>> {
    timestamp.and_then(platform::time::from_timestamp)
}

/// Returns `None` for an empty string (proto3 strings have no absence).
pub fn non_empty(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

/// Declares `$envelope { data: $data }` and `$data { $field: $resource }`: the shape
/// `{ "data": { "<field>": { … } } }` of a single resource.
macro_rules! single_envelope {
    ($envelope:ident, $data:ident, $field:ident: $resource:ty) => {
        #[doc = concat!("`{ \"data\": { \"", stringify!($field), "\": … } }`")]
        #[derive(serde::Serialize, utoipa::ToSchema)]
        pub struct $envelope {
            pub data: $data,
        }

        #[doc = concat!("The `data` object holding one `", stringify!($field), "`.")]
        #[derive(serde::Serialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $data {
            pub $field: $resource,
        }

        impl From<$resource> for $envelope {
            fn from(resource: $resource) -> Self {
                Self {
                    data: $data { $field: resource },
                }
            }
        }
    };
}

/// Declares `$list { data: [$item], pagination }`.
macro_rules! list_envelope {
    ($list:ident, $item:ty) => {
        #[doc = concat!("A page of `", stringify!($item), "`: `{ \"data\": [ … ], \"pagination\": { \"nextCursor\" } }`.")]
        #[derive(serde::Serialize, utoipa::ToSchema)]
        pub struct $list {
            pub data: Vec<$item>,
            pub pagination: $crate::dto::common::Pagination,
        }

        impl $list {
            pub fn new(data: Vec<$item>, next_cursor: Option<String>) -> Self {
                Self { data, pagination: $crate::dto::common::Pagination { next_cursor } }
            }
        }
    };
}

pub(crate) use {list_envelope, single_envelope};

//! Conversions between `chrono` times, protobuf `Timestamp`s and RFC 3339 strings.

use chrono::{DateTime, SecondsFormat, Utc};

/// Converts a UTC time to a protobuf timestamp.
pub fn to_timestamp(time: DateTime<Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: time.timestamp(),
        nanos: time.timestamp_subsec_nanos() as i32,
    }
}

/// Converts an optional UTC time to an optional protobuf timestamp.
pub fn to_timestamp_opt(time: Option<DateTime<Utc>>) -> Option<prost_types::Timestamp> {
    time.map(to_timestamp)
}

/// Converts a protobuf timestamp to UTC time; `None` when out of range.
pub fn from_timestamp(timestamp: &prost_types::Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(timestamp.seconds, u32::try_from(timestamp.nanos).ok()?)
}

/// Formats a time as RFC 3339 UTC with microseconds (`2026-07-17T10:00:00.123456Z`).
pub fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Formats a protobuf timestamp as RFC 3339, or `None` when absent or out of range.
pub fn timestamp_rfc3339(timestamp: Option<&prost_types::Timestamp>) -> Option<String> {
    timestamp.and_then(from_timestamp).map(rfc3339)
}

/// Returns the current time truncated to microseconds, the precision PostgreSQL stores.
pub fn now() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

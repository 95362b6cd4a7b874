//! EasyPost's tracker webhooks: verifying a delivery's timestamped signature
//! (`X-Hmac-Signature-V2` over `X-Timestamp` + `POST` + `X-Path` + the raw body, the timestamp
//! within the tolerance) and reading its event (id, description, scans).

use super::EasyPostCarrier;
use crate::domain::{Normalize, Scan, ShipmentStatus};
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::Value;
use sha2::Sha256;
use std::time::Duration;

/// Prefix of EasyPost's webhook signature header values.
pub const SIGNATURE_PREFIX: &str = "hmac-sha256-hex=";
/// Header of the signature that covers the timestamp, the path and the body.
pub const SIGNATURE_HEADER: &str = "x-hmac-signature-v2";
/// Header of the delivery's timestamp (RFC 2822, e.g. `Tue, 19 Aug 2025 20:37:09 -0000`).
pub const TIMESTAMP_HEADER: &str = "x-timestamp";
/// Header of the request path EasyPost signed.
pub const PATH_HEADER: &str = "x-path";
/// The method EasyPost delivers webhooks with; part of the signed string.
pub const WEBHOOK_METHOD: &str = "POST";
/// Default largest distance between a delivery's signed timestamp and now (as the Stripe
/// adapter of payments-svc): a captured delivery replays for at most this long, and the
/// event-id record catches a replay inside it.
pub const DEFAULT_WEBHOOK_TOLERANCE: Duration = Duration::from_secs(300);

impl EasyPostCarrier {
    /// Verifies a webhook delivery: the signature over its timestamp, path and exact body, then
    /// the timestamp within the tolerance of `now`. Answers the signed timestamp.
    pub fn verify_webhook(
        &self,
        delivery: &WebhookDelivery<'_>,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, WebhookRefusal> {
        if [delivery.signature, delivery.timestamp, delivery.path]
            .iter()
            .any(|value| value.trim().is_empty())
        {
            return Err(WebhookRefusal::Unsigned);
        }
        let given = delivery
            .signature
            .trim()
            .strip_prefix(SIGNATURE_PREFIX)
            .and_then(|hex_mac| hex::decode(hex_mac).ok())
            .ok_or(WebhookRefusal::Forged)?;
        webhook_mac(
            self.settings.webhook_secret.expose_secret(),
            delivery.timestamp,
            delivery.path,
            delivery.body,
        )
        .verify_slice(&given)
        .map_err(|_| WebhookRefusal::Forged)?;
        let signed_at = parse_timestamp(delivery.timestamp).ok_or(WebhookRefusal::UnreadableTimestamp)?;
        // A tolerance too large to represent cannot be configured (see `config.rs`); fail closed.
        let tolerance = chrono::Duration::from_std(self.settings.webhook_tolerance).unwrap_or_default();
        if (now - signed_at).abs() > tolerance {
            return Err(WebhookRefusal::OutsideTolerance);
        }
        Ok(signed_at)
    }

    /// The `X-Hmac-Signature-V2` value of a delivery of `body` to `path` at `timestamp` (the
    /// header values as sent) with `secret` (for the API double and tests).
    pub fn sign_webhook(secret: &str, timestamp: &str, path: &str, body: &[u8]) -> String {
        let mac = webhook_mac(secret, timestamp, path, body);
        format!("{SIGNATURE_PREFIX}{}", hex::encode(mac.finalize().into_bytes()))
    }
}

/// One webhook delivery as received: the exact body and the values of the signature headers.
#[derive(Clone, Copy, Debug)]
pub struct WebhookDelivery<'a> {
    pub body: &'a [u8],
    /// `X-Hmac-Signature-V2`.
    pub signature: &'a str,
    /// `X-Timestamp`.
    pub timestamp: &'a str,
    /// `X-Path`.
    pub path: &'a str,
}

/// Why a webhook delivery is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebhookRefusal {
    /// A signature header, the timestamp or the path is missing (a legacy body-only signature
    /// included).
    #[error(
        "the webhook is not signed with a timestamp (x-hmac-signature-v2, x-timestamp and x-path are required)"
    )]
    Unsigned,
    /// The signature does not match: forged, or the body, timestamp or path was edited.
    #[error("invalid webhook signature")]
    Forged,
    /// Signed, but the timestamp is not a date.
    #[error("the webhook timestamp is not an RFC 2822 date")]
    UnreadableTimestamp,
    /// Signed, but too old (a replay) or too far in the future.
    #[error("the webhook timestamp is outside the tolerance")]
    OutsideTolerance,
}

/// HMAC-SHA256 with `secret` over `timestamp`, `POST`, `path` and `body`, concatenated.
fn webhook_mac(secret: &str, timestamp: &str, path: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.as_bytes());
    mac.update(WEBHOOK_METHOD.as_bytes());
    mac.update(path.as_bytes());
    mac.update(body);
    mac
}

/// An `X-Timestamp` value: RFC 2822 as EasyPost sends it, or RFC 3339.
fn parse_timestamp(value: &str) -> Option<DateTime<Utc>> {
    let value = value.trim();
    DateTime::parse_from_rfc2822(value)
        .or_else(|_| DateTime::parse_from_rfc3339(value))
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    id: String,
    #[serde(default)]
    description: String,
    /// The object the event is about: a tracker for `tracker.*` events (read only for them).
    result: Option<Value>,
}

#[derive(Deserialize)]
struct TrackerResult {
    #[serde(default)]
    id: String,
    tracking_code: String,
    #[serde(default)]
    tracking_details: Vec<TrackingDetail>,
}

#[derive(Deserialize)]
struct TrackingDetail {
    #[serde(default)]
    message: String,
    status: String,
    #[serde(default)]
    status_detail: String,
    datetime: DateTime<Utc>,
    tracking_location: Option<TrackingLocation>,
}

#[derive(Deserialize, Default)]
struct TrackingLocation {
    city: Option<String>,
    state: Option<String>,
    country: Option<String>,
}

/// A webhook event as this service reads it.
#[derive(Clone, Debug)]
pub struct WebhookEvent {
    /// The event's id (`evt_…`), the same in every delivery of the event.
    pub id: String,
    /// What happened (`tracker.updated`).
    pub description: String,
    /// The scans of a tracker event; none for other events.
    pub scans: Vec<Scan>,
}

/// Reads a webhook event body: its id (required), its description and, for a
/// `tracker.updated` (or `tracker.created`) event, its scans. Each tracking detail is one
/// scan, identified by tracker, time and status for deduplication.
pub fn read_event(body: &[u8]) -> Result<WebhookEvent, String> {
    let event: Event = serde_json::from_slice(body).map_err(|error| error.to_string())?;
    if event.id.trim().is_empty() {
        return Err("the event has no id".to_owned());
    }
    let mut scans = Vec::new();
    if event.description.starts_with("tracker.")
        && let Some(result) = event.result
    {
        let tracker: TrackerResult = serde_json::from_value(result).map_err(|error| error.to_string())?;
        for detail in tracker.tracking_details {
            let Some(status) = ShipmentStatus::from_easypost(&detail.status) else {
                continue;
            };
            let location = detail.tracking_location.unwrap_or_default();
            let location = [location.city, location.state, location.country]
                .into_iter()
                .flatten()
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join(", ");
            scans.push(Scan {
                tracking_number: tracker.tracking_code.clone(),
                status,
                status_code: if detail.status_detail.is_empty() {
                    detail.status.clone()
                } else {
                    detail.status_detail.clone()
                },
                description: detail.message,
                location,
                carrier_event_id: format!("{}:{}:{}", tracker.id, detail.datetime.timestamp(), detail.status),
                occurred_at: detail.datetime,
            });
        }
    }
    Ok(WebhookEvent {
        id: event.id,
        description: event.description,
        scans,
    })
}

#[cfg(test)]
mod tests {
    use super::super::EasyPostSettings;
    use super::*;
    use serde_json::json;

    const PATH: &str = "/api/v1/carriers/easypost/webhooks";

    fn adapter(secret: &str) -> EasyPostCarrier {
        EasyPostCarrier::new(EasyPostSettings {
            base_url: "http://127.0.0.1:9".to_owned(),
            api_key: "EZTK_test".to_owned().into(),
            webhook_secret: secret.to_owned().into(),
            webhook_tolerance: DEFAULT_WEBHOOK_TOLERANCE,
            carrier: "UPS".to_owned(),
            service: "Ground".to_owned(),
        })
        .unwrap()
    }

    fn at(rfc3339: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(rfc3339).unwrap().with_timezone(&Utc)
    }

    fn delivery<'a>(body: &'a [u8], signature: &'a str, timestamp: &'a str) -> WebhookDelivery<'a> {
        WebhookDelivery {
            body,
            signature,
            timestamp,
            path: PATH,
        }
    }

    #[test]
    fn a_webhook_verifies_only_with_its_secret_over_the_exact_timestamp_path_and_body() {
        let body = br#"{"id":"evt_1","description":"tracker.updated"}"#;
        let timestamp = "Tue, 19 Aug 2025 20:37:09 -0000";
        let now = at("2025-08-19T20:38:00Z");
        let signature = EasyPostCarrier::sign_webhook("whsec", timestamp, PATH, body);
        let signed = delivery(body, &signature, timestamp);
        assert_eq!(
            adapter("whsec").verify_webhook(&signed, now),
            Ok(at("2025-08-19T20:37:09Z"))
        );
        assert_eq!(
            adapter("other").verify_webhook(&signed, now),
            Err(WebhookRefusal::Forged)
        );
        let edited_body = br#"{"id":"evt_1","description":"tracker.updated" }"#;
        assert_eq!(
            adapter("whsec").verify_webhook(&delivery(edited_body, &signature, timestamp), now),
            Err(WebhookRefusal::Forged)
        );
        let edited_time = "Tue, 19 Aug 2025 20:37:59 -0000";
        assert_eq!(
            adapter("whsec").verify_webhook(&delivery(body, &signature, edited_time), now),
            Err(WebhookRefusal::Forged)
        );
        let other_path = WebhookDelivery {
            path: "/elsewhere",
            ..signed
        };
        assert_eq!(
            adapter("whsec").verify_webhook(&other_path, now),
            Err(WebhookRefusal::Forged)
        );
        assert_eq!(
            adapter("whsec").verify_webhook(&delivery(body, "sha256=00", timestamp), now),
            Err(WebhookRefusal::Forged)
        );
        assert_eq!(
            adapter("whsec").verify_webhook(&delivery(body, &signature, ""), now),
            Err(WebhookRefusal::Unsigned)
        );
        assert_eq!(
            adapter("whsec").verify_webhook(&delivery(body, "", timestamp), now),
            Err(WebhookRefusal::Unsigned)
        );
    }

    #[test]
    fn a_signed_timestamp_outside_the_tolerance_either_way_is_refused() {
        let body = br#"{"id":"evt_1","description":"tracker.updated"}"#;
        let check = |timestamp: &str, now: &str| {
            let signature = EasyPostCarrier::sign_webhook("whsec", timestamp, PATH, body);
            adapter("whsec").verify_webhook(&delivery(body, &signature, timestamp), at(now))
        };
        let sent = "Tue, 19 Aug 2025 20:37:09 +0000";
        assert!(
            check(sent, "2025-08-19T20:42:09Z").is_ok(),
            "300 s late is inside"
        );
        assert_eq!(
            check(sent, "2025-08-19T20:42:10Z"),
            Err(WebhookRefusal::OutsideTolerance)
        );
        assert!(
            check(sent, "2025-08-19T20:32:09Z").is_ok(),
            "300 s early is inside"
        );
        assert_eq!(
            check(sent, "2025-08-19T20:32:08Z"),
            Err(WebhookRefusal::OutsideTolerance)
        );
        assert!(check("Tue, 19 Aug 2025 22:37:09 +0200", "2025-08-19T20:37:09Z").is_ok());
        assert!(check("2025-08-19T20:37:09Z", "2025-08-19T20:37:09Z").is_ok());
        assert_eq!(
            check("yesterday", "2025-08-19T20:37:09Z"),
            Err(WebhookRefusal::UnreadableTimestamp)
        );
    }

    #[test]
    fn tracking_details_become_scans_of_the_identified_event() {
        let body = json!({
            "object": "Event", "id": "evt_0123", "description": "tracker.updated",
            "result": { "object": "Tracker", "id": "trk_1", "tracking_code": "1Z999AA10123456784",
                "status": "in_transit",
                "tracking_details": [
                    { "message": "Origin Scan", "status": "in_transit", "status_detail": "arrived_at_facility",
                      "datetime": "2026-11-23T10:00:00Z",
                      "tracking_location": { "city": "Chicago", "state": "IL", "country": "US" } },
                    { "message": "?", "status": "unknown", "datetime": "2026-11-23T11:00:00Z" }
                ] }
        });
        let event = read_event(body.to_string().as_bytes()).unwrap();
        assert_eq!(event.id, "evt_0123");
        assert_eq!(event.description, "tracker.updated");
        let scans = event.scans;
        assert_eq!(scans.len(), 1);
        assert_eq!(scans[0].status, ShipmentStatus::InTransit);
        assert_eq!(scans[0].location, "Chicago, IL, US");
        assert_eq!(scans[0].status_code, "arrived_at_facility");
        let other = read_event(br#"{"id":"evt_2","description":"batch.updated","result":{}}"#).unwrap();
        assert!(other.scans.is_empty());
        assert!(read_event(br#"{"description":"tracker.updated"}"#).is_err());
    }
}

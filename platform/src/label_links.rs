//! Signed, expiring label download URLs, minted by shipping-svc (`GET /shipments/{ref}/label`)
//! and by orders-svc (the `shipping` block of `GET /orders/{reference}`, from its read model),
//! and verified by shipping-svc when the PDF is downloaded. Both hold the same key.
//!
//! A URL is `{public base}/api/v1/files/labels/{shipment id}.pdf?expires=<unix>&signature=<hex>`
//! where the signature is HMAC-SHA256 over `label:{shipment id}:{expires}`; it lasts `ttl` (one
//! hour by default), rounded up to the next five-minute boundary so that repeated reads answer
//! the same URL.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The published development key of label URLs (shipping-svc's development signing key);
/// refused outside development mode.
pub const DEVELOPMENT_KEY: &str = "shipping-svc-development-signing-key-0000";

/// Label URLs expire on multiples of this many seconds (Unix time).
pub const EXPIRY_STEP_SECONDS: i64 = 300;

/// The key and shape of label URLs.
#[derive(Clone)]
pub struct LabelLinks {
    key: Arc<Vec<u8>>,
    public_base_url: Arc<str>,
    ttl: Duration,
}

impl std::fmt::Debug for LabelLinks {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LabelLinks")
            .field("public_base_url", &self.public_base_url)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl LabelLinks {
    pub fn new(key: Vec<u8>, public_base_url: &str, ttl: Duration) -> Self {
        Self {
            key: Arc::new(key),
            public_base_url: public_base_url.trim_end_matches('/').into(),
            ttl,
        }
    }

    fn signature(&self, shipment_id: Uuid, expires: i64) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).ok()?;
        mac.update(format!("label:{shipment_id}:{expires}").as_bytes());
        Some(mac)
    }

    /// The signed URL of the shipment's label and when it expires, as of `now`.
    pub fn signed_url(&self, shipment_id: Uuid, now: DateTime<Utc>) -> (String, DateTime<Utc>) {
        let ttl = i64::try_from(self.ttl.as_secs()).unwrap_or(3600);
        let earliest = now.timestamp() + ttl;
        let expires =
            earliest + (EXPIRY_STEP_SECONDS - earliest.rem_euclid(EXPIRY_STEP_SECONDS)) % EXPIRY_STEP_SECONDS;
        let expires_at = DateTime::from_timestamp(expires, 0).unwrap_or(now);
        let signature = self
            .signature(shipment_id, expires)
            .map(|mac| hex::encode(mac.finalize().into_bytes()))
            .unwrap_or_default();
        let url = format!(
            "{}/api/v1/files/labels/{shipment_id}.pdf?expires={expires}&signature={signature}",
            self.public_base_url
        );
        (url, expires_at)
    }

    /// True when `signature` (hex) is this key's signature of the shipment and expiry (the
    /// expiry itself is the caller's check).
    pub fn verify(&self, shipment_id: Uuid, expires: i64, signature: &str) -> bool {
        let Ok(given) = hex::decode(signature) else {
            return false;
        };
        self.signature(shipment_id, expires)
            .is_some_and(|mac| mac.verify_slice(&given).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_url_verifies_until_edited_and_expires_on_a_five_minute_boundary() {
        let links = LabelLinks::new(b"key".to_vec(), "https://lab.example/", Duration::from_secs(3600));
        let id = Uuid::now_v7();
        let now = DateTime::from_timestamp(1_800_000_001, 0).unwrap();
        let (url, expires_at) = links.signed_url(id, now);
        assert_eq!(expires_at.timestamp() % EXPIRY_STEP_SECONDS, 0);
        assert!(expires_at.timestamp() >= now.timestamp() + 3600);
        assert!(url.starts_with(&format!(
            "https://lab.example/api/v1/files/labels/{id}.pdf?expires="
        )));
        let signature = url.rsplit("signature=").next().unwrap();
        assert!(links.verify(id, expires_at.timestamp(), signature));
        assert!(!links.verify(id, expires_at.timestamp() + 1, signature));
        let other = LabelLinks::new(
            b"other".to_vec(),
            "https://lab.example",
            Duration::from_secs(3600),
        );
        assert!(!other.verify(id, expires_at.timestamp(), signature));
        assert_eq!(links.signed_url(id, now + chrono::Duration::seconds(60)).0, url);
    }
}

//! Door pickups: which dates and windows are offered, and the signed quote token that binds the
//! offer to one order, its dates and its price.
//!
//! Dates: the next [`PickupRules::days_offered`] business days (Monday to Friday, not a
//! configured holiday), starting today when the request comes before the cut-off time (UTC) and
//! tomorrow otherwise. Every date offers the same windows. The token is
//! `base64url(JSON claims) "." base64url(HMAC-SHA256(key, JSON claims))` and expires after
//! [`PickupRules::token_ttl`].

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, Utc, Weekday};
use hmac::{Hmac, Mac};
use platform::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

/// A pickup window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub id: String,
    pub start: String,
    pub end: String,
}

/// What a deployment offers.
#[derive(Clone, Debug)]
pub struct PickupRules {
    pub price_cents: i64,
    pub days_offered: usize,
    /// Requests after this time of day (UTC) cannot be picked up the same day.
    pub cutoff: NaiveTime,
    pub holidays: Vec<NaiveDate>,
    pub windows: Vec<Window>,
    pub token_ttl: Duration,
}

impl Default for PickupRules {
    fn default() -> Self {
        let window = |start: &str, end: &str| Window {
            id: format!("{start}-{end}"),
            start: start.to_owned(),
            end: end.to_owned(),
        };
        Self {
            price_cents: 1_500,
            days_offered: 5,
            cutoff: NaiveTime::from_hms_opt(10, 0, 0).unwrap_or_default(),
            holidays: Vec::new(),
            windows: vec![
                window("09:00", "12:00"),
                window("12:00", "15:00"),
                window("15:00", "18:00"),
            ],
            token_ttl: Duration::minutes(15),
        }
    }
}

impl PickupRules {
    /// The dates offered at `now`.
    pub fn dates(&self, now: DateTime<Utc>) -> Vec<NaiveDate> {
        let mut day = now.date_naive();
        if now.time() >= self.cutoff {
            day += Duration::days(1);
        }
        let mut dates = Vec::with_capacity(self.days_offered);
        while dates.len() < self.days_offered {
            let weekend = matches!(day.weekday(), Weekday::Sat | Weekday::Sun);
            if !weekend && !self.holidays.contains(&day) {
                dates.push(day);
            }
            day += Duration::days(1);
        }
        dates
    }

    /// The window with id `id`.
    pub fn window(&self, id: &str) -> Option<&Window> {
        self.windows.iter().find(|window| window.id == id)
    }
}

/// What a quote token binds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteClaims {
    /// Customer.
    pub c: Uuid,
    /// Order.
    pub o: Uuid,
    /// Shipment.
    pub s: Uuid,
    /// Dates offered (YYYY-MM-DD).
    pub d: Vec<String>,
    /// Window ids offered.
    pub w: Vec<String>,
    /// Price in cents.
    pub p: i64,
    /// Expiry (Unix seconds).
    pub e: i64,
}

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(payload);
    mac.finalize().into_bytes().to_vec()
}

/// Signs `claims` into a token.
pub fn sign(key: &[u8], claims: &QuoteClaims) -> String {
    let payload = serde_json::to_vec(claims).unwrap_or_default();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(mac(key, &payload))
    )
}

/// The token was not issued by this service for this order, or was edited.
pub fn invalid_token() -> ApiError {
    ApiError::field(
        ErrorCode::PickupQuoteInvalid,
        "quoteToken",
        "the pickup quote token is not valid for this order",
    )
}

/// Verifies a token's signature, its order and customer and its expiry at `now`.
pub fn verify(
    key: &[u8],
    token: &str,
    customer_id: Uuid,
    order_id: Uuid,
    now: DateTime<Utc>,
) -> Result<QuoteClaims, ApiError> {
    let (payload, signature) = token.split_once('.').ok_or_else(invalid_token)?;
    let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid_token())?;
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| invalid_token())?;
    let mut check = HmacSha256::new_from_slice(key).map_err(|_| invalid_token())?;
    check.update(&payload);
    check.verify_slice(&signature).map_err(|_| invalid_token())?;
    let claims: QuoteClaims = serde_json::from_slice(&payload).map_err(|_| invalid_token())?;
    if claims.c != customer_id || claims.o != order_id {
        return Err(invalid_token());
    }
    if claims.e <= now.timestamp() {
        return Err(ApiError::field(
            ErrorCode::PickupQuoteExpired,
            "quoteToken",
            "the pickup quote token has expired; read the pickup options again",
        ));
    }
    Ok(claims)
}

/// A requested or booked door pickup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pickup {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub shipment_id: Uuid,
    pub order_id: Uuid,
    /// awaiting_payment, booked, payment_expired or cancelled.
    pub status: PickupStatus,
    pub date: NaiveDate,
    pub window: String,
    pub price_cents: i64,
    pub pay_url: String,
    /// The hosted checkout session (payments-svc) that takes the payment.
    pub checkout_session_id: Option<String>,
    /// When the payment link stops taking payments.
    pub pay_expires_at: Option<DateTime<Utc>>,
    pub payment_reference: Option<String>,
    pub confirmation_number: Option<String>,
    /// The carrier's pickup, recorded before it is bought (`None` until then; empty for the
    /// sandbox, which has no such step).
    pub carrier_pickup_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub booked_at: Option<DateTime<Utc>>,
}

/// Where a door pickup stands (its name is the `status` of REST and SQL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PickupStatus {
    /// Waiting for its payment.
    AwaitingPayment,
    /// Booked with the carrier.
    Booked,
    /// The payment link expired unpaid (the shipment may request another pickup).
    PaymentExpired,
    /// The order was cancelled and its label voided: the pickup is called off (with the
    /// carrier when it was booked there).
    Cancelled,
}

impl PickupStatus {
    /// Every status.
    pub const ALL: [PickupStatus; 4] = [
        PickupStatus::AwaitingPayment,
        PickupStatus::Booked,
        PickupStatus::PaymentExpired,
        PickupStatus::Cancelled,
    ];

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            PickupStatus::AwaitingPayment => "awaiting_payment",
            PickupStatus::Booked => "booked",
            PickupStatus::PaymentExpired => "payment_expired",
            PickupStatus::Cancelled => "cancelled",
        }
    }

    /// Reads a name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn dates_skip_weekends_holidays_and_today_after_the_cutoff() {
        let rules = PickupRules {
            holidays: vec![NaiveDate::from_ymd_opt(2026, 11, 26).unwrap()],
            ..PickupRules::default()
        };
        // Wednesday 2026-11-25 at 09:00 UTC: before the cut-off.
        let morning = Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0).unwrap();
        let dates: Vec<String> = rules.dates(morning).iter().map(ToString::to_string).collect();
        assert_eq!(
            dates,
            [
                "2026-11-25",
                "2026-11-27",
                "2026-11-30",
                "2026-12-01",
                "2026-12-02"
            ]
        );
        let afternoon = Utc.with_ymd_and_hms(2026, 11, 25, 11, 0, 0).unwrap();
        assert_eq!(rules.dates(afternoon)[0].to_string(), "2026-11-27");
    }

    #[test]
    fn a_token_verifies_only_unedited_for_its_order_and_before_it_expires() {
        let key = b"a key of this test";
        let now = Utc::now();
        let claims = QuoteClaims {
            c: Uuid::now_v7(),
            o: Uuid::now_v7(),
            s: Uuid::now_v7(),
            d: vec!["2026-11-25".to_owned()],
            w: vec!["09:00-12:00".to_owned()],
            p: 1500,
            e: now.timestamp() + 60,
        };
        let token = sign(key, &claims);
        assert_eq!(verify(key, &token, claims.c, claims.o, now).unwrap(), claims);
        assert!(verify(key, &token, claims.c, Uuid::now_v7(), now).is_err());
        assert!(verify(b"another key", &token, claims.c, claims.o, now).is_err());
        let edited = QuoteClaims {
            p: 1,
            ..claims.clone()
        };
        let forged = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&edited).unwrap()),
            token.split_once('.').unwrap().1
        );
        assert_eq!(
            verify(key, &forged, claims.c, claims.o, now).unwrap_err().code,
            ErrorCode::PickupQuoteInvalid
        );
        let later = now + Duration::seconds(61);
        assert_eq!(
            verify(key, &token, claims.c, claims.o, later).unwrap_err().code,
            ErrorCode::PickupQuoteExpired
        );
    }
}

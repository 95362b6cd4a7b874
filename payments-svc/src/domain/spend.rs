//! Spend envelopes of API keys: a per-order cap and daily and monthly caps over the UTC calendar
//! (the day starts at 00:00 UTC, the month on its first day at 00:00 UTC), and the check of one
//! commitment against what the key already committed in the current day and month.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use serde::{Deserialize, Serialize};

/// What a key without an envelope may commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WithoutEnvelope {
    /// Nothing: staff must set an envelope first (the default outside development mode).
    Refuse,
    /// Anything (development mode and the test sandbox).
    Allow,
}

impl WithoutEnvelope {
    pub fn as_str(self) -> &'static str {
        match self {
            WithoutEnvelope::Refuse => "refuse",
            WithoutEnvelope::Allow => "allow",
        }
    }
}

/// What a commitment is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpendKind {
    Order,
    Pickup,
    Addon,
}

impl SpendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SpendKind::Order => "order",
            SpendKind::Pickup => "pickup",
            SpendKind::Addon => "addon",
        }
    }

    pub fn parse(value: &str) -> Result<Self, ApiError> {
        match value {
            "order" => Ok(SpendKind::Order),
            "pickup" => Ok(SpendKind::Pickup),
            "addon" => Ok(SpendKind::Addon),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "kind",
                "kind must be order, pickup or addon",
            )),
        }
    }
}

/// A key's caps; `None` is no cap of that kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    pub per_order: Option<Cents>,
    pub daily: Option<Cents>,
    pub monthly: Option<Cents>,
}

impl Caps {
    /// Validates staff input: caps are zero or more cents.
    pub fn parse(per_order: Option<i64>, daily: Option<i64>, monthly: Option<i64>) -> Result<Self, ApiError> {
        for (field, value) in [
            ("perOrderCapCents", per_order),
            ("dailyCapCents", daily),
            ("monthlyCapCents", monthly),
        ] {
            if value.is_some_and(|cents| cents < 0) {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    field,
                    format!("{field} must be 0 or more"),
                ));
            }
        }
        Ok(Self {
            per_order: per_order.map(Cents),
            daily: daily.map(Cents),
            monthly: monthly.map(Cents),
        })
    }
}

/// What a key has committed (and not released) in the current UTC day and month.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    pub today: Cents,
    pub this_month: Cents,
}

/// The start of `now`'s UTC day and month, and when they end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub day_start: DateTime<Utc>,
    pub day_end: DateTime<Utc>,
    pub month_start: DateTime<Utc>,
    pub month_end: DateTime<Utc>,
}

fn midnight(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// An envelope's running totals: what its key committed (and did not release) in the UTC day
/// `day` and the UTC month starting on `month` (the latest period written; an earlier period's
/// totals are zero from the first write in a later one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    pub day: NaiveDate,
    pub today: Cents,
    pub month: NaiveDate,
    pub this_month: Cents,
}

impl Totals {
    /// What the totals say the key committed in `windows`' day and month (zero for a period the
    /// totals have not reached yet).
    pub fn committed_in(&self, windows: &Windows) -> Committed {
        Committed {
            today: if self.day >= windows.day() {
                self.today
            } else {
                Cents::ZERO
            },
            this_month: if self.month >= windows.month() {
                self.this_month
            } else {
                Cents::ZERO
            },
        }
    }

    /// What was committed before a commitment of `amount` made in `windows` that these totals
    /// already include (the amount counts only in the period it was made in).
    pub fn before(&self, windows: &Windows, amount: Cents) -> Committed {
        let after = self.committed_in(windows);
        Committed {
            today: if self.day == windows.day() {
                Cents(after.today.0 - amount.0)
            } else {
                after.today
            },
            this_month: if self.month == windows.month() {
                Cents(after.this_month.0 - amount.0)
            } else {
                after.this_month
            },
        }
    }
}

impl Windows {
    /// The UTC date of the day.
    pub fn day(&self) -> NaiveDate {
        self.day_start.date_naive()
    }

    /// The first UTC date of the month.
    pub fn month(&self) -> NaiveDate {
        self.month_start.date_naive()
    }

    /// The UTC calendar windows around `now`.
    pub fn at(now: DateTime<Utc>) -> Self {
        let today = now.date_naive();
        let month_first = today.with_day(1).unwrap_or(today);
        let next_month = if month_first.month() == 12 {
            NaiveDate::from_ymd_opt(month_first.year() + 1, 1, 1)
        } else {
            NaiveDate::from_ymd_opt(month_first.year(), month_first.month() + 1, 1)
        }
        .unwrap_or(month_first);
        Self {
            day_start: midnight(today),
            day_end: midnight(today.succ_opt().unwrap_or(today)),
            month_start: midnight(month_first),
            month_end: midnight(next_month),
        }
    }
}

fn remaining(cap: Option<Cents>, used: Cents) -> Option<Cents> {
    cap.map(|cap| Cents((cap.0 - used.0).max(0)))
}

/// Checks a commitment of `amount` against `caps` given what is `committed`; the refusal is 403
/// `spend_limit_exceeded` naming the cap (`details.cap`) and every remainder.
pub fn check(caps: &Caps, committed: Committed, amount: Cents) -> Result<(), ApiError> {
    let exceeded = if caps.per_order.is_some_and(|cap| amount > cap) {
        Some("per_order")
    } else if caps.daily.is_some_and(|cap| committed.today.0 + amount.0 > cap.0) {
        Some("daily")
    } else if caps
        .monthly
        .is_some_and(|cap| committed.this_month.0 + amount.0 > cap.0)
    {
        Some("monthly")
    } else {
        None
    };
    let Some(cap) = exceeded else {
        return Ok(());
    };
    Err(ApiError::new(
        ErrorCode::SpendLimitExceeded,
        format!(
            "the amount exceeds the key's {} spending cap",
            cap.replace('_', "-")
        ),
    )
    .with_details(serde_json::json!({
        "cap": cap,
        "amountCents": amount.0,
        "perOrderCapCents": caps.per_order.map(|cap| cap.0),
        "remainingTodayCents": remaining(caps.daily, committed.today).map(|cents| cents.0),
        "remainingThisMonthCents": remaining(caps.monthly, committed.this_month).map(|cents| cents.0),
    })))
}

/// The refusal of a key without an envelope where the deployment refuses those.
pub fn no_envelope(amount: Cents) -> ApiError {
    ApiError::new(
        ErrorCode::SpendLimitExceeded,
        "the API key has no spending envelope; ask the lab to set one",
    )
    .with_details(serde_json::json!({
        "cap": "no_envelope",
        "amountCents": amount.0,
        "perOrderCapCents": 0,
        "remainingTodayCents": 0,
        "remainingThisMonthCents": 0,
    }))
}

/// A key's envelope as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvelopeView {
    pub key_id: String,
    pub customer_id: uuid::Uuid,
    pub caps: Option<Caps>,
    pub committed: Committed,
    pub windows: Windows,
    pub without_envelope: WithoutEnvelope,
}

impl EnvelopeView {
    pub fn remaining_today(&self) -> Option<Cents> {
        match (&self.caps, self.without_envelope) {
            (Some(caps), _) => remaining(caps.daily, self.committed.today),
            (None, WithoutEnvelope::Refuse) => Some(Cents::ZERO),
            (None, WithoutEnvelope::Allow) => None,
        }
    }

    pub fn remaining_this_month(&self) -> Option<Cents> {
        match (&self.caps, self.without_envelope) {
            (Some(caps), _) => remaining(caps.monthly, self.committed.this_month),
            (None, WithoutEnvelope::Refuse) => Some(Cents::ZERO),
            (None, WithoutEnvelope::Allow) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(per_order: Option<i64>, daily: Option<i64>, monthly: Option<i64>) -> Caps {
        Caps::parse(per_order, daily, monthly).unwrap()
    }

    #[test]
    fn a_commitment_may_reach_each_cap_exactly_and_not_one_cent_more() {
        let caps = caps(Some(500), Some(1_000), Some(2_000));
        let committed = Committed {
            today: Cents(600),
            this_month: Cents(1_600),
        };
        assert!(check(&caps, committed, Cents(400)).is_ok());
        let daily = check(&caps, committed, Cents(401)).unwrap_err();
        assert_eq!(daily.code, ErrorCode::SpendLimitExceeded);
        let details = daily.details.unwrap();
        assert_eq!(details["cap"], "daily");
        assert_eq!(details["remainingTodayCents"], 400);
        assert_eq!(details["remainingThisMonthCents"], 400);
        assert_eq!(
            check(&caps, Committed::default(), Cents(501))
                .unwrap_err()
                .details
                .unwrap()["cap"],
            "per_order"
        );
        let month = Committed {
            today: Cents(0),
            this_month: Cents(1_900),
        };
        assert_eq!(
            check(&caps, month, Cents(101)).unwrap_err().details.unwrap()["cap"],
            "monthly"
        );
        assert!(check(&Caps::default(), committed, Cents(i64::MAX / 4)).is_ok());
    }

    #[test]
    fn the_windows_are_the_utc_calendar_day_and_month() {
        let now = DateTime::parse_from_rfc3339("2026-12-31T23:59:59Z")
            .unwrap()
            .to_utc();
        let windows = Windows::at(now);
        assert_eq!(windows.day_start.to_rfc3339(), "2026-12-31T00:00:00+00:00");
        assert_eq!(windows.day_end.to_rfc3339(), "2027-01-01T00:00:00+00:00");
        assert_eq!(windows.month_start.to_rfc3339(), "2026-12-01T00:00:00+00:00");
        assert_eq!(windows.month_end.to_rfc3339(), "2027-01-01T00:00:00+00:00");
    }

    #[test]
    fn totals_of_an_earlier_period_count_as_nothing_and_a_commitment_counts_in_its_own_period() {
        let windows = Windows::at(
            DateTime::parse_from_rfc3339("2026-12-01T00:00:01Z")
                .unwrap()
                .to_utc(),
        );
        let date = |text: &str| NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap();
        let stale = Totals {
            day: date("2026-11-30"),
            today: Cents(700),
            month: date("2026-11-01"),
            this_month: Cents(9_000),
        };
        assert_eq!(stale.committed_in(&windows), Committed::default());
        let current = Totals {
            day: date("2026-12-01"),
            today: Cents(700),
            month: date("2026-12-01"),
            this_month: Cents(900),
        };
        assert_eq!(
            current.before(&windows, Cents(200)),
            Committed {
                today: Cents(500),
                this_month: Cents(700)
            }
        );
    }

    #[test]
    fn negative_caps_are_refused_with_their_field() {
        let error = Caps::parse(None, Some(-1), None).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "dailyCapCents");
        assert!(SpendKind::parse("gift").is_err());
    }
}

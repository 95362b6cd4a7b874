//! What happens after an attempt: success, a retry at a time from the schedule (with ±10 %
//! jitter, never earlier than a `Retry-After` on 429/503, capped at 24 h), the dead-letter state
//! once the schedule is exhausted, or the endpoint's end on `410 Gone`.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// The production schedule: waits after attempts 1..=9; the 10th failure is final.
pub const DEFAULT_SCHEDULE: [Duration; 9] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(14 * 3600),
    Duration::from_secs(20 * 3600),
    Duration::from_secs(24 * 3600),
];
/// Largest wait a `Retry-After` can impose.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(24 * 3600);
/// Relative jitter applied to every wait.
pub const JITTER: f64 = 0.10;

/// The waits between attempts; `delays.len() + 1` attempts in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetrySchedule {
    delays: Vec<Duration>,
}

impl Default for RetrySchedule {
    fn default() -> Self {
        Self {
            delays: DEFAULT_SCHEDULE.to_vec(),
        }
    }
}

impl RetrySchedule {
    pub fn new(delays: Vec<Duration>) -> Self {
        Self { delays }
    }

    /// Parses a comma-separated list of milliseconds (`WEBHOOKS_RETRY_SCHEDULE_MS`).
    pub fn parse_millis(text: &str) -> anyhow::Result<Self> {
        let delays = text
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                part.parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|_| anyhow::anyhow!("retry schedule entries must be milliseconds, got {part:?}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self { delays })
    }

    pub fn delays(&self) -> &[Duration] {
        &self.delays
    }

    /// Attempts in one round (first attempt plus retries).
    pub fn max_attempts(&self) -> usize {
        self.delays.len() + 1
    }
}

/// What an attempt produced, as far as scheduling is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptSignal {
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The parsed `Retry-After` of the response, when present.
    pub retry_after: Option<Duration>,
}

/// The state a delivery moves to after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Succeeded,
    /// Try again at this time.
    Retry(DateTime<Utc>),
    /// The schedule is exhausted.
    Dead,
    /// The endpoint answered 410: disable it and abandon its deliveries.
    Gone,
}

/// Decides after attempt number `attempt_in_round` (1-based, counted since the delivery was
/// last queued) with `jitter` in [-1, 1] scaling the ±10 % jitter.
pub fn decide(
    schedule: &RetrySchedule,
    signal: AttemptSignal,
    attempt_in_round: usize,
    now: DateTime<Utc>,
    jitter: f64,
) -> Decision {
    match signal.status {
        Some(status) if (200..300).contains(&status) => return Decision::Succeeded,
        Some(410) => return Decision::Gone,
        _ => {}
    }
    let Some(base) = attempt_in_round
        .checked_sub(1)
        .and_then(|index| schedule.delays.get(index))
    else {
        return Decision::Dead;
    };
    let factor = 1.0 + JITTER * jitter.clamp(-1.0, 1.0);
    let mut wait = base.mul_f64(factor);
    if matches!(signal.status, Some(429 | 503))
        && let Some(retry_after) = signal.retry_after
    {
        wait = wait.max(retry_after.min(RETRY_AFTER_CAP));
    }
    let wait = chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
    Decision::Retry(now.checked_add_signed(wait).unwrap_or(DateTime::<Utc>::MAX_UTC))
}

/// Parses a `Retry-After` value: delay seconds or an HTTP date (then relative to `now`).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds).min(RETRY_AFTER_CAP));
    }
    let date = DateTime::parse_from_rfc2822(value).ok()?.with_timezone(&Utc);
    Some(
        (date - now)
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(RETRY_AFTER_CAP),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn failed(status: Option<u16>) -> AttemptSignal {
        AttemptSignal {
            status,
            retry_after: None,
        }
    }

    #[test]
    fn the_default_schedule_has_ten_attempts_over_about_three_days() {
        let schedule = RetrySchedule::default();
        assert_eq!(schedule.max_attempts(), 10);
        let total: Duration = schedule.delays().iter().sum();
        assert_eq!(total.as_secs(), 3 * 86_400 + 3 * 3600 + 35 * 60 + 5);
    }

    #[test]
    fn two_hundreds_succeed_and_410_ends_the_endpoint() {
        let schedule = RetrySchedule::default();
        for status in [200, 201, 204, 299] {
            assert_eq!(
                decide(&schedule, failed(Some(status)), 1, at(0), 0.0),
                Decision::Succeeded
            );
        }
        assert_eq!(
            decide(&schedule, failed(Some(410)), 3, at(0), 0.0),
            Decision::Gone
        );
    }

    #[test]
    fn failures_follow_the_schedule_with_bounded_jitter_then_die() {
        let schedule = RetrySchedule::default();
        for status in [None, Some(500), Some(301), Some(404), Some(429)] {
            assert_eq!(
                decide(&schedule, failed(status), 1, at(0), 0.0),
                Decision::Retry(at(5))
            );
        }
        assert_eq!(
            decide(&schedule, failed(None), 2, at(0), 1.0),
            Decision::Retry(at(330))
        );
        assert_eq!(
            decide(&schedule, failed(None), 2, at(0), -1.0),
            Decision::Retry(at(270))
        );
        assert_eq!(
            decide(&schedule, failed(None), 9, at(0), 0.0),
            Decision::Retry(at(24 * 3600))
        );
        assert_eq!(decide(&schedule, failed(None), 10, at(0), 0.0), Decision::Dead);
        assert_eq!(
            decide(&RetrySchedule::new(vec![]), failed(None), 1, at(0), 0.0),
            Decision::Dead
        );
    }

    #[test]
    fn retry_after_on_429_and_503_delays_the_next_attempt_up_to_a_day() {
        let schedule = RetrySchedule::default();
        let signal = |status, seconds| AttemptSignal {
            status: Some(status),
            retry_after: Some(Duration::from_secs(seconds)),
        };
        assert_eq!(
            decide(&schedule, signal(429, 120), 1, at(0), 0.0),
            Decision::Retry(at(120))
        );
        assert_eq!(
            decide(&schedule, signal(503, 2), 1, at(0), 0.0),
            Decision::Retry(at(5))
        );
        assert_eq!(
            decide(&schedule, signal(503, 5 * 86_400), 1, at(0), 0.0),
            Decision::Retry(at(86_400))
        );
        assert_eq!(
            decide(&schedule, signal(500, 120), 1, at(0), 0.0),
            Decision::Retry(at(5))
        );
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_an_http_date() {
        let now = DateTime::parse_from_rfc3339("2026-07-17T10:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after("Fri, 17 Jul 2026 10:01:30 GMT", now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_retry_after("Fri, 17 Jul 2026 09:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("999999999", now), Some(RETRY_AFTER_CAP));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn a_compressed_schedule_parses_from_milliseconds() {
        let schedule = RetrySchedule::parse_millis("10, 20,40").unwrap();
        assert_eq!(schedule.delays(), [10, 20, 40].map(Duration::from_millis));
        assert!(RetrySchedule::parse_millis("10,x").is_err());
    }
}

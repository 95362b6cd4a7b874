//! Settings of webhooks-svc: the common settings (`WEBHOOKS_*` prefix, gRPC on 127.0.0.1:50056),
//! the secret keyring, delivery timing and limits, the SSRF switches, and the timing of its
//! consumer and idempotency store (tests compress all timing).

use crate::domain::RetrySchedule;
use crate::keyring::Keyring;
use platform::config::{CommonSettings, env_var};
use platform::production::Requirements;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// Environment prefix of this service.
pub const ENV_PREFIX: &str = "WEBHOOKS";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50056";

/// Timing of the stream consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerTiming {
    /// Pending entries idle this long are claimed from a consumer presumed dead.
    pub reclaim_idle: Duration,
    /// How long one blocking read waits.
    pub block: Duration,
}

/// Lease and wait of the idempotency store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdempotencyTiming {
    pub lease: Duration,
    pub wait: Duration,
}

/// How deliveries are made.
#[derive(Clone, Debug, PartialEq)]
pub struct DeliverySettings {
    /// Time limit of one attempt (connect, TLS, request and response headers).
    pub request_timeout: Duration,
    /// Waits between attempts; its length + 1 is the number of attempts.
    pub retry_schedule: RetrySchedule,
    /// Attempts in flight at once in this process.
    pub max_in_flight: usize,
    /// How often the dispatcher looks for due deliveries when no notification arrives.
    pub poll_interval: Duration,
    /// How long a claimed delivery stays reserved; after that (a crashed replica) it is due
    /// again. At least twice the request timeout.
    pub lease: Duration,
    /// How long in-flight attempts may finish after shutdown before they are dropped (and
    /// retried by a live replica once their lease ends).
    pub shutdown_grace: Duration,
    /// How long the previous secret keeps signing after a rotation.
    pub rotation_overlap: Duration,
    /// Days stored events (and their deliveries) are kept for replays.
    pub event_retention_days: i32,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            retry_schedule: RetrySchedule::default(),
            max_in_flight: 64,
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(5),
            rotation_overlap: Duration::from_secs(86_400),
            event_retention_days: 30,
        }
    }
}

/// Settings of webhooks-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    /// Seals signing secrets at rest (`WEBHOOKS_SECRET_KEYS`); a public development keyring when
    /// unset, with a loud warning.
    pub secret_keys: Keyring,
    pub delivery: DeliverySettings,
    /// Lets webhooks reach 127.0.0.0/8 and ::1. UNSAFE in production: local development and
    /// tests only.
    pub allow_loopback_targets: bool,
    /// Extra trusted root certificates (PEM), besides the public web roots; tests trust the
    /// test receiver's CA this way.
    pub extra_root_certificates_pem: Vec<String>,
    /// Names resolved from this table instead of DNS. Tests only; never read from the
    /// environment.
    pub dns_overrides: HashMap<String, Vec<IpAddr>>,
    pub consumer: ConsumerTiming,
    /// Stream consumers of this process in the group.
    pub consumers: usize,
    /// Entries one consumer reads at a time; a read is fanned out in one transaction.
    pub consumer_batch: usize,
    pub idempotency: IdempotencyTiming,
    /// How many endpoints (active or disabled, not deleted) one customer may have.
    pub max_endpoints_per_customer: u32,
}

impl Settings {
    /// Settings with the production defaults around `common` (tests and labd).
    pub fn local(common: CommonSettings) -> Self {
        Self {
            common,
            secret_keys: Keyring::development(),
            delivery: DeliverySettings::default(),
            allow_loopback_targets: false,
            extra_root_certificates_pem: Vec::new(),
            dns_overrides: HashMap::new(),
            consumer: ConsumerTiming {
                reclaim_idle: Duration::from_secs(30),
                block: Duration::from_secs(2),
            },
            consumers: 4,
            consumer_batch: 32,
            idempotency: IdempotencyTiming {
                lease: Duration::from_secs(30),
                wait: Duration::from_secs(10),
            },
            max_endpoints_per_customer: crate::domain::endpoint::DEFAULT_MAX_ENDPOINTS_PER_CUSTOMER,
        }
    }

    /// Reads settings from `WEBHOOKS_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        let mut settings = Self::local(CommonSettings::from_env(ENV_PREFIX, DEFAULT_GRPC_ADDR)?);
        let mut need = Requirements::new("webhooks-svc", settings.common.dev_mode);
        if let Some(keys) = var("SECRET_KEYS") {
            need.secret(
                &format!("{ENV_PREFIX}_SECRET_KEYS"),
                Some(&keys.clone().into()),
                None,
            );
            settings.secret_keys = Keyring::parse(&keys)
                .map_err(|error| anyhow::anyhow!("{ENV_PREFIX}_SECRET_KEYS: {error}"))?;
        }
        let delivery = &mut settings.delivery;
        millis("REQUEST_TIMEOUT_MS", &mut delivery.request_timeout)?;
        millis("POLL_INTERVAL_MS", &mut delivery.poll_interval)?;
        millis("DELIVERY_LEASE_MS", &mut delivery.lease)?;
        millis("SHUTDOWN_GRACE_MS", &mut delivery.shutdown_grace)?;
        if let Some(schedule) = var("RETRY_SCHEDULE_MS") {
            delivery.retry_schedule = RetrySchedule::parse_millis(&schedule)
                .map_err(|error| anyhow::anyhow!("{ENV_PREFIX}_RETRY_SCHEDULE_MS: {error}"))?;
        }
        if let Some(seconds) = integer("ROTATION_OVERLAP_SECS")? {
            delivery.rotation_overlap = Duration::from_secs(seconds);
        }
        if let Some(count) = integer("MAX_IN_FLIGHT")? {
            delivery.max_in_flight = usize::try_from(count.clamp(1, 4096)).unwrap_or(64);
        }
        if let Some(days) = integer("EVENT_RETENTION_DAYS")? {
            delivery.event_retention_days = i32::try_from(days.clamp(1, 3650)).unwrap_or(30);
        }
        if let Some(flag) = var("ALLOW_LOOPBACK_TARGETS") {
            settings.allow_loopback_targets = matches!(flag.trim(), "1" | "true" | "yes" | "on");
            need.refuse_if(settings.allow_loopback_targets, || {
                format!("{ENV_PREFIX}_ALLOW_LOOPBACK_TARGETS={flag}: webhooks to loopback addresses are for local development and tests only")
            });
        }
        if let Some(path) = var("EXTRA_ROOT_CERTS_FILE") {
            let pem = std::fs::read_to_string(&path)
                .map_err(|error| anyhow::anyhow!("{ENV_PREFIX}_EXTRA_ROOT_CERTS_FILE={path}: {error}"))?;
            settings.extra_root_certificates_pem.push(pem);
        }
        if let Some(count) = integer("CONSUMERS")? {
            settings.consumers = usize::try_from(count.clamp(1, 64)).unwrap_or(4);
        }
        if let Some(count) = integer("CONSUMER_BATCH")? {
            settings.consumer_batch = usize::try_from(count.clamp(1, 512)).unwrap_or(32);
        }
        millis("CONSUMER_RECLAIM_IDLE_MS", &mut settings.consumer.reclaim_idle)?;
        millis("CONSUMER_BLOCK_MS", &mut settings.consumer.block)?;
        millis("IDEMPOTENCY_LEASE_MS", &mut settings.idempotency.lease)?;
        millis("IDEMPOTENCY_WAIT_MS", &mut settings.idempotency.wait)?;
        if let Some(count) = integer("MAX_ENDPOINTS_PER_CUSTOMER")? {
            settings.max_endpoints_per_customer = u32::try_from(count.clamp(1, 10_000)).unwrap_or(20);
        }
        need.finish()?;
        Ok(settings)
    }
}

fn var(name: &str) -> Option<String> {
    env_var(&format!("{ENV_PREFIX}_{name}"))
}

fn integer(name: &str) -> anyhow::Result<Option<u64>> {
    var(name)
        .map(|value| {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| anyhow::anyhow!("{ENV_PREFIX}_{name} must be a non-negative integer"))
        })
        .transpose()
}

fn millis(name: &str, target: &mut Duration) -> anyhow::Result<()> {
    if let Some(value) = integer(name)? {
        *target = Duration::from_millis(value);
    }
    Ok(())
}

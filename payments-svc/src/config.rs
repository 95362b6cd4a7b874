//! Settings of payments-svc: the common settings (`PAYMENTS_*` prefix, gRPC on 127.0.0.1:50053),
//! the bank account printed on bank invoices, the payment term, the consumer's timing, the card
//! processor and the site that serves the hosted pay page.

use crate::domain::BankInstructions;
use crate::domain::spend::WithoutEnvelope;
use crate::processor::stripe::StripeSettings;
use platform::config::{CommonSettings, env_var, file_or_value};
use platform::production::Requirements;
use std::time::Duration;

/// Which card processor takes card payments.
#[derive(Clone, Debug)]
pub enum CardProcessorSettings {
    /// The built-in sandbox (the local default): test cards on our own pay page.
    Sandbox,
    /// A Stripe-shaped PSP.
    Stripe(StripeSettings),
}

/// Environment prefix of this service.
pub const ENV_PREFIX: &str = "PAYMENTS";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50053";

/// The lab's receiving bank account, printed as remittance instructions on bank invoices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankAccount {
    pub beneficiary: String,
    pub bank_name: String,
    pub account_number: String,
    pub routing_number: String,
    pub swift: String,
}

impl Default for BankAccount {
    /// Demo values: a fictitious bank; the routing number is the well-known test number.
    fn default() -> Self {
        Self {
            beneficiary: "Meridian Analytical Laboratories, Inc.".to_owned(),
            bank_name: "Harborview National Bank".to_owned(),
            account_number: "000123456789".to_owned(),
            routing_number: "110000000".to_owned(),
            swift: "HBVNUS33XXX".to_owned(),
        }
    }
}

impl BankAccount {
    /// The instructions for paying the invoice numbered `reference`.
    pub fn instructions(&self, reference: &str) -> BankInstructions {
        BankInstructions {
            beneficiary: self.beneficiary.clone(),
            bank_name: self.bank_name.clone(),
            account_number: self.account_number.clone(),
            routing_number: self.routing_number.clone(),
            swift: self.swift.clone(),
            reference: reference.to_owned(),
        }
    }
}

/// Timing of the order.created consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerTiming {
    /// Pending entries idle this long are claimed from a consumer presumed dead.
    pub reclaim_idle: Duration,
    /// How long one blocking read waits.
    pub block: Duration,
}

impl Default for ConsumerTiming {
    fn default() -> Self {
        Self {
            reclaim_idle: Duration::from_secs(30),
            block: Duration::from_secs(2),
        }
    }
}

/// Settings of payments-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    pub bank: BankAccount,
    /// Days between issue and due date.
    pub invoice_due_days: i64,
    pub consumer: ConsumerTiming,
    /// The stablecoin rail; `None` when not configured (the rail is then unavailable).
    pub stablecoin: Option<crate::stablecoin::StablecoinSettings>,
    /// Root of the site that serves the pay page (`{site_url}/pay/…`).
    pub site_url: String,
    /// Lifetime of a fresh checkout link minted by `POST /payments/prepare` (and of a session
    /// whose order named no quote expiry).
    pub checkout_ttl: Duration,
    pub card_processor: CardProcessorSettings,
    /// How often the jobs run: expiring checkout sessions, overdue bank invoices.
    pub jobs_interval: Duration,
    /// What a key without a spend envelope may commit: `refuse` outside development mode,
    /// `allow` in it (`PAYMENTS_SPEND_WITHOUT_ENVELOPE`).
    pub spend_without_envelope: WithoutEnvelope,
    /// Whether sandbox customers (docs/sandbox.md) may pay on the stablecoin rail: only in
    /// development mode, since elsewhere the rail watches a real chain where nothing is a sandbox.
    pub stablecoin_for_sandbox: bool,
}

impl Settings {
    /// Settings with the defaults around `common` (tests and labd).
    pub fn local(common: CommonSettings) -> Self {
        let spend_without_envelope = if common.dev_mode {
            WithoutEnvelope::Allow
        } else {
            WithoutEnvelope::Refuse
        };
        Self {
            spend_without_envelope,
            stablecoin_for_sandbox: common.dev_mode,
            common,
            bank: BankAccount::default(),
            invoice_due_days: 30,
            consumer: ConsumerTiming::default(),
            stablecoin: None,
            site_url: "http://127.0.0.1:8080".to_owned(),
            checkout_ttl: Duration::from_secs(15 * 60),
            card_processor: CardProcessorSettings::Sandbox,
            jobs_interval: Duration::from_secs(30),
        }
    }

    /// Reads settings from `PAYMENTS_*` and the common environment variables. Outside
    /// development mode the card processor, the bank account and the site URL must be set
    /// explicitly and the sandbox processor is refused ([`platform::production`]).
    pub fn from_env() -> anyhow::Result<Self> {
        let mut settings = Self::local(CommonSettings::from_env(ENV_PREFIX, DEFAULT_GRPC_ADDR)?);
        let mut need = Requirements::new("payments-svc", settings.common.dev_mode);
        let demo = BankAccount::default();
        let bank = &mut settings.bank;
        for (name, field, demo_value) in [
            ("BANK_BENEFICIARY", &mut bank.beneficiary, &demo.beneficiary),
            ("BANK_NAME", &mut bank.bank_name, &demo.bank_name),
            (
                "BANK_ACCOUNT_NUMBER",
                &mut bank.account_number,
                &demo.account_number,
            ),
            (
                "BANK_ROUTING_NUMBER",
                &mut bank.routing_number,
                &demo.routing_number,
            ),
            ("BANK_SWIFT", &mut bank.swift, &demo.swift),
        ] {
            let variable = format!("{ENV_PREFIX}_{name}");
            *field = need.required(
                &variable,
                "the lab's receiving bank account printed on bank invoices",
                demo_value,
            );
            need.refuse_if(*field == *demo_value && env_var(&variable).is_some(), || {
                format!("{variable} is the demo bank account's value")
            });
        }
        if let Some(days) = number("INVOICE_DUE_DAYS")? {
            anyhow::ensure!(
                (0..=3650).contains(&days),
                "{ENV_PREFIX}_INVOICE_DUE_DAYS must be 0 to 3650"
            );
            settings.invoice_due_days = days;
        }
        if let Some(millis) = number("CONSUMER_RECLAIM_IDLE_MS")? {
            settings.consumer.reclaim_idle = Duration::from_millis(millis.max(1).unsigned_abs());
        }
        if let Some(millis) = number("CONSUMER_BLOCK_MS")? {
            settings.consumer.block = Duration::from_millis(millis.max(1).unsigned_abs());
        }
        settings.stablecoin = crate::stablecoin::StablecoinSettings::from_env(ENV_PREFIX)?;
        settings.site_url = need.site_url(ENV_PREFIX);
        if let Some(seconds) = number("CHECKOUT_TTL_SECONDS")? {
            anyhow::ensure!(
                seconds >= 60,
                "{ENV_PREFIX}_CHECKOUT_TTL_SECONDS must be at least 60"
            );
            settings.checkout_ttl = Duration::from_secs(seconds.unsigned_abs());
        }
        if let Some(millis) = number("JOBS_INTERVAL_MS")? {
            settings.jobs_interval = Duration::from_millis(millis.max(100).unsigned_abs());
        }
        match env_var(&format!("{ENV_PREFIX}_SPEND_WITHOUT_ENVELOPE")).as_deref() {
            None => {}
            Some("refuse") => settings.spend_without_envelope = WithoutEnvelope::Refuse,
            Some("allow") => settings.spend_without_envelope = WithoutEnvelope::Allow,
            Some(other) => {
                anyhow::bail!("{ENV_PREFIX}_SPEND_WITHOUT_ENVELOPE must be refuse or allow, not {other:?}")
            }
        }
        let processor = need.required(
            &format!("{ENV_PREFIX}_CARD_PROCESSOR"),
            "the card processor (stripe); the sandbox processor takes test cards and runs only in development mode",
            "sandbox",
        );
        match processor.as_str() {
            "sandbox" => {
                need.refuse_if(env_var(&format!("{ENV_PREFIX}_CARD_PROCESSOR")).is_some(), || {
                    format!("{ENV_PREFIX}_CARD_PROCESSOR=sandbox: the sandbox processor accepts test cards as payment and runs only in development mode")
                });
            }
            "stripe" => {
                let required = |name: &str| {
                    file_or_value(ENV_PREFIX, name)?.ok_or_else(|| {
                        anyhow::anyhow!("{ENV_PREFIX}_{name} is required with the stripe processor")
                    })
                };
                let stripe = StripeSettings {
                    api_base: env_var(&format!("{ENV_PREFIX}_STRIPE_API_BASE"))
                        .unwrap_or_else(|| "https://api.stripe.com".to_owned()),
                    secret_key: required("STRIPE_SECRET_KEY")?.into(),
                    webhook_secret: required("STRIPE_WEBHOOK_SECRET")?.into(),
                };
                need.secret(
                    &format!("{ENV_PREFIX}_STRIPE_SECRET_KEY"),
                    Some(&stripe.secret_key),
                    None,
                );
                need.secret(
                    &format!("{ENV_PREFIX}_STRIPE_WEBHOOK_SECRET"),
                    Some(&stripe.webhook_secret),
                    None,
                );
                settings.card_processor = CardProcessorSettings::Stripe(stripe);
            }
            other => {
                anyhow::bail!("{ENV_PREFIX}_CARD_PROCESSOR must be sandbox or stripe, not {other:?}")
            }
        }
        need.finish()?;
        Ok(settings)
    }
}

fn number(name: &str) -> anyhow::Result<Option<i64>> {
    let variable = format!("{ENV_PREFIX}_{name}");
    env_var(&variable)
        .map(|value| {
            value
                .trim()
                .parse::<i64>()
                .map_err(|_| anyhow::anyhow!("{variable} must be an integer"))
        })
        .transpose()
}

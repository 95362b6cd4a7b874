//! Settings of payments-svc: the common settings (`PAYMENTS_*` prefix, gRPC on 127.0.0.1:50053),
//! the bank account printed on bank invoices, the payment term, and the consumer's timing.

use crate::domain::BankInstructions;
use platform::config::{CommonSettings, env_var};
use std::time::Duration;

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
}

impl Settings {
    /// Settings with the defaults around `common` (tests and labd).
    pub fn local(common: CommonSettings) -> Self {
        Self {
            common,
            bank: BankAccount::default(),
            invoice_due_days: 30,
            consumer: ConsumerTiming::default(),
        }
    }

    /// Reads settings from `PAYMENTS_*` and the common environment variables.
    pub fn from_env() -> anyhow::Result<Self> {
        let mut settings = Self::local(CommonSettings::from_env(ENV_PREFIX, DEFAULT_GRPC_ADDR)?);
        let text = |name: &str, target: &mut String| {
            if let Some(value) = env_var(&format!("{ENV_PREFIX}_{name}")) {
                *target = value;
            }
        };
        text("BANK_BENEFICIARY", &mut settings.bank.beneficiary);
        text("BANK_NAME", &mut settings.bank.bank_name);
        text("BANK_ACCOUNT_NUMBER", &mut settings.bank.account_number);
        text("BANK_ROUTING_NUMBER", &mut settings.bank.routing_number);
        text("BANK_SWIFT", &mut settings.bank.swift);
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

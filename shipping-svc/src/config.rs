//! Settings of shipping-svc (`SHIPPING_*`, gRPC on 127.0.0.1:50054): peers, the lab's business
//! address (the ship-to of every label), the carrier, signed label URLs, email and door pickups.
//! The table with every variable is in `shipping-svc/README.md`.

use crate::carrier::easypost::{DEFAULT_WEBHOOK_TOLERANCE, EasyPostSettings};
use crate::domain::Address;
use crate::domain::pickup::PickupRules;
use crate::mail::MailTransport;
use chrono::{NaiveDate, NaiveTime};
use platform::blobs::BlobSettings;
use platform::config::{CommonSettings, env_var, file_or_value, prefixed_or_common};
use platform::production::{MIN_SECRET_CHARS, Requirements};
use secrecy::SecretString;
use std::path::PathBuf;
use std::time::Duration;

/// Environment prefix of this service.
pub const ENV_PREFIX: &str = "SHIPPING";
/// Default gRPC listen address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:50054";
/// Largest EasyPost webhook timestamp tolerance that may be configured, in seconds: processed
/// event ids are kept far longer ([`crate::service::webhooks::EVENT_ID_RETENTION`]), so a replay
/// inside the tolerance always meets its id.
pub const MAX_WEBHOOK_TOLERANCE_SECS: u64 = 3600;
/// The published development key of signed label URLs and pickup quote tokens.
pub const DEVELOPMENT_SIGNING_KEY: &str = platform::label_links::DEVELOPMENT_KEY;

/// Which carrier buys labels.
#[derive(Clone, Debug)]
pub enum CarrierSettings {
    Sandbox,
    EasyPost(EasyPostSettings),
}

/// Timing of the stream consumer.
#[derive(Clone, Copy, Debug)]
pub struct ConsumerTiming {
    pub reclaim_idle: Duration,
    pub block: Duration,
}

/// Settings of shipping-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    /// catalog-svc (sample requirements of the order's quote).
    pub catalog_addr: String,
    /// payments-svc (the hosted payment of a door pickup).
    pub payments_addr: String,
    /// identity-svc (the customer's name and email; `IDENTITY_ADDR`).
    pub identity_addr: String,
    /// The lab's receiving address: ship-to of every label.
    pub lab_address: Address,
    pub carrier: CarrierSettings,
    /// Root of the public site, for signed label URLs (`{base}/api/v1/files/labels/…`).
    pub public_base_url: String,
    /// Key of signed label URLs and pickup quote tokens (`None`: the development key, only in
    /// development mode).
    pub signing_key: Option<SecretString>,
    /// Lifetime of a signed label URL.
    pub label_url_ttl: Duration,
    /// Sender of label emails.
    pub mail_from: String,
    pub mail: MailTransport,
    pub pickup: PickupRules,
    pub consumer: ConsumerTiming,
    /// Where label PDFs are kept (`SHIPPING_BLOB_STORE`, docs/operations.md "Blob storage"):
    /// a local directory or an S3 bucket; never linked to directly (downloads go through the
    /// signed label route).
    pub blobs: BlobSettings,
}

/// The attention line of the lab's receiving address.
pub const RECEIVING_ATTENTION: &str = "Sample Receiving";

/// The lab's receiving address, the ship-to of every label: the laboratory's identity with the
/// receiving department as the attention line.
pub fn lab_address(lab: &platform::lab::LabIdentity) -> Address {
    Address {
        name: RECEIVING_ATTENTION.to_owned(),
        company: lab.name.clone(),
        street1: lab.street1.clone(),
        street2: lab.street2.clone(),
        city: lab.city.clone(),
        state: lab.state.clone(),
        postal_code: lab.postal_code.clone(),
        country: lab.country.clone(),
        phone: lab.phone.clone(),
        email: lab.email.clone(),
    }
}

/// The demo lab's receiving address.
pub fn default_lab_address() -> Address {
    lab_address(&platform::lab::LabIdentity::demo())
}

impl Settings {
    /// Settings with the defaults around `common` (tests and labd): sandbox carrier, mail to
    /// files under the system temporary directory.
    pub fn local(common: CommonSettings) -> Self {
        let blobs = BlobSettings::local(
            std::env::temp_dir()
                .join(format!("lab-blobs-{}", common.stream_prefix))
                .join("shipping"),
            "http://127.0.0.1:8080",
        );
        Self {
            blobs,
            common,
            catalog_addr: "http://127.0.0.1:50051".to_owned(),
            payments_addr: "http://127.0.0.1:50053".to_owned(),
            identity_addr: "http://127.0.0.1:50057".to_owned(),
            lab_address: default_lab_address(),
            carrier: CarrierSettings::Sandbox,
            public_base_url: "http://127.0.0.1:8080".to_owned(),
            signing_key: None,
            label_url_ttl: Duration::from_secs(3600),
            mail_from: "Meridian Labs Shipping <shipping@meridian-labs.example>".to_owned(),
            mail: MailTransport::Files(std::env::temp_dir().join("lab-mail")),
            pickup: PickupRules::default(),
            consumer: ConsumerTiming {
                reclaim_idle: Duration::from_secs(30),
                block: Duration::from_secs(2),
            },
        }
    }

    /// Reads settings from `SHIPPING_*` and the common environment variables. Outside
    /// development mode the carrier (not the sandbox), the lab's receiving address, the site
    /// URL, the signing key, the sender and an SMTP relay must be set explicitly
    /// ([`platform::production`]).
    pub fn from_env() -> anyhow::Result<Self> {
        let mut settings = Self::local(CommonSettings::from_env(ENV_PREFIX, DEFAULT_GRPC_ADDR)?);
        let mut need = Requirements::new("shipping-svc", settings.common.dev_mode);
        let var = |name: &str| env_var(&format!("{ENV_PREFIX}_{name}"));
        settings.catalog_addr = prefixed_or_common(ENV_PREFIX, "CATALOG_SVC_ADDR", &settings.catalog_addr);
        settings.payments_addr = prefixed_or_common(ENV_PREFIX, "PAYMENTS_SVC_ADDR", &settings.payments_addr);
        settings.identity_addr = prefixed_or_common(ENV_PREFIX, "IDENTITY_ADDR", &settings.identity_addr);
        // The ship-to of every label: the laboratory's identity (`LAB_*`, platform::lab),
        // required outside development mode.
        settings.lab_address = lab_address(&platform::lab::LabIdentity::from_env(&mut need));
        let carrier = need.required(
            &format!("{ENV_PREFIX}_CARRIER"),
            "the carrier that buys labels (easypost); the sandbox carrier runs only in development mode",
            "sandbox",
        );
        match carrier.as_str() {
            "sandbox" => {
                settings.carrier = CarrierSettings::Sandbox;
                need.refuse_if(var("CARRIER").is_some(), || {
                    format!("{ENV_PREFIX}_CARRIER=sandbox: the sandbox carrier's labels ship nothing; it runs only in development mode")
                });
            }
            "easypost" => {
                let required = |name: &str| {
                    file_or_value(ENV_PREFIX, name)?.ok_or_else(|| {
                        anyhow::anyhow!("{ENV_PREFIX}_{name} is required with SHIPPING_CARRIER=easypost")
                    })
                };
                let easypost = EasyPostSettings {
                    base_url: var("EASYPOST_BASE_URL")
                        .unwrap_or_else(|| "https://api.easypost.com".to_owned()),
                    api_key: required("EASYPOST_API_KEY")?.into(),
                    webhook_secret: required("EASYPOST_WEBHOOK_SECRET")?.into(),
                    webhook_tolerance: match var("EASYPOST_WEBHOOK_TOLERANCE_SECS") {
                        None => DEFAULT_WEBHOOK_TOLERANCE,
                        Some(seconds) => seconds
                            .trim()
                            .parse()
                            .ok()
                            .filter(|seconds| (1..=MAX_WEBHOOK_TOLERANCE_SECS).contains(seconds))
                            .map(Duration::from_secs)
                            .ok_or_else(|| {
                                anyhow::anyhow!(
                                    "{ENV_PREFIX}_EASYPOST_WEBHOOK_TOLERANCE_SECS must be whole seconds from 1 to {MAX_WEBHOOK_TOLERANCE_SECS}"
                                )
                            })?,
                    },
                    carrier: var("EASYPOST_CARRIER").unwrap_or_else(|| "UPS".to_owned()),
                    service: var("EASYPOST_SERVICE").unwrap_or_else(|| "Ground".to_owned()),
                };
                need.secret(
                    &format!("{ENV_PREFIX}_EASYPOST_API_KEY"),
                    Some(&easypost.api_key),
                    None,
                );
                need.secret(
                    &format!("{ENV_PREFIX}_EASYPOST_WEBHOOK_SECRET"),
                    Some(&easypost.webhook_secret),
                    None,
                );
                settings.carrier = CarrierSettings::EasyPost(easypost);
            }
            other => anyhow::bail!("{ENV_PREFIX}_CARRIER={other:?} must be sandbox or easypost"),
        }
        settings.public_base_url = need.site_url(ENV_PREFIX);
        settings.signing_key = file_or_value(ENV_PREFIX, "SIGNING_KEY")?.map(Into::into);
        need.refuse_if(settings.signing_key.is_none(), || {
            format!("{ENV_PREFIX}_SIGNING_KEY is not set: the key of signed label URLs and pickup quotes (at least {MIN_SECRET_CHARS} characters)")
        });
        need.secret(
            &format!("{ENV_PREFIX}_SIGNING_KEY"),
            settings.signing_key.as_ref(),
            Some(MIN_SECRET_CHARS),
        );
        settings.mail_from = need.required(
            &format!("{ENV_PREFIX}_MAIL_FROM"),
            "the sender of label emails, e.g. Lab Shipping <shipping@lab.example.com>",
            &settings.mail_from,
        );
        if let Some(url) = file_or_value(ENV_PREFIX, "SMTP_URL")? {
            need.secret(&format!("{ENV_PREFIX}_SMTP_URL"), Some(&url.clone().into()), None);
            settings.mail = MailTransport::Smtp(url);
        } else if let Some(dir) = var("MAIL_DIR") {
            settings.mail = MailTransport::Files(PathBuf::from(dir));
            need.refuse(format!(
                "{ENV_PREFIX}_MAIL_DIR writes label emails to files; set {ENV_PREFIX}_SMTP_URL instead"
            ));
        } else {
            need.refuse(format!(
                "{ENV_PREFIX}_SMTP_URL is not set: the SMTP relay label emails go through"
            ));
        }
        if let Some(price) = var("PICKUP_PRICE_CENTS") {
            settings.pickup.price_cents = price
                .trim()
                .parse()
                .ok()
                .filter(|cents: &i64| *cents >= 0)
                .ok_or_else(|| {
                    anyhow::anyhow!("{ENV_PREFIX}_PICKUP_PRICE_CENTS must be a non-negative integer")
                })?;
        }
        if let Some(cutoff) = var("PICKUP_CUTOFF") {
            settings.pickup.cutoff = NaiveTime::parse_from_str(cutoff.trim(), "%H:%M")
                .map_err(|_| anyhow::anyhow!("{ENV_PREFIX}_PICKUP_CUTOFF must be HH:MM (UTC)"))?;
        }
        if let Some(holidays) = var("PICKUP_HOLIDAYS") {
            settings.pickup.holidays = holidays
                .split(',')
                .filter(|day| !day.trim().is_empty())
                .map(|day| NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d"))
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    anyhow::anyhow!("{ENV_PREFIX}_PICKUP_HOLIDAYS must be YYYY-MM-DD dates, comma-separated")
                })?;
        }
        settings.blobs =
            BlobSettings::from_env_without_links(ENV_PREFIX, settings.common.dev_mode, &mut need)?;
        need.finish()?;
        Ok(settings)
    }
}

//! results-svc: the lab workflow of certificates of analysis (COAs), QA-published COAs with
//! their per-analyte results, the Ed25519 content signature (current key plus previous public
//! keys, picked by each COA's `kid`), and the public verification.
//!
//! It serves `lab.results.v1.ResultsService` to labctl (staff steps), the gateway (customer reads,
//! public verification), relays its outbox (`coa.published`, `coa.retracted`) to the results
//! stream, and consumes the orders stream (samples, start of testing) and the payments stream
//! (payment releases held COAs) as group `results-svc`. On the same server it serves
//! `lab.results.v1.RegistryService`, the lab-wide instrument and method registries
//! ([`registry`], docs/registries.md), and `lab.results.v1.NotificationService`, the
//! consent-gated COA email to customers' end customers ([`notify`], docs/notifications.md).

#![forbid(unsafe_code)]

pub mod consumer;
pub mod convert;
pub mod data;
pub mod document;
pub mod domain;
pub mod events;
pub mod formats;
pub mod grpc;
pub mod grpc_notify;
pub mod grpc_registry;
pub mod notify;
pub mod registry;
pub mod repo;
pub mod service;

use domain::coa_keys::CoaKeys;
use domain::signing::CoaSigner;
use platform::config::CommonSettings;
use platform::consumer::{ConsumerSettings, StreamConsumer};
use platform::outbox::Outbox;
use platform::service::{ServiceBase, ServiceIdentity};
use proto::results::notification_service_server::{
    NotificationServiceServer, SERVICE_NAME as NOTIFICATION_GRPC_SERVICE,
};
use proto::results::registry_service_server::{RegistryServiceServer, SERVICE_NAME as REGISTRY_GRPC_SERVICE};
use proto::results::results_service_server::{ResultsServiceServer, SERVICE_NAME as GRPC_SERVICE};
use secrecy::{ExposeSecret, SecretString};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Schema owned by this service.
pub const SCHEMA: &str = "results";
/// Service name in events, logs and traces.
pub const SERVICE_NAME: &str = platform::mesh::RESULTS_SVC;
/// Name, schema and stream of this service.
pub const IDENTITY: ServiceIdentity = ServiceIdentity {
    name: SERVICE_NAME,
    schema: SCHEMA,
    domain: platform::streams::RESULTS,
};
/// Outbox of this service.
pub const OUTBOX: Outbox = IDENTITY.outbox();

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!();

/// Settings of results-svc.
#[derive(Clone, Debug)]
pub struct Settings {
    pub common: CommonSettings,
    /// Private Ed25519 JWK that signs COA contents (`RESULTS_COA_SIGNING_KEY`, or `@path`);
    /// required outside development mode.
    pub coa_signing_key: Option<SecretString>,
    /// JWK set of the public halves of keys that signed COAs before the current one
    /// (`RESULTS_COA_PREVIOUS_KEYS`, or `@path`): COAs they signed keep verifying. Public keys
    /// only, so not a secret.
    pub coa_previous_keys: Option<String>,
    /// How long one blocking read of the consumer waits.
    pub consumer_block: Duration,
    /// Letterhead and public base URL printed on COA documents (`RESULTS_LAB_NAME`,
    /// `RESULTS_LAB_ADDRESS`, `RESULTS_LAB_ACCREDITATION`, `SITE_URL`).
    pub letterhead: document::Letterhead,
    /// Where raw instrument files are stored and how their download URLs are signed
    /// (`RESULTS_BLOB_STORE`, docs/operations.md "Blob storage").
    pub blobs: platform::blobs::BlobSettings,
    /// The COA email to customers' end customers (docs/notifications.md).
    pub notifications: NotificationSettings,
}

/// The published development key of unsubscribe links (development mode only).
pub const DEVELOPMENT_UNSUBSCRIBE_KEY: &str = "development-unsubscribe-key-never-use-in-production";

/// Settings of the consent-gated COA email.
#[derive(Clone, Debug)]
pub struct NotificationSettings {
    /// The sender (`RESULTS_MAIL_FROM`).
    pub mail_from: String,
    /// The SMTP relay (`RESULTS_SMTP_URL`, a secret: it may hold credentials) or, in development
    /// only, a directory of `.eml` files (`RESULTS_MAIL_DIR`).
    pub mail: platform::mail::MailTransport,
    /// HMAC key of the one-click unsubscribe links (`RESULTS_UNSUBSCRIBE_KEY`, or `@path`; at
    /// least 32 characters); required outside development mode.
    pub unsubscribe_key: Option<SecretString>,
    /// COA emails per customer and recipient in any 24 hours (`RESULTS_COA_EMAIL_DAILY_LIMIT`).
    pub daily_limit: u32,
}

impl Default for NotificationSettings {
    fn default() -> Self {
        Self {
            mail_from: "Meridian Labs Results <results@meridian-labs.example>".to_owned(),
            mail: platform::mail::MailTransport::Files(std::env::temp_dir().join("lab-mail")),
            unsubscribe_key: None,
            daily_limit: 10,
        }
    }
}

impl NotificationSettings {
    /// Reads `RESULTS_MAIL_FROM`, `RESULTS_SMTP_URL` (or `RESULTS_MAIL_DIR` in development),
    /// `RESULTS_UNSUBSCRIBE_KEY` and `RESULTS_COA_EMAIL_DAILY_LIMIT`.
    fn from_env(need: &mut platform::production::Requirements) -> anyhow::Result<Self> {
        let mut settings = Self::default();
        settings.mail_from = need.required(
            "RESULTS_MAIL_FROM",
            "the sender of COA emails, e.g. Lab Results <results@lab.example.com>",
            &settings.mail_from,
        );
        if let Some(url) = platform::config::file_or_value("RESULTS", "SMTP_URL")? {
            need.secret("RESULTS_SMTP_URL", Some(&url.clone().into()), None);
            settings.mail = platform::mail::MailTransport::Smtp(url);
        } else if let Some(dir) = platform::env::env_var("RESULTS_MAIL_DIR") {
            settings.mail = platform::mail::MailTransport::Files(dir.into());
            need.refuse("RESULTS_MAIL_DIR writes COA emails to files; set RESULTS_SMTP_URL instead");
        } else {
            need.refuse("RESULTS_SMTP_URL is not set: the SMTP relay COA emails go through");
        }
        settings.unsubscribe_key =
            platform::config::file_or_value("RESULTS", "UNSUBSCRIBE_KEY")?.map(Into::into);
        need.refuse_if(settings.unsubscribe_key.is_none(), || {
            format!(
                "RESULTS_UNSUBSCRIBE_KEY is not set: the HMAC key of the one-click unsubscribe links in COA emails (at least {} characters)",
                platform::production::MIN_SECRET_CHARS
            )
        });
        need.secret(
            "RESULTS_UNSUBSCRIBE_KEY",
            settings.unsubscribe_key.as_ref(),
            Some(platform::production::MIN_SECRET_CHARS),
        );
        if let Some(limit) = platform::env::env_var("RESULTS_COA_EMAIL_DAILY_LIMIT") {
            settings.daily_limit =
                limit
                    .trim()
                    .parse()
                    .ok()
                    .filter(|limit| *limit >= 1)
                    .ok_or_else(|| {
                        anyhow::anyhow!("RESULTS_COA_EMAIL_DAILY_LIMIT must be a whole number of at least 1")
                    })?;
        }
        Ok(settings)
    }
}

impl Settings {
    /// Reads settings from `RESULTS_*` and the common environment variables. Outside
    /// development mode the COA key, the letterhead and the site URL must be set explicitly
    /// ([`platform::production`]).
    pub fn from_env() -> anyhow::Result<Self> {
        let common = CommonSettings::from_env("RESULTS", "127.0.0.1:50055")?;
        let mut need = platform::production::Requirements::new("results-svc", common.dev_mode);
        let coa_signing_key =
            platform::config::file_or_value("RESULTS", "COA_SIGNING_KEY")?.map(SecretString::from);
        need.refuse_if(coa_signing_key.is_none(), || {
            "RESULTS_COA_SIGNING_KEY is not set: the private Ed25519 JWK that signs published COAs (`labctl tokens generate-key --issuer results-svc`)".to_owned()
        });
        need.secret("RESULTS_COA_SIGNING_KEY", coa_signing_key.as_ref(), None);
        let coa_previous_keys = platform::config::file_or_value("RESULTS", "COA_PREVIOUS_KEYS")?;
        let letterhead = letterhead_from_env(&mut need);
        let blobs = platform::blobs::BlobSettings::from_env("RESULTS", common.dev_mode, &mut need)?;
        let notifications = NotificationSettings::from_env(&mut need)?;
        need.finish()?;
        let settings = Self {
            common,
            coa_signing_key,
            coa_previous_keys,
            consumer_block: Duration::from_secs(2),
            letterhead,
            blobs,
            notifications,
        };
        // A key set that would be refused at build is refused here, before anything connects.
        settings.coa_keys()?;
        Ok(settings)
    }

    /// Settings for tests and labd around `common`, storing files under `blob_dir`.
    pub fn local(common: CommonSettings, blob_dir: impl Into<std::path::PathBuf>) -> Self {
        let letterhead = document::Letterhead::default();
        let blobs = platform::blobs::BlobSettings::local(blob_dir, &letterhead.public_base_url);
        Self {
            common,
            coa_signing_key: None,
            coa_previous_keys: None,
            consumer_block: Duration::from_secs(2),
            letterhead,
            blobs,
            notifications: NotificationSettings::default(),
        }
    }

    /// The COA key set: the configured key (or the development key in development mode) and
    /// the previous public keys. A private key whose `x` is not the public half of its `d`, and a
    /// previous-key set with a private part, a repeated `kid` or the current key, are refused.
    pub fn coa_keys(&self) -> anyhow::Result<CoaKeys> {
        let signer = match &self.coa_signing_key {
            Some(key) => CoaSigner::from_jwk(key)
                .map_err(|error| anyhow::anyhow!("RESULTS_COA_SIGNING_KEY is refused: {error}"))?,
            None if self.common.dev_mode => CoaSigner::development(),
            None => anyhow::bail!(
                "RESULTS_COA_SIGNING_KEY is not set (a private Ed25519 JWK, `labctl tokens generate-key --issuer results-svc`)"
            ),
        };
        CoaKeys::new(signer, self.coa_previous_keys.as_deref())
            .map_err(|error| anyhow::anyhow!("RESULTS_COA_PREVIOUS_KEYS is refused: {error}"))
    }
}

/// The COA letterhead: the laboratory's identity (`LAB_*`, required outside development mode,
/// `platform::lab`) and the site the verify link points to.
fn letterhead_from_env(need: &mut platform::production::Requirements) -> document::Letterhead {
    document::Letterhead {
        lab: platform::lab::LabIdentity::from_env(need),
        public_base_url: need.site_url("RESULTS"),
    }
}

/// A built service: migrated database, bound listener.
pub struct Application {
    settings: Settings,
    keys: CoaKeys,
    mailer: platform::mail::Mailer,
    unsubscribe: notify::token::UnsubscribeKeys,
    base: ServiceBase,
}

impl Application {
    /// Connects and migrates the database and binds the gRPC listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let keys = settings.coa_keys()?;
        // A store that cannot be opened is refused before anything connects.
        platform::blobs::BlobStore::new(&settings.blobs, SCHEMA)?;
        let notifications = &settings.notifications;
        let mailer = platform::mail::Mailer::new(&notifications.mail_from, &notifications.mail)?;
        let unsubscribe_key = platform::config::refuse_development_secret(
            settings.common.dev_mode,
            "RESULTS_UNSUBSCRIBE_KEY",
            notifications.unsubscribe_key.as_ref(),
            DEVELOPMENT_UNSUBSCRIBE_KEY,
        )?;
        let unsubscribe = notify::token::UnsubscribeKeys::new(unsubscribe_key.expose_secret().as_bytes());
        let base = ServiceBase::build(IDENTITY, &settings.common, &MIGRATOR).await?;
        Ok(Self {
            settings,
            keys,
            mailer,
            unsubscribe,
            base,
        })
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.base.local_addr()
    }

    /// Sets the public site URL (the gateway's) of download links and the COA letterhead, for a
    /// mesh whose gateway address is known only after this service was built (labd's sandbox).
    pub fn set_site_url(&mut self, url: &str) {
        self.settings.blobs.public_base_url = url.to_owned();
        self.settings.letterhead.public_base_url = url.to_owned();
    }

    /// Serves until `shutdown` fires, then drains.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let store = platform::blobs::BlobStore::new(&self.settings.blobs, SCHEMA)?;
        let base = self.base;
        let results = Arc::new(service::ResultsService::new(
            base.pool.clone(),
            self.keys,
            self.settings.letterhead.clone(),
            store.clone(),
        ));
        let consumer_settings = ConsumerSettings::new(
            platform::streams::GROUP_RESULTS,
            vec![
                base.stream(platform::streams::ORDERS),
                base.stream(platform::streams::PAYMENTS),
            ],
        )
        .with_timing(Duration::from_secs(30), self.settings.consumer_block);
        let handler = Arc::new(consumer::NewsHandler::new(results.clone()));
        let consumer = tokio::spawn(
            StreamConsumer::new(
                &base.common.redis_url,
                consumer_settings,
                handler,
                base.event_verifier(),
            )
            .run(shutdown.clone()),
        );
        let notifications = base.guarded(
            NotificationServiceServer::new(grpc_notify::NotificationGrpc::new(Arc::new(
                notify::Notifications::new(
                    base.pool.clone(),
                    results.clone(),
                    self.mailer,
                    self.unsubscribe,
                    self.settings.notifications.daily_limit,
                ),
            ))),
            grpc_notify::ACCESS,
        );
        let api = base.guarded(
            ResultsServiceServer::new(grpc::ResultsGrpc::new(
                results,
                Arc::new(data::DataService::new(base.pool.clone(), store)),
            )),
            grpc::ACCESS,
        );
        let registry = base.guarded(
            RegistryServiceServer::new(grpc_registry::RegistryGrpc::new(Arc::new(
                registry::RegistryService::new(base.pool.clone()),
            ))),
            grpc_registry::ACCESS,
        );
        base.serve(
            vec![GRPC_SERVICE, REGISTRY_GRPC_SERVICE, NOTIFICATION_GRPC_SERVICE],
            vec![consumer],
            |router| {
                router
                    .add_service(api)
                    .add_service(registry)
                    .add_service(notifications)
            },
            shutdown,
        )
        .await
    }
}

/// The results-svc process once its telemetry is installed: settings from the environment, build,
/// Prometheus metrics on the internal port (`RESULTS_METRICS_ADDR`, default `127.0.0.1:51055`;
/// docs/operations.md, "Metrics"), serve until SIGTERM or SIGINT.
pub async fn run_from_env() -> anyhow::Result<()> {
    platform::service::run_process(
        SERVICE_NAME,
        "RESULTS",
        "127.0.0.1:51055",
        |shutdown| async move {
            let application = Application::build(Settings::from_env()?).await?;
            application.run_until_stopped(shutdown).await
        },
    )
    .await
}

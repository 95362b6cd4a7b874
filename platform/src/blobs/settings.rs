//! Where a service keeps its blobs, read from `<PREFIX>_*` variables (docs/operations.md, "Blob
//! storage").
//!
//! `<PREFIX>_BLOB_STORE` is `file:///absolute/dir` or `s3://bucket[/key/prefix]`; in development
//! mode it defaults to `<LAB_STATE_DIR or ./.local>/blobs/<prefix lowercase>`. An S3 store reads
//! `<PREFIX>_S3_ENDPOINT` (optional; path-style addressing when set), `<PREFIX>_S3_REGION`
//! (default `us-east-1`) and its credentials from `<PREFIX>_S3_ACCESS_KEY_ID` /
//! `<PREFIX>_S3_SECRET_ACCESS_KEY`, else `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`. A local
//! store signs its download links with `<PREFIX>_DOWNLOAD_URL_KEY` (or `@path`), required outside
//! development mode. Links start with the public site root (`SITE_URL`).

use crate::env::env_var;
use crate::production::{DEVELOPMENT_SITE_URL, MIN_SECRET_CHARS, Requirements};
use anyhow::Context;
use secrecy::SecretString;
use std::path::PathBuf;

/// The published key of local download links in development mode; refused outside it.
pub const DEVELOPMENT_DOWNLOAD_URL_KEY: &str = "blob-download-url-development-key-0000000";

/// The region an S3 store signs for when none is set.
pub const DEFAULT_S3_REGION: &str = "us-east-1";

/// Where blobs live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobLocation {
    /// A directory of the local filesystem (absolute once the store is built).
    Local { dir: PathBuf },
    /// An S3 bucket, or a key prefix in one.
    S3(S3Settings),
}

/// An S3-compatible bucket and how to reach it.
#[derive(Debug, Clone)]
pub struct S3Settings {
    pub bucket: String,
    /// Keys are stored under `{prefix}/` when set (no leading or trailing `/`).
    pub prefix: Option<String>,
    /// The service URL (`http://127.0.0.1:4569` for a local S3); AWS's own when unset. Set, it
    /// also selects path-style addressing (`{endpoint}/{bucket}/{key}`).
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<SecretString>,
}

impl PartialEq for S3Settings {
    fn eq(&self, other: &Self) -> bool {
        use secrecy::ExposeSecret;
        let secret = |settings: &Self| {
            settings
                .secret_access_key
                .as_ref()
                .map(|secret| secret.expose_secret().to_owned())
        };
        (
            &self.bucket,
            &self.prefix,
            &self.endpoint,
            &self.region,
            &self.access_key_id,
        ) == (
            &other.bucket,
            &other.prefix,
            &other.endpoint,
            &other.region,
            &other.access_key_id,
        ) && secret(self) == secret(other)
    }
}

impl Eq for S3Settings {}

/// A service's blob store settings.
#[derive(Debug, Clone)]
pub struct BlobSettings {
    pub location: BlobLocation,
    /// The HMAC key of local download links (unused by an S3 store, whose links S3 checks).
    pub download_url_key: SecretString,
    /// The public site root every local link starts with (`SITE_URL`), without a trailing `/`.
    pub public_base_url: String,
}

impl BlobSettings {
    /// Reads the settings of the service whose variables start with `prefix` (module comment);
    /// outside development mode, what is missing or a development value is recorded in `need`.
    pub fn from_env(prefix: &str, dev_mode: bool, need: &mut Requirements) -> anyhow::Result<Self> {
        Self::from_lookup(prefix, dev_mode, need, &env_var)
    }

    /// [`Self::from_env`] for a service that keeps blobs but never links to them (its files
    /// are served through its own API: shipping-svc's labels): a local store needs no
    /// `<PREFIX>_DOWNLOAD_URL_KEY`, and the settings hold a random one.
    pub fn from_env_without_links(
        prefix: &str,
        dev_mode: bool,
        need: &mut Requirements,
    ) -> anyhow::Result<Self> {
        Self::read(prefix, dev_mode, need, &env_var, false)
    }

    /// [`Self::from_env`] over any variable lookup (the tests' fixed environments); the public
    /// site root still comes from [`Requirements::site_url`].
    pub fn from_lookup(
        prefix: &str,
        dev_mode: bool,
        need: &mut Requirements,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        Self::read(prefix, dev_mode, need, lookup, true)
    }

    fn read(
        prefix: &str,
        dev_mode: bool,
        need: &mut Requirements,
        lookup: &dyn Fn(&str) -> Option<String>,
        links: bool,
    ) -> anyhow::Result<Self> {
        let store_variable = format!("{prefix}_BLOB_STORE");
        let location = match lookup(&store_variable) {
            Some(value) => parse_location(&store_variable, value.trim())?,
            None => {
                need.refuse(format!(
                    "{store_variable} is not set: where blobs are kept, file:///absolute/dir or s3://bucket[/prefix]"
                ));
                let state = lookup("LAB_STATE_DIR").unwrap_or_else(|| "./.local".to_owned());
                BlobLocation::Local {
                    dir: PathBuf::from(state).join("blobs").join(prefix.to_lowercase()),
                }
            }
        };
        let location = match location {
            BlobLocation::S3(s3) => BlobLocation::S3(read_s3(prefix, s3, need, lookup)?),
            local => local,
        };
        let key_variable = format!("{prefix}_DOWNLOAD_URL_KEY");
        let configured_key = if links {
            read_secret(&key_variable, lookup)?
        } else {
            None
        };
        if links && matches!(location, BlobLocation::Local { .. }) {
            need.refuse_if(configured_key.is_none(), || {
                format!(
                    "{key_variable} is not set: the HMAC key of local download links (32 characters or more)"
                )
            });
            need.secret(&key_variable, configured_key.as_ref(), Some(MIN_SECRET_CHARS));
        }
        // Without a configured key: the published one in development mode; otherwise (an S3
        // store, whose links S3 signs) a random one, so no process outside development mode
        // ever holds the published key.
        let download_url_key = configured_key.unwrap_or_else(|| {
            if dev_mode && links {
                DEVELOPMENT_DOWNLOAD_URL_KEY.to_owned().into()
            } else {
                hex::encode(rand::random::<[u8; 32]>()).into()
            }
        });
        Ok(Self {
            location,
            download_url_key,
            public_base_url: need.site_url(prefix),
        })
    }

    /// A local store in `dir` whose links start with `public_base_url`, keyed with the development
    /// key (tests and labd; see [`Self::with_download_url_key`]).
    pub fn local(dir: impl Into<PathBuf>, public_base_url: &str) -> Self {
        Self {
            location: BlobLocation::Local { dir: dir.into() },
            download_url_key: DEVELOPMENT_DOWNLOAD_URL_KEY.to_owned().into(),
            public_base_url: public_base_url.trim().trim_end_matches('/').to_owned(),
        }
    }

    /// An S3 store at `endpoint` (path-style; plain HTTP allowed) with static credentials (tests).
    pub fn s3(endpoint: &str, bucket: &str, region: &str, access_key: &str, secret: &str) -> Self {
        Self {
            location: BlobLocation::S3(S3Settings {
                bucket: bucket.to_owned(),
                prefix: None,
                endpoint: Some(endpoint.trim_end_matches('/').to_owned()),
                region: region.to_owned(),
                access_key_id: Some(access_key.to_owned()),
                secret_access_key: Some(secret.to_owned().into()),
            }),
            download_url_key: DEVELOPMENT_DOWNLOAD_URL_KEY.to_owned().into(),
            public_base_url: DEVELOPMENT_SITE_URL.to_owned(),
        }
    }

    /// The same settings with another key for local links.
    pub fn with_download_url_key(mut self, key: SecretString) -> Self {
        self.download_url_key = key;
        self
    }
}

/// Parses `file:///dir` or `s3://bucket[/prefix]` (credentials and region come later).
fn parse_location(variable: &str, value: &str) -> anyhow::Result<BlobLocation> {
    let url = url::Url::parse(value).with_context(|| {
        format!("{variable}={value:?} is not file:///absolute/dir or s3://bucket[/prefix]")
    })?;
    match url.scheme() {
        "file" => {
            let dir = url
                .to_file_path()
                .ok()
                .filter(|_| url.host_str().is_none_or(str::is_empty) && url.query().is_none())
                .with_context(|| format!("{variable}={value:?} must be file:///absolute/dir"))?;
            Ok(BlobLocation::Local { dir })
        }
        "s3" => {
            let bucket = url.host_str().filter(|bucket| !bucket.is_empty());
            let bucket = bucket.with_context(|| format!("{variable}={value:?} names no bucket"))?;
            anyhow::ensure!(
                url.username().is_empty() && url.password().is_none() && url.port().is_none(),
                "{variable}={value:?}: put S3 credentials and endpoints in their own variables"
            );
            anyhow::ensure!(
                url.query().is_none() && url.fragment().is_none(),
                "{variable}={value:?} has a query or fragment"
            );
            let prefix = url.path().trim_matches('/');
            let prefix = if prefix.is_empty() {
                None
            } else {
                super::keys::validate_key(prefix).with_context(|| format!("{variable}: the key prefix"))?;
                Some(prefix.to_owned())
            };
            Ok(BlobLocation::S3(S3Settings {
                bucket: bucket.to_owned(),
                prefix,
                endpoint: None,
                region: DEFAULT_S3_REGION.to_owned(),
                access_key_id: None,
                secret_access_key: None,
            }))
        }
        other => anyhow::bail!("{variable}={value:?}: the scheme {other:?} is not file or s3"),
    }
}

/// Adds the endpoint, region and credentials of an `s3://` store.
fn read_s3(
    prefix: &str,
    mut s3: S3Settings,
    need: &mut Requirements,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<S3Settings> {
    s3.endpoint = lookup(&format!("{prefix}_S3_ENDPOINT"))
        .map(|endpoint| endpoint.trim().trim_end_matches('/').to_owned());
    if let Some(endpoint) = &s3.endpoint {
        let parsed = url::Url::parse(endpoint)
            .with_context(|| format!("{prefix}_S3_ENDPOINT={endpoint:?} is not a URL"))?;
        anyhow::ensure!(
            matches!(parsed.scheme(), "http" | "https"),
            "{prefix}_S3_ENDPOINT={endpoint:?} must be http or https"
        );
        need.refuse_if(parsed.scheme() == "http", || {
            format!("{prefix}_S3_ENDPOINT={endpoint:?} is plain http: use https outside development mode")
        });
    }
    if let Some(region) = lookup(&format!("{prefix}_S3_REGION")) {
        s3.region = region.trim().to_owned();
    }
    let own_id = format!("{prefix}_S3_ACCESS_KEY_ID");
    let own_secret = format!("{prefix}_S3_SECRET_ACCESS_KEY");
    let (id_variable, secret_variable) = if lookup(&own_id).is_some() || lookup(&own_secret).is_some() {
        (own_id, own_secret)
    } else {
        ("AWS_ACCESS_KEY_ID".to_owned(), "AWS_SECRET_ACCESS_KEY".to_owned())
    };
    s3.access_key_id = lookup(&id_variable).map(|id| id.trim().to_owned());
    s3.secret_access_key = read_secret(&secret_variable, lookup)?;
    anyhow::ensure!(
        s3.access_key_id.is_some() && s3.secret_access_key.is_some(),
        "{prefix}_BLOB_STORE is an S3 bucket but {id_variable} and {secret_variable} are not both set"
    );
    need.secret(&secret_variable, s3.secret_access_key.as_ref(), None);
    Ok(s3)
}

/// A secret variable's value; `@path` reads it from a file (a mounted Secret).
fn read_secret(
    variable: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<SecretString>> {
    let Some(value) = lookup(variable) else {
        return Ok(None);
    };
    let text = match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("setting {variable}: cannot read {path}"))?
            .trim()
            .to_owned(),
        None => value,
    };
    Ok(Some(text.into()))
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;

//! Blob storage (feature `blobs`): labels, COA PDFs and raw files kept in a local directory or an
//! S3-compatible bucket through `object_store`, handed out as signed, expiring download URLs.
//!
//! The store holds bytes only: a local directory cannot keep attributes, so content type, file
//! name, size and checksum live in the caller's PostgreSQL rows. Writes are atomic on both stores
//! (the local store writes a temporary file beside the object and renames it over; S3 replaces an
//! object whole). A URL from [`BlobStore::signed_url`] downloads exactly the object's bytes until
//! it expires: S3's is presigned with SigV4 and checked by S3; a local one points at the gateway's
//! `/api/v1/files/{service}/{key}` route, which checks it with [`BlobStore::open_local_link`]
//! ([`links`] has its format). Keys follow [`keys::validate_key`].

pub mod keys;
mod links;
mod settings;

pub use links::{LinkError, parse_query as parse_local_link_query};
pub use settings::{BlobLocation, BlobSettings, DEFAULT_S3_REGION, DEVELOPMENT_DOWNLOAD_URL_KEY, S3Settings};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use links::LinkSigner;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::local::LocalFileSystem;
use object_store::signer::{Method, Signer};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use secrecy::ExposeSecret;
use std::sync::Arc;
use std::time::Duration;

/// Why a blob operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// No object has this key.
    #[error("blob not found")]
    NotFound,
    /// The store failed or could not be reached (its message, for the logs only).
    #[error("blob store unavailable: {0}")]
    Unavailable(String),
    /// The request cannot be served: an invalid key, or an expiry not in the future.
    #[error("invalid blob request: {0}")]
    Invalid(String),
}

impl From<object_store::Error> for BlobError {
    fn from(error: object_store::Error) -> Self {
        match error {
            object_store::Error::NotFound { .. } => Self::NotFound,
            object_store::Error::InvalidPath { source } => Self::Invalid(source.to_string()),
            other => Self::Unavailable(other.to_string()),
        }
    }
}

/// Which store, with what signs its links.
#[derive(Debug, Clone)]
enum Kind {
    Local {
        signer: LinkSigner,
    },
    S3 {
        bucket: Arc<AmazonS3>,
        prefix: Option<String>,
    },
}

/// A service's blob store.
#[derive(Debug, Clone)]
pub struct BlobStore {
    store: Arc<dyn ObjectStore>,
    kind: Kind,
}

impl BlobStore {
    /// Opens the store of `settings` (creating a local directory); `service` (`results`) is the
    /// path segment of its local links.
    pub fn new(settings: &BlobSettings, service: &str) -> anyhow::Result<Self> {
        keys::validate_key(service)
            .ok()
            .filter(|()| !service.contains('/'))
            .ok_or_else(|| anyhow::anyhow!("blob service name {service:?} must be one key segment"))?;
        match &settings.location {
            BlobLocation::Local { dir } => {
                std::fs::create_dir_all(dir).map_err(|error| {
                    anyhow::anyhow!("cannot create the blob directory {}: {error}", dir.display())
                })?;
                let dir = std::fs::canonicalize(dir)?;
                let store = LocalFileSystem::new_with_prefix(&dir)?;
                let signer = LinkSigner::new(
                    settings.download_url_key.clone(),
                    &settings.public_base_url,
                    service,
                );
                Ok(Self {
                    store: Arc::new(store),
                    kind: Kind::Local { signer },
                })
            }
            BlobLocation::S3(s3) => {
                // object_store's reqwest has rustls without a provider of its own.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut builder = AmazonS3Builder::new()
                    .with_bucket_name(&s3.bucket)
                    .with_region(&s3.region);
                if let (Some(id), Some(secret)) = (&s3.access_key_id, &s3.secret_access_key) {
                    builder = builder
                        .with_access_key_id(id)
                        .with_secret_access_key(secret.expose_secret());
                }
                if let Some(endpoint) = &s3.endpoint {
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_virtual_hosted_style_request(false)
                        .with_allow_http(endpoint.starts_with("http://"));
                }
                let bucket = Arc::new(builder.build()?);
                Ok(Self {
                    store: bucket.clone(),
                    kind: Kind::S3 {
                        bucket,
                        prefix: s3.prefix.clone(),
                    },
                })
            }
        }
    }

    /// Whether this is a local store (its links are served by the gateway's files route).
    pub fn is_local(&self) -> bool {
        matches!(self.kind, Kind::Local { .. })
    }

    fn path(&self, key: &str) -> Result<object_store::path::Path, BlobError> {
        let prefix = match &self.kind {
            Kind::S3 { prefix, .. } => prefix.as_deref(),
            Kind::Local { .. } => None,
        };
        keys::store_path(prefix, key)
    }

    /// Stores `bytes` under `key`, replacing any object there, atomically.
    pub async fn put(&self, key: &str, bytes: Bytes) -> Result<(), BlobError> {
        let path = self.path(key)?;
        self.store.put(&path, PutPayload::from_bytes(bytes)).await?;
        Ok(())
    }

    /// The bytes under `key`; [`BlobError::NotFound`] when there is no such object.
    pub async fn get(&self, key: &str) -> Result<Bytes, BlobError> {
        let path = self.path(key)?;
        Ok(self.store.get(&path).await?.bytes().await?)
    }

    /// Deletes the object under `key`; deleting a missing object succeeds (as on S3).
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// A URL that downloads exactly the object's bytes until `expires_at` (rounded up to a whole
    /// second) and fails afterwards or after any change to it. The object need not exist yet.
    pub async fn signed_url(&self, key: &str, expires_at: DateTime<Utc>) -> Result<url::Url, BlobError> {
        let path = self.path(key)?;
        let now = Utc::now();
        let lifetime_ms = (expires_at - now).num_milliseconds();
        if lifetime_ms <= 0 {
            return Err(BlobError::Invalid(format!(
                "the expiry {expires_at} is not in the future"
            )));
        }
        match &self.kind {
            Kind::Local { signer } => {
                let expires = expires_at.timestamp() + i64::from(expires_at.timestamp_subsec_nanos() > 0);
                signer.link(key, expires).map_err(BlobError::Invalid)
            }
            Kind::S3 { bucket, .. } => {
                let seconds = u64::try_from(lifetime_ms).unwrap_or(0).div_ceil(1000);
                Ok(bucket
                    .signed_url(Method::GET, &path, Duration::from_secs(seconds))
                    .await?)
            }
        }
    }

    /// Checks a local link's parts (from the route's path and query) as of `now`: the MAC over the
    /// service, key and expiry, then the expiry. Any edit, another key or a passed expiry is an
    /// error whose reason is for the logs; the route answers all of them alike.
    pub fn open_local_link(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
        now: DateTime<Utc>,
    ) -> Result<(), LinkError> {
        match &self.kind {
            Kind::Local { signer } => signer.open(key, expires, signature, now),
            Kind::S3 { .. } => Err(LinkError::NotLocal),
        }
    }

    /// [`Self::open_local_link`] from the link's raw query string, which must hold exactly
    /// `expires` and `signature` (what the files route calls with the decoded key of its path).
    pub fn open_local_link_query(&self, key: &str, query: &str, now: DateTime<Utc>) -> Result<(), LinkError> {
        if !self.is_local() {
            return Err(LinkError::NotLocal);
        }
        let (expires, signature) = links::parse_query(query)?;
        self.open_local_link(key, expires, &signature, now)
    }
}

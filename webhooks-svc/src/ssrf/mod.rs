//! The SSRF guard: webhooks go only to `https` URLs of public addresses.
//!
//! A URL is checked at registration ([`WebhookUrl::parse`] for its shape and literal address,
//! [`AddressGuard::vet_host`] for the addresses its name resolves to) and again at every
//! connection: the HTTP client resolves names only through [`AddressGuard`] (a
//! `reqwest::dns::Resolve`), which refuses the name when ANY of its addresses is refused and
//! otherwise hands the client exactly the vetted addresses, so a DNS answer that changes between
//! the check and the connect (rebinding) cannot reach a refused address. IP-literal URLs never
//! reach a resolver; the sender checks them with [`AddressGuard::check_literal`] before every
//! attempt. Redirects are never followed (see `sender.rs`).

pub mod ranges;
pub mod resolver;

pub use ranges::{RefusedAddress, check_ip};
pub use resolver::{Resolver, StaticResolver, SystemResolver};

use reqwest::Url;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Longest accepted webhook URL, in bytes.
pub const MAX_URL_LENGTH: usize = 2048;
/// How long one name resolution may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a URL or a host is refused.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The URL itself is not acceptable (scheme, user info, host, length).
    #[error("{0}")]
    Shape(&'static str),
    /// The host is, or resolves to, a refused address.
    #[error(transparent)]
    Refused(#[from] RefusedAddress),
    /// The name resolves to no address.
    #[error("the host {0} does not resolve to any address")]
    NoAddress(String),
    /// Resolution failed or timed out.
    #[error("the host {host} could not be resolved: {cause}")]
    Lookup { host: String, cause: String },
}

/// The host of a webhook URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlHost {
    Ip(IpAddr),
    Domain(String),
}

/// A URL with an acceptable shape: `https`, a host, no user info, at most 2048 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookUrl {
    url: Url,
    host: UrlHost,
}

impl WebhookUrl {
    /// Parses and checks the shape of a URL (not its addresses).
    pub fn parse(text: &str) -> Result<Self, GuardError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(GuardError::Shape("the url is required"));
        }
        if text.len() > MAX_URL_LENGTH {
            return Err(GuardError::Shape("the url must be at most 2048 characters"));
        }
        let url = Url::parse(text).map_err(|_| GuardError::Shape("the url is not a valid absolute URL"))?;
        if url.scheme() != "https" {
            return Err(GuardError::Shape("the url must use https"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(GuardError::Shape("the url must not contain user info"));
        }
        let host = match url.host() {
            Some(url::Host::Ipv4(v4)) => UrlHost::Ip(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => UrlHost::Ip(IpAddr::V6(v6)),
            Some(url::Host::Domain(domain)) if !domain.is_empty() => {
                UrlHost::Domain(domain.trim_end_matches('.').to_ascii_lowercase())
            }
            _ => return Err(GuardError::Shape("the url must name a host")),
        };
        if matches!(&host, UrlHost::Domain(domain) if domain.is_empty()) {
            return Err(GuardError::Shape("the url must name a host"));
        }
        Ok(Self { url, host })
    }

    /// The normalized URL.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    pub fn host(&self) -> &UrlHost {
        &self.host
    }
}

/// Checks addresses and resolves names for webhook targets.
#[derive(Clone)]
pub struct AddressGuard {
    resolver: Arc<dyn Resolver>,
    allow_loopback: bool,
}

impl std::fmt::Debug for AddressGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressGuard")
            .field("allow_loopback", &self.allow_loopback)
            .finish_non_exhaustive()
    }
}

impl AddressGuard {
    pub fn new(resolver: Arc<dyn Resolver>, allow_loopback: bool) -> Self {
        Self {
            resolver,
            allow_loopback,
        }
    }

    /// Checks a literal address.
    pub fn check_literal(&self, address: IpAddr) -> Result<(), RefusedAddress> {
        check_ip(address, self.allow_loopback).inspect_err(|refused| refused.log(&address.to_string()))
    }

    /// Resolves `host` and returns its addresses when every one of them is acceptable.
    pub async fn vet_host(&self, host: &str) -> Result<Vec<IpAddr>, GuardError> {
        let lookup = || GuardError::Lookup {
            host: host.to_owned(),
            cause: "timed out".to_owned(),
        };
        let addresses = tokio::time::timeout(RESOLVE_TIMEOUT, self.resolver.resolve(host))
            .await
            .map_err(|_| lookup())?
            .map_err(|error| GuardError::Lookup {
                host: host.to_owned(),
                cause: error.to_string(),
            })?;
        if addresses.is_empty() {
            return Err(GuardError::NoAddress(host.to_owned()));
        }
        for address in &addresses {
            check_ip(*address, self.allow_loopback).inspect_err(|refused| refused.log(host))?;
        }
        Ok(addresses)
    }

    /// The registration check of a URL: its literal address, or every address of its name.
    pub async fn vet_url(&self, url: &WebhookUrl) -> Result<(), GuardError> {
        match url.host() {
            UrlHost::Ip(address) => Ok(self.check_literal(*address)?),
            UrlHost::Domain(domain) => self.vet_host(domain).await.map(|_| ()),
        }
    }
}

impl reqwest::dns::Resolve for AddressGuard {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.clone();
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        Box::pin(async move {
            let addresses = guard.vet_host(&host).await.map_err(|error| {
                tracing::warn!(%host, %error, "webhook connection refused by the address guard");
                Box::new(error) as Box<dyn std::error::Error + Send + Sync>
            })?;
            // Port 0 is replaced by the URL's port by the connector.
            let pinned: Vec<SocketAddr> = addresses
                .into_iter()
                .map(|address| SocketAddr::new(address, 0))
                .collect();
            Ok(Box::new(pinned.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests;

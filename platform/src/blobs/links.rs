//! Signed, expiring download links of the local store (S3 presigns its own).
//!
//! A link is `{public base}/api/v1/files/{service}/{key}?expires=<unix>&signature=<sig>`: `key`
//! percent-encoded segment by segment with its `/` kept, `expires` the Unix second from which the
//! link is refused, and `sig` the unpadded base64url HMAC-SHA256, under the store's download-URL
//! key, of `blob:{service}:{key}:{expires}`. Changing the service, the key or the expiry breaks
//! the MAC; the query must hold exactly these two parameters once each ([`parse_query`]), so an
//! added, repeated or renamed parameter is refused too. The MAC is checked in constant time
//! before the expiry.

use super::keys::{encode_key_path, validate_key};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

/// Why a local download link is refused. The HTTP layer answers every one of them with the same
/// `403` and logs the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The store is S3: its links are presigned URLs that S3 itself checks.
    #[error("the blob store is not local: it serves no local links")]
    NotLocal,
    /// The key in the link's path is not a valid key.
    #[error("the link's key is invalid: {0}")]
    InvalidKey(String),
    /// The signature is not unpadded base64url of a SHA-256 MAC.
    #[error("the link's signature is malformed")]
    MalformedSignature,
    /// The query is not exactly `expires=<integer>&signature=<text>` (in either order).
    #[error("the link's query is malformed: {0}")]
    MalformedQuery(String),
    /// The MAC does not match the service, key and expiry (an edited link, or another key).
    #[error("the link's signature does not match")]
    BadSignature,
    /// The link was authentic but its expiry has passed.
    #[error("the link expired at {0}")]
    Expired(i64),
}

/// The `expires` and `signature` of a link's raw query string, refusing anything else: a missing,
/// repeated or unknown parameter, or an expiry that is not an integer.
pub fn parse_query(query: &str) -> Result<(i64, String), LinkError> {
    let malformed = |why: &str| LinkError::MalformedQuery(why.to_owned());
    let (mut expires, mut signature) = (None, None);
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match name.as_ref() {
            "expires" => &mut expires,
            "signature" => &mut signature,
            _ => return Err(malformed("an unknown parameter")),
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(malformed("a repeated parameter"));
        }
    }
    let expires = expires
        .ok_or_else(|| malformed("no expires"))?
        .parse::<i64>()
        .map_err(|_| malformed("expires is not an integer"))?;
    Ok((expires, signature.ok_or_else(|| malformed("no signature"))?))
}

/// The key and shape of one service's local links.
#[derive(Clone)]
pub(crate) struct LinkSigner {
    key: SecretString,
    public_base_url: String,
    service: String,
}

impl std::fmt::Debug for LinkSigner {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LinkSigner")
            .field("public_base_url", &self.public_base_url)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl LinkSigner {
    pub(crate) fn new(key: SecretString, public_base_url: &str, service: &str) -> Self {
        Self {
            key,
            public_base_url: public_base_url.trim().trim_end_matches('/').to_owned(),
            service: service.to_owned(),
        }
    }

    fn mac(&self, key: &str, expires: i64) -> Hmac<Sha256> {
        // HMAC takes a key of any length, so this cannot fail.
        let mut mac = Hmac::<Sha256>::new_from_slice(self.key.expose_secret().as_bytes())
            .expect("HMAC accepts any key length");
        mac.update(format!("blob:{}:{key}:{expires}", self.service).as_bytes());
        mac
    }

    /// The link of `key` (already validated) expiring at the Unix second `expires`.
    pub(crate) fn link(&self, key: &str, expires: i64) -> Result<url::Url, String> {
        let signature = URL_SAFE_NO_PAD.encode(self.mac(key, expires).finalize().into_bytes());
        let text = format!(
            "{}/api/v1/files/{}/{}?expires={expires}&signature={signature}",
            self.public_base_url,
            encode_key_path(&self.service),
            encode_key_path(key),
        );
        url::Url::parse(&text).map_err(|error| format!("the public base URL makes no URL: {error}"))
    }

    /// Checks a link's parts as of `now`.
    pub(crate) fn open(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
        now: DateTime<Utc>,
    ) -> Result<(), LinkError> {
        validate_key(key).map_err(|error| LinkError::InvalidKey(error.to_string()))?;
        let given = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| LinkError::MalformedSignature)?;
        self.mac(key, expires)
            .verify_slice(&given)
            .map_err(|_| LinkError::BadSignature)?;
        if now.timestamp() >= expires {
            return Err(LinkError::Expired(expires));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> LinkSigner {
        LinkSigner::new("k".repeat(40).into(), "https://lab.example/", "results")
    }

    #[test]
    fn a_query_holds_exactly_expires_and_signature() {
        assert_eq!(
            parse_query("signature=abc&expires=12"),
            Ok((12, "abc".to_owned()))
        );
        for query in [
            "",
            "expires=12",
            "signature=abc",
            "expires=12&signature=abc&filename=x",
            "expires=12&expires=13&signature=abc",
            "expires=soon&signature=abc",
        ] {
            assert!(
                matches!(parse_query(query), Err(LinkError::MalformedQuery(_))),
                "{query}"
            );
        }
    }

    #[test]
    fn a_link_names_the_route_and_opens_until_it_expires() {
        let url = signer().link("coa/a.pdf", 1_800_000_000).unwrap();
        assert_eq!(url.path(), "/api/v1/files/results/coa/a.pdf");
        let signature = url
            .query_pairs()
            .find(|(name, _)| name == "signature")
            .unwrap()
            .1
            .into_owned();
        let before = DateTime::from_timestamp(1_799_999_999, 0).unwrap();
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        assert_eq!(
            signer().open("coa/a.pdf", 1_800_000_000, &signature, before),
            Ok(())
        );
        assert_eq!(
            signer().open("coa/a.pdf", 1_800_000_000, &signature, at),
            Err(LinkError::Expired(1_800_000_000))
        );
        let other_service = LinkSigner::new("k".repeat(40).into(), "https://lab.example", "labels");
        assert_eq!(
            other_service.open("coa/a.pdf", 1_800_000_000, &signature, before),
            Err(LinkError::BadSignature)
        );
    }
}

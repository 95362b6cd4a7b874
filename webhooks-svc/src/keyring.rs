//! Encryption at rest of signing secrets (and of stored idempotent answers that carry one):
//! AES-256-GCM under a keyring read from `WEBHOOKS_SECRET_KEYS`.
//!
//! The keyring is a comma-separated list of `<key-id>:<base64 of 32 bytes>`; the first key seals,
//! every key opens. A sealed value is the text `v1:<key-id>:<base64url(nonce ‖ ciphertext+tag)>`
//! with a fresh 96-bit random nonce and associated data that binds it to its place (the endpoint
//! id for a secret), so a ciphertext copied to another row does not open. To rotate the key,
//! prepend a new key and keep the old ones until nothing is sealed with them (the service
//! re-seals endpoint secrets in the background; stored idempotent answers expire in 24 hours).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rand::TryRngCore;

/// Version tag of the sealed format.
const FORMAT: &str = "v1";
const NONCE_LEN: usize = 12;
/// Id of the development key used when no keyring is configured.
pub const DEVELOPMENT_KEY_ID: &str = "dev";
/// The development key: public, for local runs and tests only.
const DEVELOPMENT_KEY: [u8; 32] = *b"lab-webhooks-development-key-32b";

/// Why a sealed value did not open.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OpenError {
    #[error("the sealed value is malformed")]
    Malformed,
    #[error("the key {0:?} is not in the keyring")]
    UnknownKey(String),
    #[error("the sealed value does not authenticate")]
    Forged,
}

/// The keys that seal and open secrets; the first one seals.
#[derive(Clone)]
pub struct Keyring {
    keys: Vec<(String, Aes256Gcm)>,
    development: bool,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("Keyring")
            .field("key_ids", &ids)
            .field("development", &self.development)
            .finish()
    }
}

impl Keyring {
    /// Parses `<key-id>:<base64 32 bytes>[,…]`.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut keys: Vec<(String, Aes256Gcm)> = Vec::new();
        let mut development = false;
        for entry in text.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
            let (id, encoded) = entry
                .split_once(':')
                .ok_or_else(|| anyhow::anyhow!("each key must be <key-id>:<base64 of 32 bytes>"))?;
            anyhow::ensure!(
                !id.is_empty()
                    && id.len() <= 32
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "a key id must be 1 to 32 characters of letters, digits, '-' or '_'"
            );
            anyhow::ensure!(
                keys.iter().all(|(existing, _)| existing != id),
                "the key id {id:?} appears twice"
            );
            let bytes = STANDARD
                .decode(encoded.trim())
                .map_err(|_| anyhow::anyhow!("the key {id:?} is not valid base64"))?;
            anyhow::ensure!(bytes.len() == 32, "the key {id:?} must be 32 bytes");
            development |= bytes == DEVELOPMENT_KEY;
            let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| anyhow::anyhow!("bad key length"))?;
            keys.push((id.to_owned(), cipher));
        }
        anyhow::ensure!(!keys.is_empty(), "the keyring needs at least one key");
        Ok(Self { keys, development })
    }

    /// The public development keyring (never for production; the service warns loudly).
    pub fn development() -> Self {
        let cipher = Aes256Gcm::new_from_slice(&DEVELOPMENT_KEY).expect("32-byte key");
        Self {
            keys: vec![(DEVELOPMENT_KEY_ID.to_owned(), cipher)],
            development: true,
        }
    }

    /// True for the built-in development keyring, or a keyring holding the published key.
    pub fn is_development(&self) -> bool {
        self.development
    }

    /// Id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.keys[0].0
    }

    /// Seals `plaintext` under the current key, bound to `context`.
    pub fn seal(&self, plaintext: &[u8], context: &[u8]) -> String {
        let (id, cipher) = &self.keys[0];
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng
            .try_fill_bytes(&mut nonce)
            .expect("the operating system's random source works");
        let sealed = cipher
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad: context,
                },
            )
            .expect("AES-GCM sealing of a short value cannot fail");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{FORMAT}:{id}:{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// Opens a value sealed by any key of the keyring for the same `context`.
    pub fn open(&self, sealed: &str, context: &[u8]) -> Result<Vec<u8>, OpenError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some(FORMAT), Some(id), Some(encoded)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(OpenError::Malformed);
        };
        let cipher = self
            .keys
            .iter()
            .find(|(key_id, _)| key_id == id)
            .map(|(_, cipher)| cipher)
            .ok_or_else(|| OpenError::UnknownKey(id.to_owned()))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| OpenError::Malformed)?;
        if bytes.len() < NONCE_LEN + 16 {
            return Err(OpenError::Malformed);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| OpenError::Malformed)?;
        cipher
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: context,
                },
            )
            .map_err(|_| OpenError::Forged)
    }

    /// The id of the key that sealed a value, if it is well formed.
    pub fn key_id_of(sealed: &str) -> Option<&str> {
        let mut parts = sealed.splitn(3, ':');
        match (parts.next(), parts.next()) {
            (Some(FORMAT), Some(id)) => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> String {
        STANDARD.encode([byte; 32])
    }

    #[test]
    fn a_sealed_value_opens_with_its_context_only() {
        let keyring = Keyring::parse(&format!("k1:{}", key(1))).unwrap();
        let sealed = keyring.seal(b"whsec_abc", b"endpoint-1");
        assert!(sealed.starts_with("v1:k1:"));
        assert!(!sealed.contains("whsec_abc"));
        assert_eq!(keyring.open(&sealed, b"endpoint-1").unwrap(), b"whsec_abc");
        assert_eq!(keyring.open(&sealed, b"endpoint-2"), Err(OpenError::Forged));
        assert_ne!(keyring.seal(b"whsec_abc", b"endpoint-1"), sealed, "fresh nonce");
    }

    #[test]
    fn a_new_first_key_seals_while_older_keys_still_open() {
        let old = Keyring::parse(&format!("k1:{}", key(1))).unwrap();
        let sealed_with_old = old.seal(b"secret", b"ctx");
        let rotated = Keyring::parse(&format!("k2:{}, k1:{}", key(2), key(1))).unwrap();
        assert_eq!(rotated.current_id(), "k2");
        assert_eq!(rotated.open(&sealed_with_old, b"ctx").unwrap(), b"secret");
        let sealed_with_new = rotated.seal(b"secret", b"ctx");
        assert_eq!(Keyring::key_id_of(&sealed_with_new), Some("k2"));
        assert_eq!(
            old.open(&sealed_with_new, b"ctx"),
            Err(OpenError::UnknownKey("k2".to_owned()))
        );
    }

    #[test]
    fn a_tampered_value_or_a_malformed_keyring_is_refused() {
        let keyring = Keyring::parse(&format!("k1:{}", key(7))).unwrap();
        let mut sealed = keyring.seal(b"secret", b"ctx").into_bytes();
        let last = sealed.len() - 2;
        sealed[last] = if sealed[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(sealed).unwrap();
        assert!(keyring.open(&tampered, b"ctx").is_err());
        assert_eq!(keyring.open("garbage", b"ctx"), Err(OpenError::Malformed));
        assert!(Keyring::parse("").is_err());
        assert!(Keyring::parse("k1").is_err());
        assert!(Keyring::parse(&format!("k1:{}", STANDARD.encode([1u8; 16]))).is_err());
        assert!(Keyring::parse(&format!("k1:{},k1:{}", key(1), key(2))).is_err());
        assert!(Keyring::parse(&format!("bad id:{}", key(1))).is_err());
        assert!(!format!("{keyring:?}").contains(&key(7)));
    }
}

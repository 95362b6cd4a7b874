//! API keys: the plaintext format `svc_live_<public-id>_<secret>`, generation from the OS
//! random source, and the peppered HMAC-SHA256 verifier compared in constant time.
//!
//! The public id (16 lowercase alphanumerics) finds the key record; the secret (32
//! alphanumerics) proves possession. Only `HMAC-SHA256(pepper, public_id ":" secret)` is stored.

use hmac::{Hmac, Mac};
use rand::TryRngCore;
use rand::rngs::OsRng;
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Prefix of every live key.
pub const KEY_PREFIX: &str = "svc_live_";
/// Length of the public id.
pub const PUBLIC_ID_LEN: usize = 16;
/// Length of the secret.
pub const SECRET_LEN: usize = 32;

const LOWER_ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A key as presented by a client, split into its parts. The secret is never logged.
pub struct PresentedKey {
    pub public_id: String,
    secret: SecretString,
}

impl std::fmt::Debug for PresentedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PresentedKey({})", self.public_id)
    }
}

impl PresentedKey {
    /// Parses `svc_live_<16 lowercase alphanumerics>_<32 alphanumerics>`; `None` when malformed.
    pub fn parse(plaintext: &str) -> Option<Self> {
        Self::parse_with_prefix(KEY_PREFIX, plaintext)
    }

    /// Parses `<prefix><16 lowercase alphanumerics>_<32 alphanumerics>` (API keys and operator
    /// credentials share the format under different prefixes).
    pub fn parse_with_prefix(prefix: &str, plaintext: &str) -> Option<Self> {
        let rest = plaintext.strip_prefix(prefix)?;
        let (public_id, secret) = rest.split_once('_')?;
        let public_ok = public_id.len() == PUBLIC_ID_LEN
            && public_id
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
        let secret_ok = secret.len() == SECRET_LEN && secret.bytes().all(|byte| byte.is_ascii_alphanumeric());
        (public_ok && secret_ok).then(|| Self {
            public_id: public_id.to_owned(),
            secret: secret.to_owned().into(),
        })
    }

    /// Checks the presented secret against a stored verifier in constant time.
    pub fn matches(&self, pepper: &SecretString, verifier: &[u8]) -> bool {
        let expected = compute_verifier(pepper, &self.public_id, self.secret.expose_secret());
        expected.as_slice().ct_eq(verifier).into()
    }
}

/// A freshly generated key: the plaintext (shown once) and what is stored.
pub struct GeneratedKey {
    pub public_id: String,
    pub plaintext: SecretString,
    pub verifier: Vec<u8>,
}

/// Generates a key from the operating system's random source.
pub fn generate(pepper: &SecretString) -> anyhow::Result<GeneratedKey> {
    generate_with_prefix(KEY_PREFIX, pepper)
}

/// Generates a credential `<prefix><public-id>_<secret>` from the operating system's random source.
pub fn generate_with_prefix(prefix: &str, pepper: &SecretString) -> anyhow::Result<GeneratedKey> {
    let public_id = random_string(LOWER_ALPHANUMERIC, PUBLIC_ID_LEN)?;
    let secret = random_string(ALPHANUMERIC, SECRET_LEN)?;
    let verifier = compute_verifier(pepper, &public_id, &secret);
    let plaintext = format!("{prefix}{public_id}_{secret}").into();
    Ok(GeneratedKey {
        public_id,
        plaintext,
        verifier,
    })
}

/// `HMAC-SHA256(pepper, public_id ":" secret)`.
pub fn compute_verifier(pepper: &SecretString, public_id: &str, secret: &str) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(pepper.expose_secret().as_bytes())
        .unwrap_or_else(|_| unreachable!("hmac takes keys of any length"));
    mac.update(public_id.as_bytes());
    mac.update(b":");
    mac.update(secret.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Draws `len` characters uniformly from `alphabet` (rejection sampling avoids modulo bias).
fn random_string(alphabet: &[u8], len: usize) -> anyhow::Result<String> {
    let limit = 256 - (256 % alphabet.len());
    let mut out = String::with_capacity(len);
    let mut buffer = [0u8; 64];
    while out.len() < len {
        OsRng
            .try_fill_bytes(&mut buffer)
            .map_err(|error| anyhow::anyhow!("os random source failed: {error}"))?;
        for byte in buffer {
            if usize::from(byte) < limit && out.len() < len {
                out.push(char::from(alphabet[usize::from(byte) % alphabet.len()]));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pepper() -> SecretString {
        "pepper".to_owned().into()
    }

    #[test]
    fn a_generated_key_parses_and_matches_its_verifier() {
        let key = generate(&pepper()).unwrap();
        let plaintext = key.plaintext.expose_secret();
        assert!(plaintext.starts_with("svc_live_"));
        assert_eq!(plaintext.len(), KEY_PREFIX.len() + PUBLIC_ID_LEN + 1 + SECRET_LEN);
        let presented = PresentedKey::parse(plaintext).unwrap();
        assert_eq!(presented.public_id, key.public_id);
        assert!(presented.matches(&pepper(), &key.verifier));
        assert!(!presented.matches(&"other".to_owned().into(), &key.verifier));
    }

    #[test]
    fn a_wrong_secret_does_not_match() {
        let key = generate(&pepper()).unwrap();
        let forged = format!("{KEY_PREFIX}{}_{}", key.public_id, "A".repeat(SECRET_LEN));
        assert!(
            !PresentedKey::parse(&forged)
                .unwrap()
                .matches(&pepper(), &key.verifier)
        );
    }

    #[test]
    fn malformed_keys_are_refused() {
        let secret = "a".repeat(SECRET_LEN);
        for bad in [
            String::new(),
            format!("svc_test_abcdefghijklmnop_{secret}"),
            format!("svc_live_ABCDEFGHIJKLMNOP_{secret}"),
            format!("svc_live_abcdefghijklmno_{secret}"),
            format!("svc_live_abcdefghijklmnop_{secret}x"),
            format!("svc_live_abcdefghijklmnop_{}", "a-".repeat(16)),
        ] {
            assert!(PresentedKey::parse(&bad).is_none(), "{bad}");
        }
        assert!(PresentedKey::parse(&format!("svc_live_abcdefghijklmnop_{secret}")).is_some());
    }

    #[test]
    fn generated_parts_use_their_alphabets() {
        let key = generate(&pepper()).unwrap();
        assert!(
            key.public_id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        );
        assert_eq!(key.verifier.len(), 32);
    }
}

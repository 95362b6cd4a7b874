//! Signing secrets and the `X-SVC-Signature` header.
//!
//! A secret is `whsec_` + base64 of 32 random bytes from the operating system. The HMAC key is
//! the secret string's UTF-8 bytes (as Stripe's verifiers expect). The header is
//! `t=<unix-seconds>,v1=<hex HMAC-SHA256 over "<t>.<raw body>">`, with one `v1=` per signing
//! secret (two during a rotation overlap, the newest first).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::TryRngCore;
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

/// Prefix of every signing secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// Creates a new signing secret.
pub fn generate_secret() -> SecretString {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random source works");
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes)).into()
}

/// The hex HMAC-SHA256 of `<timestamp>.<body>` under `secret`.
pub fn sign(secret: &SecretString, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// The `X-SVC-Signature` value for `body` at `timestamp`, signed by every secret in order.
pub fn signature_header(timestamp: i64, body: &[u8], secrets: &[&SecretString]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&sign(secret, timestamp, body));
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_random_and_32_bytes() {
        let first = generate_secret();
        let second = generate_secret();
        let text = first.expose_secret();
        assert!(text.starts_with(SECRET_PREFIX));
        let decoded = STANDARD.decode(&text[SECRET_PREFIX.len()..]).unwrap();
        assert_eq!(decoded.len(), 32);
        assert_ne!(text, second.expose_secret());
    }

    #[test]
    fn the_header_matches_a_known_hmac_and_lists_every_secret() {
        let secret: SecretString = "whsec_test".to_owned().into();
        let old: SecretString = "whsec_old".to_owned().into();
        // HMAC-SHA256(key="whsec_test", "1700000000.{}"), computed with Python's hmac module.
        let expected = "35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91";
        assert_eq!(
            signature_header(1_700_000_000, b"{}", &[&secret]),
            format!("t=1700000000,v1={expected}")
        );
        let both = signature_header(1_700_000_000, b"{}", &[&secret, &old]);
        let parts: Vec<&str> = both.split(',').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1], format!("v1={expected}"));
        assert_eq!(parts[2], format!("v1={}", sign(&old, 1_700_000_000, b"{}")));
    }
}

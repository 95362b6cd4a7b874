//! The one-click unsubscribe token of a COA email: `<consent id>.<expiry>.<signature>`, where the
//! signature is the base64url HMAC-SHA256 of `unsubscribe:<consent id>:<expiry>` under the
//! configured unsubscribe key (`RESULTS_UNSUBSCRIBE_KEY`). The token is the only authorization
//! of the public unsubscribe link, so it names one consent and cannot be altered or extended.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

/// How long an unsubscribe link works after its email was sent: a year, so that an old
/// email can still stop the next ones.
pub const LIFETIME_SECONDS: i64 = 365 * 24 * 3600;

/// Signs and checks unsubscribe tokens.
#[derive(Clone)]
pub struct UnsubscribeKeys {
    key: Vec<u8>,
}

impl std::fmt::Debug for UnsubscribeKeys {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("UnsubscribeKeys(..)")
    }
}

impl UnsubscribeKeys {
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    /// The token of `consent_id`, valid until `expires` (Unix seconds).
    pub fn sign(&self, consent_id: Uuid, expires: i64) -> String {
        let signature = URL_SAFE_NO_PAD.encode(self.mac(consent_id, expires).finalize().into_bytes());
        format!("{}.{expires}.{signature}", consent_id.simple())
    }

    /// The consent a token names, when its signature checks out and it has not expired at
    /// `now` (Unix seconds); `None` otherwise (tampered, malformed or expired alike).
    pub fn verify(&self, token: &str, now: i64) -> Option<Uuid> {
        let mut parts = token.split('.');
        let (Some(id), Some(expires), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let consent_id = Uuid::try_parse(id).ok()?;
        let expires: i64 = expires.parse().ok()?;
        let given = URL_SAFE_NO_PAD.decode(signature).ok()?;
        self.mac(consent_id, expires).verify_slice(&given).ok()?;
        (expires >= now).then_some(consent_id)
    }

    fn mac(&self, consent_id: Uuid, expires: i64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(format!("unsubscribe:{}:{expires}", consent_id.simple()).as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_consent_until_it_expires() {
        let keys = UnsubscribeKeys::new(b"a key of the tests, long enough to be one");
        let consent = Uuid::now_v7();
        let token = keys.sign(consent, 1_000);
        assert_eq!(keys.verify(&token, 999), Some(consent));
        assert_eq!(keys.verify(&token, 1_000), Some(consent));
        assert_eq!(keys.verify(&token, 1_001), None, "expired");
    }

    #[test]
    fn an_altered_token_or_another_key_is_refused() {
        let keys = UnsubscribeKeys::new(b"a key of the tests, long enough to be one");
        let consent = Uuid::now_v7();
        let token = keys.sign(consent, 5_000);
        let other = keys.sign(Uuid::now_v7(), 5_000);
        let (id, rest) = token.split_once('.').unwrap();
        let (_, other_rest) = other.split_once('.').unwrap();
        let _ = id;
        let swapped = format!("{}.{rest}", Uuid::now_v7().simple());
        let extended = token.replacen(".5000.", ".9000.", 1);
        let foreign = UnsubscribeKeys::new(b"another key entirely, also long enough").sign(consent, 5_000);
        for bad in [
            swapped.as_str(),
            extended.as_str(),
            foreign.as_str(),
            other_rest,
            "",
            "a.b.c",
            &format!("{token}.x"),
        ] {
            assert_eq!(keys.verify(bad, 0), None, "{bad}");
        }
    }
}

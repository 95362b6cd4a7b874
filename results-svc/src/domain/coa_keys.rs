//! The COA key set: the current key, which signs every COA published from now on, and the public
//! halves of previous keys (`RESULTS_COA_PREVIOUS_KEYS`, a JWK set), so that a COA keeps verifying
//! after the key that signed it was rotated out. Every COA records the `kid` that signed it
//! (`signing_key_id`); verification takes the key of exactly that `kid` and tries no other. The
//! whole set is published as a JWK set, the current key first (docs/results.md, "Signing keys
//! and rotation").
//!
//! A previous key is public only: a set that carries a private part (`d`), lists a `kid` twice,
//! or lists the current key (by `kid` or by public key) is refused, so results-svc does not start.

use super::signing::{self, CoaSigner};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::VerifyingKey;

/// One public key of the set, by the `kid` that COAs name.
#[derive(Clone, Debug)]
pub struct PublicCoaKey {
    pub kid: String,
    key: VerifyingKey,
}

impl PublicCoaKey {
    /// The public key as base64url (the JWK's `x`).
    pub fn x(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.to_bytes())
    }
}

/// What the signature of a stored COA says under the key set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureCheck {
    /// The key the COA names verifies its signature over its content.
    Valid,
    /// No key of the set has the COA's `kid` (its key left the set, or the COA names none).
    UnknownKey,
    /// The key the COA names does not verify the signature (the content or signature changed).
    Invalid,
}

/// The current signing key and every public key a COA may name.
#[derive(Clone, Debug)]
pub struct CoaKeys {
    signer: CoaSigner,
    /// The current key's public half first, then the previous keys in their configured order.
    keys: Vec<PublicCoaKey>,
}

#[derive(serde::Deserialize)]
struct PublicJwk {
    kty: String,
    crv: String,
    kid: String,
    x: String,
    /// Present only to refuse it: a previous key is never private.
    #[serde(default)]
    d: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct PublicJwkSet {
    keys: Vec<PublicJwk>,
}

impl CoaKeys {
    /// The set of `signer` and the previous keys of `previous` (a JWK set of public Ed25519 keys,
    /// or `None`).
    pub fn new(signer: CoaSigner, previous: Option<&str>) -> anyhow::Result<Self> {
        let mut keys = vec![PublicCoaKey {
            kid: signer.kid.clone(),
            key: signer.verifying_key(),
        }];
        let set: PublicJwkSet = match previous {
            Some(text) => serde_json::from_str(text).map_err(|error| {
                anyhow::anyhow!(
                    "the previous COA keys are not a JWK set {{\"keys\":[…]}} of public keys: {error}"
                )
            })?,
            None => PublicJwkSet { keys: Vec::new() },
        };
        for jwk in set.keys {
            let kid = jwk.kid;
            anyhow::ensure!(
                jwk.kty == "OKP" && jwk.crv == "Ed25519",
                "the previous COA key {kid:?} is not an Ed25519 key"
            );
            anyhow::ensure!(!kid.trim().is_empty(), "a previous COA key has an empty kid");
            anyhow::ensure!(
                jwk.d.is_none(),
                "the previous COA key {kid:?} carries a private part (d): list only its public half"
            );
            let key = signing::public_key(&jwk.x).ok_or_else(|| {
                anyhow::anyhow!("the previous COA key {kid:?} has a malformed x (not an Ed25519 public key)")
            })?;
            anyhow::ensure!(
                kid != signer.kid && key != signer.verifying_key(),
                "the previous COA key {kid:?} is the current key: list only keys that no longer sign"
            );
            anyhow::ensure!(
                keys.iter().all(|known| known.kid != kid),
                "the previous COA key {kid:?} is listed twice"
            );
            keys.push(PublicCoaKey { kid, key });
        }
        Ok(Self { signer, keys })
    }

    /// The key that signs new COAs.
    pub fn signer(&self) -> &CoaSigner {
        &self.signer
    }

    /// Every public key: the current one first, then the previous ones.
    pub fn public_keys(&self) -> &[PublicCoaKey] {
        &self.keys
    }

    /// Checks `signature` over `content` with the key of `kid`, and no other.
    pub fn check(&self, kid: &str, content: &str, signature: &str) -> SignatureCheck {
        match self.keys.iter().find(|known| known.kid == kid) {
            None => SignatureCheck::UnknownKey,
            Some(known) if signing::verify_with(&known.key, content, signature) => SignatureCheck::Valid,
            Some(_) => SignatureCheck::Invalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signer(kid: &str, seed: u8) -> CoaSigner {
        let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let jwk = json!({
            "kty": "OKP", "crv": "Ed25519", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()),
            "d": URL_SAFE_NO_PAD.encode([seed; 32]),
        });
        CoaSigner::from_jwk(&jwk.to_string().into()).unwrap()
    }

    fn set(keys: &[serde_json::Value]) -> String {
        json!({ "keys": keys }).to_string()
    }

    #[test]
    fn a_coa_verifies_with_the_key_its_kid_names_and_with_no_other() {
        let old = signer("coa-1", 1);
        let keys = CoaKeys::new(signer("coa-2", 2), Some(&set(&[old.public_jwk()]))).unwrap();
        let kids: Vec<&str> = keys.public_keys().iter().map(|key| key.kid.as_str()).collect();
        assert_eq!(kids, ["coa-2", "coa-1"]);
        let old_signature = old.sign("{\"a\":1}");
        assert_eq!(
            keys.check("coa-1", "{\"a\":1}", &old_signature),
            SignatureCheck::Valid
        );
        assert_eq!(
            keys.check("coa-2", "{\"a\":1}", &old_signature),
            SignatureCheck::Invalid
        );
        assert_eq!(
            keys.check("coa-1", "{\"a\":2}", &old_signature),
            SignatureCheck::Invalid
        );
        assert_eq!(
            keys.check("coa-0", "{\"a\":1}", &old_signature),
            SignatureCheck::UnknownKey
        );
        let new_signature = keys.signer().sign("{\"a\":1}");
        assert_eq!(
            keys.check("coa-2", "{\"a\":1}", &new_signature),
            SignatureCheck::Valid
        );

        let rotated_out = CoaKeys::new(signer("coa-2", 2), None).unwrap();
        assert_eq!(
            rotated_out.check("coa-1", "{\"a\":1}", &old_signature),
            SignatureCheck::UnknownKey
        );
    }

    #[test]
    fn previous_keys_with_a_private_part_a_repeated_kid_or_the_current_key_are_refused() {
        let current = signer("coa-2", 2);
        let old = signer("coa-1", 1).public_jwk();
        let mut private = old.clone();
        private["d"] = json!(URL_SAFE_NO_PAD.encode([1u8; 32]));
        let mut current_renamed = current.public_jwk();
        current_renamed["kid"] = json!("coa-2-again");
        let mut other_under_current_kid = signer("coa-3", 3).public_jwk();
        other_under_current_kid["kid"] = json!("coa-2");
        let cases = [
            (set(std::slice::from_ref(&private)), "carries a private part"),
            (set(&[old.clone(), old.clone()]), "listed twice"),
            (set(&[current.public_jwk()]), "is the current key"),
            (set(&[current_renamed]), "is the current key"),
            (set(&[other_under_current_kid]), "is the current key"),
            (
                set(&[json!({ "kty": "OKP", "crv": "Ed25519", "kid": "x", "x": "AAAA" })]),
                "malformed x",
            ),
            (old.to_string(), "not a JWK set"),
        ];
        for (text, reason) in cases {
            let error = CoaKeys::new(current.clone(), Some(&text)).unwrap_err();
            assert!(error.to_string().contains(reason), "{text}: {error}");
        }
        assert!(CoaKeys::new(current, Some(&set(&[]))).is_ok());
    }
}

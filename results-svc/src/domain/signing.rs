//! The Ed25519 key that signs the canonical content of every published COA, and its public JWK
//! (served at the gateway's well-known URL with the previous keys, [`super::coa_keys`]) so anyone
//! can verify a COA offline.
//!
//! The private key is a JWK (`kty` OKP, `crv` Ed25519, `kid`, `x`, `d`), the same shape
//! `labctl tokens generate-key` prints; its `x` must be the public half of its `d`, or the key is
//! refused. In development mode a published development key is used when none is configured;
//! outside it, results-svc refuses to start without one.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

/// Signs COA contents.
#[derive(Clone)]
pub struct CoaSigner {
    pub kid: String,
    key: SigningKey,
    /// HMAC key of download links, derived from the private key: a listing signs a link per COA
    /// on every read, which an HMAC does in a microsecond.
    link_key: [u8; 32],
}

fn link_key(key: &SigningKey) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update(b"lab-mesh COA download links v1:");
    digest.update(key.to_bytes());
    digest.finalize().into()
}

impl std::fmt::Debug for CoaSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CoaSigner(kid={})", self.kid)
    }
}

#[derive(serde::Deserialize)]
struct PrivateJwk {
    kty: String,
    crv: String,
    kid: String,
    x: String,
    d: String,
}

impl CoaSigner {
    /// Parses a private Ed25519 JWK whose `x` is the public half of its `d`.
    pub fn from_jwk(text: &SecretString) -> anyhow::Result<Self> {
        let jwk: PrivateJwk = serde_json::from_str(text.expose_secret()).map_err(|error| {
            anyhow::anyhow!("the COA signing key is not a private JWK with kty, crv, kid, x and d: {error}")
        })?;
        anyhow::ensure!(
            jwk.kty == "OKP" && jwk.crv == "Ed25519",
            "the COA signing key is not an Ed25519 key"
        );
        anyhow::ensure!(
            !jwk.kid.trim().is_empty(),
            "the COA signing key has an empty kid (every COA records the kid that signed it)"
        );
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(&jwk.d)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| anyhow::anyhow!("the COA signing key {:?} has a malformed d", jwk.kid))?;
        let key = SigningKey::from_bytes(&seed);
        anyhow::ensure!(
            URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()) == jwk.x,
            "the COA signing key {:?}: x does not match d (its public part is not the public half of its private part)",
            jwk.kid
        );
        Ok(Self {
            kid: jwk.kid,
            link_key: link_key(&key),
            key,
        })
    }

    /// The published development key (development mode only).
    pub fn development() -> Self {
        let seed: [u8; 32] = Sha256::digest(b"lab-mesh development COA signing key v1").into();
        let key = SigningKey::from_bytes(&seed);
        Self {
            kid: "coa-dev".into(),
            link_key: link_key(&key),
            key,
        }
    }

    /// Signs `content`; the signature as base64url without padding.
    pub fn sign(&self, content: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(content.as_bytes()).to_bytes())
    }

    /// The HMAC-SHA256 (base64url) of a download link's message.
    pub fn sign_link(&self, message: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.link_key).expect("any key length");
        mac.update(message.as_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// True when `signature` is [`CoaSigner::sign_link`] of `message` (constant time).
    pub fn verify_link(&self, message: &str, signature: &str) -> bool {
        let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.link_key).expect("any key length");
        mac.update(message.as_bytes());
        mac.verify_slice(&signature).is_ok()
    }

    /// The public half of this key.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The public JWK (`kty`, `crv`, `kid`, `x`, `use`, `alg`).
    pub fn public_jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "OKP", "crv": "Ed25519", "kid": self.kid, "use": "sig", "alg": "EdDSA",
            "x": URL_SAFE_NO_PAD.encode(self.key.verifying_key().to_bytes()),
        })
    }
}

/// The Ed25519 public key of a base64url `x` (32 bytes, a valid curve point).
pub fn public_key(x: &str) -> Option<VerifyingKey> {
    URL_SAFE_NO_PAD
        .decode(x)
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .and_then(|bytes| VerifyingKey::from_bytes(&bytes).ok())
}

/// True when the base64url `signature` over `content` verifies with `key`.
pub fn verify_with(key: &VerifyingKey, content: &str, signature: &str) -> bool {
    URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
        .map(|bytes| Signature::from_bytes(&bytes))
        .is_some_and(|signature| key.verify(content.as_bytes(), &signature).is_ok())
}

/// Verifies a base64url signature over `content` with a base64url public key `x`.
pub fn verify(x: &str, content: &str, signature: &str) -> bool {
    public_key(x).is_some_and(|key| verify_with(&key, content, signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_with_the_public_key_and_fails_on_other_content() {
        let signer = CoaSigner::development();
        let signature = signer.sign("{\"a\":1}");
        let x = signer.public_jwk()["x"].as_str().unwrap().to_owned();
        assert!(verify(&x, "{\"a\":1}", &signature));
        assert!(!verify(&x, "{\"a\":2}", &signature));
        let link = signer.sign_link("coa-document:x:1");
        assert!(signer.verify_link("coa-document:x:1", &link));
        assert!(!signer.verify_link("coa-document:x:2", &link));
    }

    fn private_jwk(kid: &str, seed: [u8; 32]) -> serde_json::Value {
        let key = SigningKey::from_bytes(&seed);
        serde_json::json!({
            "kty": "OKP", "crv": "Ed25519", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()),
            "d": URL_SAFE_NO_PAD.encode(seed),
        })
    }

    #[test]
    fn a_private_jwk_parses_when_its_x_is_the_public_half_of_its_d() {
        let jwk = private_jwk("coa-1", [7; 32]);
        let signer = CoaSigner::from_jwk(&jwk.to_string().into()).unwrap();
        assert_eq!(signer.kid, "coa-1");
        assert_eq!(signer.public_jwk()["x"], jwk["x"]);
    }

    #[test]
    fn a_private_jwk_whose_x_does_not_match_its_d_or_lacks_x_or_kid_is_refused() {
        let mut mismatched = private_jwk("coa-1", [7; 32]);
        mismatched["x"] = private_jwk("other", [8; 32])["x"].clone();
        let error = CoaSigner::from_jwk(&mismatched.to_string().into()).unwrap_err();
        assert!(error.to_string().contains("x does not match d"), "{error}");

        let mut without_x = private_jwk("coa-1", [7; 32]);
        without_x.as_object_mut().unwrap().remove("x");
        assert!(CoaSigner::from_jwk(&without_x.to_string().into()).is_err());

        let without_kid = private_jwk(" ", [7; 32]);
        let error = CoaSigner::from_jwk(&without_kid.to_string().into()).unwrap_err();
        assert!(error.to_string().contains("empty kid"), "{error}");
    }
}

//! The Ed25519 key that signs the canonical content of every published COA, and its public JWK
//! (served at the gateway's well-known URL) so anyone can verify a COA offline.
//!
//! The private key is a JWK (`kty` OKP, `crv` Ed25519, `kid`, `x`, `d`), the same shape
//! `labctl tokens generate-key` prints. In development mode a published development key is used
//! when none is configured; outside it, results-svc refuses to start without one.

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
    d: String,
}

impl CoaSigner {
    /// Parses a private Ed25519 JWK.
    pub fn from_jwk(text: &SecretString) -> anyhow::Result<Self> {
        let jwk: PrivateJwk = serde_json::from_str(text.expose_secret())
            .map_err(|error| anyhow::anyhow!("the COA signing key is not a private JWK: {error}"))?;
        anyhow::ensure!(
            jwk.kty == "OKP" && jwk.crv == "Ed25519",
            "the COA signing key is not an Ed25519 key"
        );
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(&jwk.d)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| anyhow::anyhow!("the COA signing key has a malformed d"))?;
        let key = SigningKey::from_bytes(&seed);
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

    /// The public JWK (`kty`, `crv`, `kid`, `x`, `use`, `alg`).
    pub fn public_jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "OKP", "crv": "Ed25519", "kid": self.kid, "use": "sig", "alg": "EdDSA",
            "x": URL_SAFE_NO_PAD.encode(self.key.verifying_key().to_bytes()),
        })
    }
}

/// Verifies a base64url signature over `content` with a base64url public key `x`.
pub fn verify(x: &str, content: &str, signature: &str) -> bool {
    let key = URL_SAFE_NO_PAD
        .decode(x)
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .and_then(|bytes| VerifyingKey::from_bytes(&bytes).ok());
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
        .map(|bytes| Signature::from_bytes(&bytes));
    match (key, signature) {
        (Some(key), Some(signature)) => key.verify(content.as_bytes(), &signature).is_ok(),
        _ => false,
    }
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
}

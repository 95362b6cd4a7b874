//! Ed25519 key material of principal tokens: one process's signing key and the trusted public
//! keys of every issuer, in JSON Web Key form, plus the published development keys.
//!
//! A signing key is a private JWK `{"kty":"OKP","crv":"Ed25519","kid":…,"d":…,"x":…}`; the trust
//! set is a JWK set `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":…,"x":…,"iss":…}]}` in which
//! every public key names the issuer (the process) allowed to sign with it. Several keys of one
//! issuer may be trusted at once, which is how keys rotate (docs/operations.md).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{DecodingKey, EncodingKey};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// PKCS#8 v1 prefix of an Ed25519 private key (RFC 8410), followed by the 32-byte seed.
const PKCS8_ED25519_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// Domain separation of the published development seeds.
const DEV_SEED_LABEL: &str = "lab-mesh development token key v1:";

/// The processes of the mesh that may sign tokens, whose development keys are published.
pub const MESH_ISSUERS: [&str; 8] = crate::mesh::ALL;

/// A process's private signing key.
#[derive(Clone)]
pub struct SigningKey {
    /// Key id, written into every token header.
    pub kid: String,
    pub(crate) encoding: EncodingKey,
    /// The same key for detached signatures (event envelopes, `crate::events_trust`).
    pub(crate) detached: ed25519_dalek::SigningKey,
    /// The public half (raw 32 bytes, base64url), for the trust set.
    pub public_x: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey(kid={})", self.kid)
    }
}

#[derive(Serialize, Deserialize)]
struct Jwk {
    kty: String,
    crv: String,
    kid: String,
    x: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    d: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iss: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct JwkSet {
    keys: Vec<Jwk>,
}

fn check_okp(jwk: &Jwk) -> anyhow::Result<()> {
    anyhow::ensure!(
        jwk.kty == "OKP" && jwk.crv == "Ed25519",
        "key {:?} is not an Ed25519 OKP key",
        jwk.kid
    );
    anyhow::ensure!(!jwk.kid.trim().is_empty(), "a key has an empty kid");
    Ok(())
}

fn public_of(seed: &[u8; 32]) -> [u8; 32] {
    ed25519_dalek::SigningKey::from_bytes(seed)
        .verifying_key()
        .to_bytes()
}

impl SigningKey {
    /// Builds a signing key from its 32-byte seed.
    pub fn from_seed(kid: &str, seed: &[u8; 32]) -> Self {
        let mut der = PKCS8_ED25519_PREFIX.to_vec();
        der.extend_from_slice(seed);
        Self {
            kid: kid.to_owned(),
            encoding: EncodingKey::from_ed_der(&der),
            detached: ed25519_dalek::SigningKey::from_bytes(seed),
            public_x: URL_SAFE_NO_PAD.encode(public_of(seed)),
        }
    }

    /// Parses a private JWK; the `x` it carries must match its `d`.
    pub fn from_jwk(text: &SecretString) -> anyhow::Result<Self> {
        let jwk: Jwk = serde_json::from_str(text.expose_secret())
            .map_err(|error| anyhow::anyhow!("the signing key is not a private JWK: {error}"))?;
        check_okp(&jwk)?;
        let d = jwk
            .d
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("the signing key {:?} has no private part d", jwk.kid))?;
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(d)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| anyhow::anyhow!("the signing key {:?} has a malformed d", jwk.kid))?;
        let key = Self::from_seed(&jwk.kid, &seed);
        anyhow::ensure!(
            key.public_x == jwk.x,
            "the signing key {:?}: x does not match d",
            jwk.kid
        );
        Ok(key)
    }

    /// Generates a fresh random key.
    pub fn generate(kid: &str) -> (Self, SecretString) {
        let seed: [u8; 32] = rand::random();
        let key = Self::from_seed(kid, &seed);
        let jwk = Jwk {
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            kid: kid.to_owned(),
            x: key.public_x.clone(),
            d: Some(URL_SAFE_NO_PAD.encode(seed)),
            iss: None,
        };
        let private = serde_json::to_string(&jwk).unwrap_or_default();
        (key, private.into())
    }

    /// The published development key of `issuer` (development mode only).
    pub fn development(issuer: &str) -> Self {
        Self::from_seed(&format!("{issuer}-dev"), &development_seed(issuer))
    }

    /// The public JWK of this key for `issuer`, as an entry of the trust set.
    pub fn public_jwk(&self, issuer: &str) -> serde_json::Value {
        serde_json::json!({
            "kty": "OKP", "crv": "Ed25519", "kid": self.kid, "x": self.public_x, "iss": issuer,
        })
    }

    /// A detached Ed25519 signature of `message` (64 bytes).
    pub fn sign_detached(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer;
        self.detached.sign(message).to_bytes()
    }

    /// True when this is the published development key of some mesh issuer.
    pub fn is_development(&self) -> bool {
        is_development_public_key(&self.public_x)
    }
}

fn development_seed(issuer: &str) -> [u8; 32] {
    Sha256::digest(format!("{DEV_SEED_LABEL}{issuer}").as_bytes()).into()
}

/// The published development seed of `issuer`, for tests that try to configure it.
#[cfg(test)]
pub(crate) fn development_seed_for_tests(issuer: &str) -> [u8; 32] {
    development_seed(issuer)
}

fn is_development_public_key(x: &str) -> bool {
    MESH_ISSUERS
        .iter()
        .any(|issuer| URL_SAFE_NO_PAD.encode(public_of(&development_seed(issuer))) == x)
}

/// A trusted public key and the issuer it speaks for.
#[derive(Clone)]
pub(crate) struct TrustedKey {
    pub issuer: String,
    pub decoding: DecodingKey,
    /// The same key for detached signatures.
    pub verifying: ed25519_dalek::VerifyingKey,
}

fn verifying_key(x: &str) -> Option<ed25519_dalek::VerifyingKey> {
    let raw: [u8; 32] = URL_SAFE_NO_PAD.decode(x).ok()?.try_into().ok()?;
    ed25519_dalek::VerifyingKey::from_bytes(&raw).ok()
}

/// The public keys a process accepts, by key id.
#[derive(Clone, Default)]
pub struct TrustedKeys {
    pub(crate) by_kid: HashMap<String, TrustedKey>,
}

impl std::fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut kids: Vec<&String> = self.by_kid.keys().collect();
        kids.sort();
        write!(f, "TrustedKeys({kids:?})")
    }
}

impl TrustedKeys {
    /// Parses a JWK set whose every key names its issuer in `iss`.
    pub fn from_jwks(text: &str) -> anyhow::Result<Self> {
        let set: JwkSet = serde_json::from_str(text)
            .map_err(|error| anyhow::anyhow!("the trusted keys are not a JWK set: {error}"))?;
        anyhow::ensure!(!set.keys.is_empty(), "the trusted key set is empty");
        let mut keys = Self::default();
        for jwk in set.keys {
            check_okp(&jwk)?;
            anyhow::ensure!(
                jwk.d.is_none(),
                "the trusted key {:?} carries a private part",
                jwk.kid
            );
            let issuer = jwk
                .iss
                .filter(|issuer| !issuer.trim().is_empty())
                .ok_or_else(|| anyhow::anyhow!("the trusted key {:?} names no issuer (iss)", jwk.kid))?;
            let decoding = DecodingKey::from_ed_components(&jwk.x)
                .map_err(|error| anyhow::anyhow!("the trusted key {:?}: {error}", jwk.kid))?;
            let raw = URL_SAFE_NO_PAD.decode(&jwk.x).unwrap_or_default();
            anyhow::ensure!(raw.len() == 32, "the trusted key {:?} is not 32 bytes", jwk.kid);
            let verifying = verifying_key(&jwk.x)
                .ok_or_else(|| anyhow::anyhow!("the trusted key {:?} is not an Ed25519 point", jwk.kid))?;
            anyhow::ensure!(
                keys.by_kid
                    .insert(
                        jwk.kid.clone(),
                        TrustedKey {
                            issuer,
                            decoding,
                            verifying
                        }
                    )
                    .is_none(),
                "the key id {:?} is listed twice",
                jwk.kid
            );
        }
        Ok(keys)
    }

    /// Trusts `key` as a key of `issuer`.
    pub fn with(mut self, issuer: &str, key: &SigningKey) -> Self {
        let decoding = DecodingKey::from_ed_components(&key.public_x).expect("a derived public key decodes");
        let trusted = TrustedKey {
            issuer: issuer.to_owned(),
            decoding,
            verifying: key.detached.verifying_key(),
        };
        self.by_kid.insert(key.kid.clone(), trusted);
        self
    }

    /// The published development keys of every mesh issuer (development mode only).
    pub fn development() -> Self {
        MESH_ISSUERS.iter().fold(Self::default(), |keys, issuer| {
            keys.with(issuer, &SigningKey::development(issuer))
        })
    }

    /// Key ids of published development keys in this set.
    pub fn development_kids(&self, jwks: &str) -> Vec<String> {
        let Ok(set) = serde_json::from_str::<JwkSet>(jwks) else {
            return Vec::new();
        };
        set.keys
            .into_iter()
            .filter(|jwk| is_development_public_key(&jwk.x))
            .map(|jwk| jwk.kid)
            .collect()
    }

    /// True when no key is trusted.
    pub fn is_empty(&self) -> bool {
        self.by_kid.is_empty()
    }

    /// The issuer the key `kid` speaks for, if it is trusted.
    pub fn issuer_of(&self, kid: &str) -> Option<&str> {
        self.by_kid.get(kid).map(|trusted| trusted.issuer.as_str())
    }

    /// Verifies a detached Ed25519 `signature` of `message` by the key `kid`, and returns the
    /// issuer that key speaks for; `None` when the key is unknown or the signature is wrong.
    pub fn verify_detached(&self, kid: &str, message: &[u8], signature: &[u8]) -> Option<&str> {
        let trusted = self.by_kid.get(kid)?;
        let signature = ed25519_dalek::Signature::from_slice(signature).ok()?;
        trusted.verifying.verify_strict(message, &signature).ok()?;
        Some(&trusted.issuer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_private_jwk_parses_back_to_the_same_key() {
        let (key, private) = SigningKey::generate("gateway-2026-11");
        let parsed = SigningKey::from_jwk(&private).unwrap();
        assert_eq!(parsed.public_x, key.public_x);
        assert_eq!(parsed.kid, "gateway-2026-11");
        assert!(!parsed.is_development());
    }

    #[test]
    fn a_private_jwk_whose_public_part_does_not_match_is_refused() {
        let (_, private) = SigningKey::generate("a");
        let (other, _) = SigningKey::generate("b");
        let mut jwk: serde_json::Value = serde_json::from_str(private.expose_secret()).unwrap();
        jwk["x"] = other.public_x.into();
        assert!(SigningKey::from_jwk(&jwk.to_string().into()).is_err());
    }

    #[test]
    fn development_keys_are_recognised_and_distinct_per_issuer() {
        let gateway = SigningKey::development("gateway");
        let orders = SigningKey::development("orders-svc");
        assert!(gateway.is_development() && orders.is_development());
        assert_ne!(gateway.public_x, orders.public_x);
        let jwks = serde_json::json!({ "keys": [gateway.public_jwk("gateway")] }).to_string();
        let trusted = TrustedKeys::from_jwks(&jwks).unwrap();
        assert_eq!(trusted.development_kids(&jwks), vec!["gateway-dev".to_owned()]);
    }

    #[test]
    fn a_trust_set_without_issuers_or_with_private_parts_is_refused() {
        let (key, private) = SigningKey::generate("k1");
        let mut entry = key.public_jwk("gateway");
        entry.as_object_mut().unwrap().remove("iss");
        assert!(TrustedKeys::from_jwks(&serde_json::json!({ "keys": [entry] }).to_string()).is_err());
        let private: serde_json::Value = serde_json::from_str(private.expose_secret()).unwrap();
        let mut leaked = private.clone();
        leaked["iss"] = "gateway".into();
        assert!(TrustedKeys::from_jwks(&serde_json::json!({ "keys": [leaked] }).to_string()).is_err());
        assert!(TrustedKeys::from_jwks(r#"{"keys":[]}"#).is_err());
    }
}

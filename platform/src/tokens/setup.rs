//! Builds a process's token verifier and issuer from its settings, refusing published
//! development keys outside development mode.

use super::{SigningKey, TokenIssuer, TokenVerifier, TrustedKeys};
use crate::config::{CommonSettings, DEV_MODE_VAR};

/// The token machinery of one process: it verifies tokens addressed to it and, when it has a
/// signing key, mints tokens of its own.
#[derive(Clone, Debug)]
pub struct ProcessTokens {
    pub verifier: TokenVerifier,
    issuer: Option<TokenIssuer>,
}

impl ProcessTokens {
    /// Loads the keys of the process `name` (its issuer name and audience).
    pub fn load(common: &CommonSettings, name: &str) -> anyhow::Result<Self> {
        let trusted = match &common.token_trusted_keys {
            Some(jwks) => {
                let keys = TrustedKeys::from_jwks(jwks)?;
                let development = keys.development_kids(jwks);
                if !common.dev_mode && !development.is_empty() {
                    anyhow::bail!(
                        "LAB_TOKEN_TRUSTED_KEYS trusts published development keys {development:?}; remove them, or set {DEV_MODE_VAR}=1 for local development only"
                    );
                }
                keys
            }
            None if common.dev_mode => TrustedKeys::development(),
            None => anyhow::bail!(
                "LAB_TOKEN_TRUSTED_KEYS is not set (the JWK set of every issuer's public keys); set it, or {DEV_MODE_VAR}=1 for local development only"
            ),
        };
        let signing = match &common.token_signing_key {
            Some(private) => {
                let key = SigningKey::from_jwk(private)
                    .map_err(|error| anyhow::anyhow!("{name}: TOKEN_SIGNING_KEY: {error}"))?;
                if !common.dev_mode && key.is_development() {
                    anyhow::bail!(
                        "{name}: TOKEN_SIGNING_KEY is a published development key; generate one with `labctl tokens generate-key`, or set {DEV_MODE_VAR}=1 for local development only"
                    );
                }
                Some(key)
            }
            None if common.dev_mode => Some(SigningKey::development(name)),
            None => None,
        };
        if let Some(key) = &signing {
            match trusted.by_kid.get(&key.kid) {
                Some(entry) if entry.issuer == name => {}
                _ => tracing::warn!(
                    process = name,
                    kid = %key.kid,
                    "this process's signing key is not in its trust set as a key of {name}; peers that share this trust set will refuse its tokens"
                ),
            }
        }
        Ok(Self {
            verifier: TokenVerifier::new(name, trusted),
            issuer: signing.map(|key| TokenIssuer::new(name, key)),
        })
    }

    /// The issuer of this process; an error naming the setting when it has no signing key.
    pub fn issuer(&self) -> anyhow::Result<TokenIssuer> {
        self.issuer.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "{} calls other services and needs a signing key: set TOKEN_SIGNING_KEY (a private Ed25519 JWK)",
                self.verifier.audience()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dev_mode: bool) -> CommonSettings {
        let mut common = CommonSettings::local("postgres://x/y", "redis://x", "p");
        common.dev_mode = dev_mode;
        common
    }

    #[test]
    fn outside_development_mode_missing_or_development_keys_refuse_to_start() {
        assert!(ProcessTokens::load(&settings(false), "orders-svc").is_err());
        let mut common = settings(false);
        let development = SigningKey::development("orders-svc");
        common.token_trusted_keys =
            Some(serde_json::json!({ "keys": [development.public_jwk("orders-svc")] }).to_string());
        assert!(ProcessTokens::load(&common, "orders-svc").is_err());
        let (key, private) = SigningKey::generate("orders-1");
        common.token_trusted_keys =
            Some(serde_json::json!({ "keys": [key.public_jwk("orders-svc")] }).to_string());
        let tokens = ProcessTokens::load(&common, "orders-svc").unwrap();
        assert!(tokens.issuer().is_err(), "no signing key configured");
        common.token_signing_key = Some(private);
        assert!(
            ProcessTokens::load(&common, "orders-svc")
                .unwrap()
                .issuer()
                .is_ok()
        );
        let mut with_dev_key = common.clone();
        with_dev_key.token_signing_key = Some(
            serde_json::json!({
                "kty": "OKP", "crv": "Ed25519", "kid": development.kid,
                "x": development.public_x, "d": base64::Engine::encode(
                    &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                    super::super::keys::development_seed_for_tests("orders-svc")),
            })
            .to_string()
            .into(),
        );
        assert!(ProcessTokens::load(&with_dev_key, "orders-svc").is_err());
    }

    #[test]
    fn development_mode_falls_back_to_the_published_keys() {
        let tokens = ProcessTokens::load(&settings(true), "gateway").unwrap();
        assert!(tokens.issuer().is_ok());
    }
}

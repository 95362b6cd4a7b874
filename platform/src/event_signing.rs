//! Events are signed by the service that emits them.
//!
//! The outbox relay signs every entry it writes to its domain's stream with its process's token
//! signing key (the key of the principal tokens, whose public half is in every process's trust
//! set bound to the issuer's name): a detached Ed25519 signature over [`signed_message`], the
//! stream's full name and the envelope's bytes, carried beside the envelope in the entry's
//! [`KID_FIELD`] and [`SIGNATURE_FIELD`]. Every consumer verifies it before any effect
//! ([`EventVerifier::verify`]): the key must be trusted, must belong to the service that owns the
//! stream, and the signature must hold for this stream and these bytes. So someone who can
//! write to Redis (a leaked Redis password, an operator account) cannot announce a payment:
//! an unsigned entry, one signed by another service or an unknown key, one whose envelope was
//! altered, and a signed entry copied from another stream (another deployment's prefix, another
//! domain) are dead-lettered unapplied and counted (`stream_events_rejected_total`). A signed
//! entry written again to its own stream carries an event id its consumers already processed,
//! and changes nothing.

use crate::streams;
use crate::tokens::{SigningKey, TrustedKeys};
use std::sync::Arc;

/// Field of a stream entry naming the key (`kid`) that signed it.
pub const KID_FIELD: &str = "kid";
/// Field of a stream entry holding the detached Ed25519 signature (64 raw bytes).
pub const SIGNATURE_FIELD: &str = "sig";
/// Domain separation: a signature over an event can be nothing else.
const CONTEXT: &[u8] = b"lab.events.v1";

/// The bytes a signature covers: the context, the stream's full name and the envelope.
pub fn signed_message(stream: &str, envelope: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(CONTEXT.len() + stream.len() + envelope.len() + 2);
    message.extend_from_slice(CONTEXT);
    message.push(b'\n');
    message.extend_from_slice(stream.as_bytes());
    message.push(b'\n');
    message.extend_from_slice(envelope);
    message
}

/// Signs the entries a process writes to its own stream.
#[derive(Clone, Debug)]
pub struct EventSigner {
    key: Arc<SigningKey>,
}

impl EventSigner {
    /// A signer with the process's token signing key.
    pub fn new(key: SigningKey) -> Self {
        Self { key: Arc::new(key) }
    }

    /// The published development key of `issuer` (development mode and tests).
    pub fn development(issuer: &str) -> Self {
        Self::new(SigningKey::development(issuer))
    }

    /// The key id written beside each signature.
    pub fn kid(&self) -> &str {
        &self.key.kid
    }

    /// The signature of `envelope` written to `stream`.
    pub fn sign(&self, stream: &str, envelope: &[u8]) -> [u8; 64] {
        self.key.sign_detached(&signed_message(stream, envelope))
    }
}

/// Why an entry's signature is not accepted; [`Rejection::reason`] is the metric's label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("the entry is not signed")]
    Unsigned,
    #[error("the entry is signed by an untrusted key {0:?}")]
    UnknownKey(String),
    #[error("the entry's signature does not verify for this stream and envelope")]
    BadSignature,
    #[error("the entry is signed by {signer}, not by {owner}, which owns the stream")]
    WrongSigner { signer: String, owner: String },
}

impl Rejection {
    /// A short label: `unsigned`, `unknown_key`, `bad_signature` or `wrong_signer` (the
    /// metric's `reason`, `crate::metrics::streams::REJECTION_REASONS`).
    pub fn reason(&self) -> &'static str {
        match self {
            Rejection::Unsigned => "unsigned",
            Rejection::UnknownKey(_) => "unknown_key",
            Rejection::BadSignature => "bad_signature",
            Rejection::WrongSigner { .. } => "wrong_signer",
        }
    }
}

/// Verifies the entries a consumer reads, against the process's trust set.
#[derive(Clone, Debug)]
pub struct EventVerifier {
    keys: Arc<TrustedKeys>,
}

/// Longest key id quoted in a rejection (it is written by whoever wrote the entry).
const MAX_QUOTED_KID_CHARS: usize = 64;

impl EventVerifier {
    /// A verifier trusting `keys` (the process's token trust set).
    pub fn new(keys: TrustedKeys) -> Self {
        Self { keys: Arc::new(keys) }
    }

    /// Trusts the published development keys of every mesh process (development mode, tests).
    pub fn development() -> Self {
        Self::new(TrustedKeys::development())
    }

    /// Accepts an entry of `stream` holding `envelope` only when `kid` and `signature` are a
    /// valid signature of it, by a trusted key of the service that owns `stream`.
    pub fn verify(
        &self,
        stream: &str,
        kid: Option<&[u8]>,
        signature: Option<&[u8]>,
        envelope: &[u8],
    ) -> Result<(), Rejection> {
        let (Some(kid), Some(signature)) = (kid, signature) else {
            return Err(Rejection::Unsigned);
        };
        let kid = String::from_utf8_lossy(kid);
        let owner = streams::owner_of_stream(stream).unwrap_or_default();
        let Some(signer) = self.keys.issuer_of(&kid) else {
            return Err(Rejection::UnknownKey(
                kid.chars().take(MAX_QUOTED_KID_CHARS).collect(),
            ));
        };
        if signer != owner {
            return Err(Rejection::WrongSigner {
                signer: signer.to_owned(),
                owner: owner.to_owned(),
            });
        }
        self.keys
            .verify_detached(&kid, &signed_message(stream, envelope), signature)
            .map(|_| ())
            .ok_or(Rejection::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "lab:events:payments";

    fn signed(signer: &EventSigner, stream: &str, envelope: &[u8]) -> (Vec<u8>, Vec<u8>) {
        (
            signer.kid().as_bytes().to_vec(),
            signer.sign(stream, envelope).to_vec(),
        )
    }

    #[test]
    fn an_entry_signed_by_the_owner_of_its_stream_verifies() {
        let verifier = EventVerifier::development();
        let (kid, signature) = signed(&EventSigner::development("payments-svc"), STREAM, b"envelope");
        assert_eq!(
            verifier.verify(STREAM, Some(&kid), Some(&signature), b"envelope"),
            Ok(())
        );
    }

    #[test]
    fn unsigned_tampered_foreign_and_moved_entries_are_rejected() {
        let verifier = EventVerifier::development();
        let payments = EventSigner::development("payments-svc");
        let (kid, signature) = signed(&payments, STREAM, b"envelope");
        assert_eq!(
            verifier.verify(STREAM, None, None, b"envelope"),
            Err(Rejection::Unsigned)
        );
        assert_eq!(
            verifier.verify(STREAM, Some(&kid), Some(&signature), b"envelopf"),
            Err(Rejection::BadSignature)
        );
        assert_eq!(
            verifier.verify("other:events:payments", Some(&kid), Some(&signature), b"envelope"),
            Err(Rejection::BadSignature),
            "a signed entry copied to another deployment's stream"
        );
        let (orders_kid, orders_signature) =
            signed(&EventSigner::development("orders-svc"), STREAM, b"envelope");
        assert_eq!(
            verifier.verify(STREAM, Some(&orders_kid), Some(&orders_signature), b"envelope"),
            Err(Rejection::WrongSigner {
                signer: "orders-svc".into(),
                owner: "payments-svc".into()
            })
        );
        let (stranger, _) = SigningKey::generate("stranger");
        let stranger = EventSigner::new(stranger);
        let (kid, signature) = signed(&stranger, STREAM, b"envelope");
        assert_eq!(
            verifier.verify(STREAM, Some(&kid), Some(&signature), b"envelope"),
            Err(Rejection::UnknownKey("stranger".into()))
        );
        assert_eq!(
            verifier.verify(STREAM, Some(b"payments-svc-dev"), Some(b"short"), b"envelope"),
            Err(Rejection::BadSignature)
        );
    }
}

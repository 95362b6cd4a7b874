//! The public verification rule. Anyone may ask about an accession number (no key; the gateway
//! limits requests per client address): the answer says whether a COA was published for it and
//! whether it is still authentic, retracted or superseded (with its successor). A COA in force is
//! `authentic` only while its signature verifies with the key its `kid` names
//! ([`super::coa_keys`]); otherwise it is `unverifiable`. Accession numbers are sequential and
//! therefore guessable, so customer details (compound, lot number) are revealed only to a caller
//! who also presents the verification code printed on the COA.

use super::coa::{Coa, CoaStatus};
use super::coa_keys::{CoaKeys, SignatureCheck};
use rand::Rng;

/// Characters of verification codes: no 0/O, 1/I/L.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// Length of a verification code (31^10, about 2^49 codes).
pub const CODE_LENGTH: usize = 10;
/// Most accession numbers one batch verification may name.
pub const MAX_BATCH: usize = 100;

/// A fresh random verification code.
pub fn new_code() -> String {
    let mut rng = rand::rng();
    (0..CODE_LENGTH)
        .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
        .collect()
}

/// The public answer for one accession.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub accession_number: String,
    /// authentic, unverifiable, retracted, superseded or unknown.
    pub status: &'static str,
    pub coa: Option<Coa>,
    pub code_matched: bool,
}

/// Judges the COA published for an accession (`None`: none was) against the presented code and
/// the key set. A retracted or superseded COA keeps that status whatever its signature says: it
/// is not to be relied on either way, and a superseded one names its successor.
pub fn judge(accession_number: &str, coa: Option<Coa>, code: Option<&str>, keys: &CoaKeys) -> Verdict {
    let Some(coa) = coa.filter(|coa| coa.status.was_published()) else {
        return Verdict {
            accession_number: accession_number.to_owned(),
            status: "unknown",
            coa: None,
            code_matched: false,
        };
    };
    let status = if coa.superseded_by.is_some() {
        "superseded"
    } else if coa.status == CoaStatus::Retracted {
        "retracted"
    } else if keys.check(&coa.signing_key_id, &coa.signed_content, &coa.signature) == SignatureCheck::Valid {
        "authentic"
    } else {
        "unverifiable"
    };
    let code_matched = code.is_some_and(|code| code.trim().eq_ignore_ascii_case(&coa.verification_code));
    Verdict {
        accession_number: accession_number.to_owned(),
        status,
        coa: Some(coa),
        code_matched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_use_the_unambiguous_alphabet() {
        let code = new_code();
        assert_eq!(code.len(), CODE_LENGTH);
        assert!(code.bytes().all(|byte| CODE_ALPHABET.contains(&byte)));
        assert_ne!(new_code(), code);
    }

    #[test]
    fn an_accession_without_a_published_coa_is_unknown() {
        let keys = CoaKeys::new(super::super::signing::CoaSigner::development(), None).unwrap();
        let verdict = judge("ACC-2026-000001", None, Some("X"), &keys);
        assert_eq!((verdict.status, verdict.code_matched), ("unknown", false));
    }

    fn published(keys: &CoaKeys, status: CoaStatus) -> Coa {
        let now = platform::time::now();
        let content = "{\"accessionNumber\":\"ACC-2026-000001\"}".to_owned();
        Coa {
            id: uuid::Uuid::now_v7(),
            submission_id: uuid::Uuid::now_v7(),
            accession_number: "ACC-2026-000001".into(),
            customer_id: uuid::Uuid::nil(),
            order_id: uuid::Uuid::nil(),
            order_number: "ORD-2026-000001".into(),
            compound: "BPC-157".into(),
            lot_number: None,
            version: 1,
            status,
            submitted_by: None,
            submitted_by_id: None,
            approved_by: None,
            approved_by_id: None,
            approved_at: None,
            published_at: Some(now),
            retracted_at: None,
            retraction_reason: None,
            send_back_reason: None,
            amends: None,
            amendment_reason: None,
            superseded_by: None,
            verification_code: "ABCD234567".into(),
            signature: keys.signer().sign(&content),
            signed_content: content,
            signing_key_id: keys.signer().kid.clone(),
            received_at: now,
            testing_started_at: Some(now),
            created_at: now,
            results: Vec::new(),
        }
    }

    #[test]
    fn a_coa_in_force_is_authentic_only_while_its_signature_verifies_with_its_key() {
        let keys = CoaKeys::new(super::super::signing::CoaSigner::development(), None).unwrap();
        let coa = published(&keys, CoaStatus::Published);
        assert_eq!(judge("a", Some(coa.clone()), None, &keys).status, "authentic");

        let mut altered = coa.clone();
        altered.signed_content = altered.signed_content.replace("000001", "000002");
        assert_eq!(judge("a", Some(altered), None, &keys).status, "unverifiable");
        let mut unknown_key = coa.clone();
        unknown_key.signing_key_id = "coa-retired".into();
        assert_eq!(
            judge("a", Some(unknown_key.clone()), None, &keys).status,
            "unverifiable"
        );

        unknown_key.status = CoaStatus::Retracted;
        assert_eq!(judge("a", Some(unknown_key), None, &keys).status, "retracted");
    }
}

//! The public verification rule. Anyone may ask about an accession number (no key; the gateway
//! limits requests per client address): the answer says whether a COA was published for it and
//! whether it is still authentic, retracted or superseded (with its successor). Accession
//! numbers are sequential and therefore guessable, so customer details (compound, lot number)
//! are revealed only to a caller who also presents the verification code printed on the COA.

use super::coa::{Coa, CoaStatus};
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
    /// authentic, retracted, superseded or unknown.
    pub status: &'static str,
    pub coa: Option<Coa>,
    pub code_matched: bool,
}

/// Judges the COA published for an accession (`None`: none was) against the presented code.
pub fn judge(accession_number: &str, coa: Option<Coa>, code: Option<&str>) -> Verdict {
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
    } else {
        "authentic"
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
        let verdict = judge("ACC-2026-000001", None, Some("X"));
        assert_eq!((verdict.status, verdict.code_matched), ("unknown", false));
    }
}

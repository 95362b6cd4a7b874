//! Blob keys: the names callers give objects, checked before they reach a store or a link.
//!
//! A key is one to [`MAX_KEY_BYTES`] bytes of `/`-separated segments; each segment is ASCII
//! letters, digits, `-`, `_` and `.`, and does not start with `.` (so no `.`, `..` or hidden
//! names, and nothing the local store's temporary `name#n` files could collide with). No leading,
//! trailing or doubled `/`. The same rule holds for both stores, so a key that works in
//! development works against S3.

use super::BlobError;
use object_store::path::Path;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

/// Longest key accepted, in bytes (S3 allows 1024 for the whole key, prefix included).
pub const MAX_KEY_BYTES: usize = 512;

/// What a key segment percent-encodes in a local link: everything but RFC 3986's unreserved
/// characters (the key alphabet is a subset, so in practice nothing; kept for safety).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Checks `key` against the rule above.
pub fn validate_key(key: &str) -> Result<(), BlobError> {
    let invalid = |why: &str| Err(BlobError::Invalid(format!("blob key {key:?} {why}")));
    if key.is_empty() {
        return invalid("is empty");
    }
    if key.len() > MAX_KEY_BYTES {
        return invalid(&format!("is longer than {MAX_KEY_BYTES} bytes"));
    }
    for segment in key.split('/') {
        if segment.is_empty() {
            return invalid("has an empty segment (a leading, trailing or doubled `/`)");
        }
        if segment.starts_with('.') {
            return invalid("has a segment starting with `.`");
        }
        if !segment
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
        {
            return invalid("has a character other than letters, digits, `-`, `_`, `.` and `/`");
        }
    }
    Ok(())
}

/// The store path of a valid `key` under `prefix` (an S3 key prefix, or none).
pub fn store_path(prefix: Option<&str>, key: &str) -> Result<Path, BlobError> {
    validate_key(key)?;
    let full = match prefix {
        Some(prefix) => format!("{prefix}/{key}"),
        None => key.to_owned(),
    };
    Path::parse(full).map_err(|error| BlobError::Invalid(format!("blob key {key:?}: {error}")))
}

/// `key` percent-encoded segment by segment, `/` kept (the path of a local link).
pub fn encode_key_path(key: &str) -> String {
    key.split('/')
        .map(|segment| percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_plain_segments_are_accepted() {
        for key in ["a", "coa/2026/0195c3f0-1c2d.pdf", "labels/A_b-9.v2.pdf"] {
            assert!(validate_key(key).is_ok(), "{key}");
            assert_eq!(store_path(None, key).unwrap().as_ref(), key);
        }
        assert_eq!(
            store_path(Some("lab/results"), "a/b").unwrap().as_ref(),
            "lab/results/a/b"
        );
    }

    #[test]
    fn traversal_absolute_empty_and_odd_keys_are_refused() {
        let long = "a".repeat(MAX_KEY_BYTES + 1);
        for key in [
            "", "/a", "a/", "a//b", "..", "../a", "a/../b", "./a", ".hidden", "a/b c", "a\\b", "a#1", "a?b",
            "a%2Fb", "é", &long,
        ] {
            assert!(matches!(validate_key(key), Err(BlobError::Invalid(_))), "{key:?}");
        }
    }

    #[test]
    fn a_key_path_keeps_its_slashes() {
        assert_eq!(encode_key_path("coa/x-1_2.pdf"), "coa/x-1_2.pdf");
    }
}

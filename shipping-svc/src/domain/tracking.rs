//! UPS-style tracking numbers of the sandbox carrier: `1Z`, a six-character shipper number, a
//! two-digit service code, a seven-digit package number and a check digit, 18 characters.
//!
//! The check digit is UPS's published rule over the 15 characters after `1Z`: letters count as
//! `(ASCII - 63) mod 10` (A = 2, B = 3, …), every character at an odd position (0-based) counts
//! twice, and the check digit brings the sum to a multiple of ten.

/// Shipper number of the lab's sandbox account.
pub const SANDBOX_SHIPPER: &str = "LAB001";
/// UPS service code of Ground (`03`).
pub const GROUND_SERVICE_CODE: &str = "03";

/// The check digit of the 15 characters after `1Z`; `None` for other lengths or characters.
pub fn check_digit(body: &str) -> Option<u8> {
    if body.len() != 15 {
        return None;
    }
    let mut sum: u32 = 0;
    for (index, character) in body.chars().enumerate() {
        let value = match character {
            '0'..='9' => character as u32 - '0' as u32,
            'A'..='Z' => (character as u32 - 63) % 10,
            _ => return None,
        };
        sum += if index % 2 == 1 { value * 2 } else { value };
    }
    Some(((10 - sum % 10) % 10) as u8)
}

/// True when `number` is `1Z` + 15 characters + a valid check digit.
pub fn is_valid(number: &str) -> bool {
    let Some(rest) = number.strip_prefix("1Z") else {
        return false;
    };
    if rest.len() != 16 {
        return false;
    }
    let (body, check) = rest.split_at(15);
    match (check_digit(body), check.parse::<u8>()) {
        (Some(expected), Ok(given)) => expected == given,
        _ => false,
    }
}

/// The tracking number of package `package` (0 ..= 9 999 999) of `shipper` with `service`.
pub fn tracking_number(shipper: &str, service: &str, package: u32) -> String {
    let body = format!("{shipper}{service}{:07}", package % 10_000_000);
    let check = check_digit(&body).unwrap_or(0);
    format!("1Z{body}{check}")
}

/// True when `reference` looks like a tracking number (carrier-neutral: 10 to 40 characters,
/// upper-case letters and digits, at least one digit), so lookups by it stay cheap.
pub fn looks_like_tracking_number(reference: &str) -> bool {
    (10..=40).contains(&reference.len())
        && reference
            .chars()
            .all(|character| character.is_ascii_digit() || character.is_ascii_uppercase())
        && reference.chars().any(|character| character.is_ascii_digit())
}

/// The public tracking page of a UPS tracking number.
pub fn ups_tracking_url(number: &str) -> String {
    format!("https://www.ups.com/track?tracknum={number}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_ups_sample_number_has_a_valid_check_digit() {
        assert_eq!(check_digit("999AA1012345678"), Some(4));
        assert!(is_valid("1Z999AA10123456784"));
        assert!(!is_valid("1Z999AA10123456785"));
        assert!(!is_valid("1Z999AA1012345678"));
        assert!(!is_valid("2Z999AA10123456784"));
    }

    #[test]
    fn generated_numbers_are_valid_and_distinct() {
        let first = tracking_number(SANDBOX_SHIPPER, GROUND_SERVICE_CODE, 1);
        let second = tracking_number(SANDBOX_SHIPPER, GROUND_SERVICE_CODE, 2);
        assert_eq!(first.len(), 18);
        assert!(is_valid(&first) && is_valid(&second));
        assert_ne!(first, second);
        assert!(looks_like_tracking_number(&first));
        assert!(!looks_like_tracking_number("ORD-2026-000001"));
    }
}

//! Ethereum addresses as the rail takes them: EIP-55 checksummed on input (a mistyped character
//! fails the checksum instead of paying a stranger), lowercase hex in the database, checksummed
//! on output.

use alloy::primitives::Address;
use platform::error::{ApiError, ErrorCode};

/// A 20-byte address parsed from its EIP-55 checksummed form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ChainAddress(pub Address);

impl ChainAddress {
    /// Parses a checksummed address for `field`: `0x` and 40 hex digits in EIP-55 mixed case;
    /// an all-lowercase or all-uppercase address carries no checksum and is refused, as is the
    /// zero address.
    pub fn parse_checksummed(value: &str, field: &str) -> Result<Self, ApiError> {
        let value = value.trim();
        let invalid = |message: &str| ApiError::field(ErrorCode::InvalidRequest, field, message.to_owned());
        let hex = value
            .strip_prefix("0x")
            .ok_or_else(|| invalid("the address must be 0x followed by 40 hexadecimal digits"))?;
        if hex.len() != 40 || !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(invalid(
                "the address must be 0x followed by 40 hexadecimal digits",
            ));
        }
        let has_letters = hex.bytes().any(|byte| byte.is_ascii_alphabetic());
        let mixed = hex.bytes().any(|byte| byte.is_ascii_lowercase())
            && hex.bytes().any(|byte| byte.is_ascii_uppercase());
        if has_letters && !mixed {
            return Err(invalid(
                "the address must be EIP-55 checksummed (mixed case), as a self-custodied wallet shows it",
            ));
        }
        let address = Address::parse_checksummed(value, None)
            .map_err(|_| invalid("the address fails its EIP-55 checksum; check it for a typo"))?;
        if address.is_zero() {
            return Err(invalid("the zero address cannot send or receive a payment"));
        }
        Ok(Self(address))
    }

    /// Reads the lowercase form stored in the database.
    pub fn from_stored(value: &str) -> Result<Self, ApiError> {
        value
            .parse::<Address>()
            .map(Self)
            .map_err(|_| ApiError::internal(format!("a stored address is malformed: {value}")))
    }

    /// The lowercase `0x…` form stored in the database.
    pub fn stored(&self) -> String {
        format!("{:#x}", self.0)
    }

    /// The EIP-55 checksummed form shown to clients.
    pub fn checksummed(&self) -> String {
        self.0.to_checksum(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USDC: &str = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";

    #[test]
    fn a_checksummed_address_is_accepted_and_round_trips() {
        let address = ChainAddress::parse_checksummed(USDC, "a").unwrap();
        assert_eq!(address.checksummed(), USDC);
        assert_eq!(address.stored(), USDC.to_lowercase());
        assert_eq!(ChainAddress::from_stored(&address.stored()).unwrap(), address);
    }

    #[test]
    fn lowercase_mistyped_short_and_zero_addresses_are_refused() {
        let field = |value: &str| {
            ChainAddress::parse_checksummed(value, "expectedPayerAddress")
                .unwrap_err()
                .details
                .unwrap()["field"]
                .clone()
        };
        assert_eq!(field(&USDC.to_lowercase()), "expectedPayerAddress");
        // One character's case flipped breaks the checksum.
        let mistyped = USDC.replacen("A0b8", "a0b8", 1);
        assert!(ChainAddress::parse_checksummed(&mistyped, "a").is_err());
        assert!(ChainAddress::parse_checksummed("0x1234", "a").is_err());
        assert!(ChainAddress::parse_checksummed(&USDC[2..], "a").is_err());
        assert!(ChainAddress::parse_checksummed(&format!("0x{}", "0".repeat(40)), "a").is_err());
    }
}

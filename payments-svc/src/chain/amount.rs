//! The exact amount of a stablecoin payment request: the invoice total in cents scaled to the
//! token's six decimals plus a sub-cent reference, `atomic = cents × 10^4 + reference`
//! (`1 ≤ reference ≤ 9999`). The reference tells apart requests of the same total to the same
//! treasury; the exact amount is what the scanner matches. Integers only: nothing is rounded.

use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;

/// Decimals of the supported tokens (USDC and USDT on Ethereum both have six).
pub const TOKEN_DECIMALS: u32 = 6;
/// Atomic units per cent at six decimals: one cent is 0.01 = 10^4 atomic units.
pub const ATOMIC_PER_CENT: i64 = 10_000;
/// Smallest reference (0 would make the amount the plain total, which a rounding wallet sends).
pub const MIN_REFERENCE: i64 = 1;
/// Largest reference: the four sub-cent digits.
pub const MAX_REFERENCE: i64 = 9_999;
/// What every stablecoin amount carries: the rule that it is exact.
pub const NO_ROUNDING_NOTICE: &str = "Send exactly amount.decimal (amount.atomic atomic units, 6 decimals). \
The last four digits are this order's permanent reference: do not round, and do not send from an \
exchange or pooled wallet or with a fee deducted; any other amount or sender is not matched.";

/// An exact stablecoin amount: total in cents, reference and atomic units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StablecoinAmount {
    pub cents: Cents,
    /// The sub-cent reference (1..=9999), in atomic units.
    pub reference: i64,
    /// `cents × 10^4 + reference`.
    pub atomic: i64,
}

impl StablecoinAmount {
    /// The amount of `cents` with `reference`; `None` when the reference is out of range, the
    /// total is not positive, or the product overflows.
    pub fn new(cents: Cents, reference: i64) -> Option<Self> {
        if cents.0 <= 0 || !(MIN_REFERENCE..=MAX_REFERENCE).contains(&reference) {
            return None;
        }
        let atomic = cents.0.checked_mul(ATOMIC_PER_CENT)?.checked_add(reference)?;
        Some(Self {
            cents,
            reference,
            atomic,
        })
    }

    /// Like [`StablecoinAmount::new`], as a 400 for totals the rail cannot express.
    pub fn for_total(cents: Cents, reference: i64) -> Result<Self, ApiError> {
        Self::new(cents, reference).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidRequest,
                "the total cannot be expressed as a stablecoin amount",
            )
        })
    }

    /// The exact decimal string with six decimals (`12.340042` for 1234 cents, reference 42).
    pub fn decimal(&self) -> String {
        atomic_decimal(self.atomic)
    }
}

/// Formats non-negative atomic units as a six-decimal string, without rounding.
pub fn atomic_decimal(atomic: i64) -> String {
    let scale = 10_i64.pow(TOKEN_DECIMALS);
    format!("{}.{:06}", atomic / scale, atomic % scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_atomic_amount_is_the_total_scaled_plus_the_reference() {
        let amount = StablecoinAmount::new(Cents(1234), 42).unwrap();
        assert_eq!(amount.atomic, 12_340_042);
        assert_eq!(amount.decimal(), "12.340042");
        let amount = StablecoinAmount::new(Cents(5), 9_999).unwrap();
        assert_eq!(amount.atomic, 59_999);
        assert_eq!(amount.decimal(), "0.059999");
    }

    #[test]
    fn references_outside_one_to_9999_and_non_positive_totals_are_refused() {
        assert!(StablecoinAmount::new(Cents(100), 0).is_none());
        assert!(StablecoinAmount::new(Cents(100), 10_000).is_none());
        assert!(StablecoinAmount::new(Cents(0), 1).is_none());
        assert!(StablecoinAmount::new(Cents(i64::MAX / 2), 1).is_none());
    }

    #[test]
    fn six_decimals_are_always_written_out() {
        assert_eq!(atomic_decimal(1), "0.000001");
        assert_eq!(atomic_decimal(1_000_000), "1.000000");
        assert_eq!(atomic_decimal(123_456_789_012), "123456.789012");
    }
}

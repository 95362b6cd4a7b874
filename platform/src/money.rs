//! Integer USD cents. Money never passes through floating point anywhere in the mesh.

use serde::{Deserialize, Serialize};

/// An amount of US dollars in integer cents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cents(pub i64);

impl Cents {
    pub const ZERO: Cents = Cents(0);

    /// Adds, refusing overflow.
    pub fn checked_add(self, other: Cents) -> Option<Cents> {
        self.0.checked_add(other.0).map(Cents)
    }

    /// Multiplies by a count, refusing overflow.
    pub fn checked_mul(self, count: i64) -> Option<Cents> {
        self.0.checked_mul(count).map(Cents)
    }

    /// Applies a rate in basis points (1/100 of a percent), rounding half away from zero to the cent.
    pub fn basis_points(self, rate_bps: i64) -> Option<Cents> {
        let product = i128::from(self.0) * i128::from(rate_bps);
        let rounded = if product >= 0 {
            (product + 5_000) / 10_000
        } else {
            (product - 5_000) / 10_000
        };
        i64::try_from(rounded).ok().map(Cents)
    }

    /// Sums amounts, refusing overflow.
    pub fn sum<I: IntoIterator<Item = Cents>>(amounts: I) -> Option<Cents> {
        amounts.into_iter().try_fold(Cents::ZERO, Cents::checked_add)
    }
}

impl std::fmt::Display for Cents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}${}.{:02}", abs / 100, abs % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basis_points_round_half_away_from_zero_to_the_cent() {
        assert_eq!(Cents(12_345).basis_points(5_000), Some(Cents(6_173)));
        assert_eq!(Cents(1).basis_points(5_000), Some(Cents(1)));
        assert_eq!(Cents(10_000).basis_points(0), Some(Cents(0)));
    }

    #[test]
    fn overflow_is_refused_rather_than_wrapped() {
        assert_eq!(Cents(i64::MAX).checked_add(Cents(1)), None);
        assert_eq!(Cents(i64::MAX).checked_mul(2), None);
    }

    #[test]
    fn display_shows_dollars_and_cents() {
        assert_eq!(Cents(123_405).to_string(), "$1234.05");
        assert_eq!(Cents(-5).to_string(), "-$0.05");
    }
}

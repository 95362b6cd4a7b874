//! Payment rails and the spellings the create-order request accepts for them.
//!
//! Accepted spellings: `bank_invoice`, `card_checkout`, `chain_stablecoin`, and the alias
//! `stablecoin_erc20` (canonical `chain_stablecoin`). The bank invoice and card checkout rails
//! are always offered; the stablecoin rail only when payments-svc is configured with it (orders-svc
//! asks payments-svc's `CheckStablecoinRail` before placing the order, and answers
//! `payment_method_unavailable` when it is not).

use platform::error::{ApiError, ErrorCode};

/// A payment rail, by its canonical name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentMethod {
    BankInvoice,
    CardCheckout,
    ChainStablecoin,
}

/// Rails every deployment completes an order on (the stablecoin rail depends on payments-svc's
/// configuration).
pub const AVAILABLE_METHODS: [PaymentMethod; 2] = [PaymentMethod::BankInvoice, PaymentMethod::CardCheckout];

impl PaymentMethod {
    /// Parses a request spelling; `invalid_payment_method` (field `paymentMethod`) when unknown.
    pub fn parse(spelling: &str) -> Result<PaymentMethod, ApiError> {
        match spelling {
            "bank_invoice" => Ok(PaymentMethod::BankInvoice),
            "card_checkout" => Ok(PaymentMethod::CardCheckout),
            "chain_stablecoin" | "stablecoin_erc20" => Ok(PaymentMethod::ChainStablecoin),
            _ => Err(ApiError::field(
                ErrorCode::InvalidPaymentMethod,
                "paymentMethod",
                "paymentMethod must be bank_invoice, card_checkout or chain_stablecoin",
            )),
        }
    }

    /// Parses a stored canonical name.
    pub fn from_canonical(name: &str) -> Option<PaymentMethod> {
        match name {
            "bank_invoice" => Some(PaymentMethod::BankInvoice),
            "card_checkout" => Some(PaymentMethod::CardCheckout),
            "chain_stablecoin" => Some(PaymentMethod::ChainStablecoin),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentMethod::BankInvoice => "bank_invoice",
            PaymentMethod::CardCheckout => "card_checkout",
            PaymentMethod::ChainStablecoin => "chain_stablecoin",
        }
    }

    /// True for the rail whose availability payments-svc decides (the stablecoin rail).
    pub fn depends_on_configuration(self) -> bool {
        !AVAILABLE_METHODS.contains(&self)
    }

    /// The `payment_method_unavailable` refusal of a rail this deployment does not offer,
    /// listing the available rails in `details.availableMethods`.
    pub fn unavailable(self) -> ApiError {
        let available: Vec<&str> = AVAILABLE_METHODS.iter().map(|method| method.as_str()).collect();
        ApiError::field(
            ErrorCode::PaymentMethodUnavailable,
            "paymentMethod",
            format!(
                "the {} payment method is not offered by this deployment",
                self.as_str()
            ),
        )
        .with_details(serde_json::json!({ "availableMethods": available }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_maps_to_its_canonical_rail() {
        assert_eq!(
            PaymentMethod::parse("bank_invoice").unwrap(),
            PaymentMethod::BankInvoice
        );
        assert_eq!(
            PaymentMethod::parse("card_checkout").unwrap(),
            PaymentMethod::CardCheckout
        );
        assert_eq!(
            PaymentMethod::parse("chain_stablecoin").unwrap(),
            PaymentMethod::ChainStablecoin
        );
        assert_eq!(
            PaymentMethod::parse("stablecoin_erc20").unwrap(),
            PaymentMethod::ChainStablecoin
        );
        for method in [
            PaymentMethod::BankInvoice,
            PaymentMethod::CardCheckout,
            PaymentMethod::ChainStablecoin,
        ] {
            assert_eq!(PaymentMethod::from_canonical(method.as_str()), Some(method));
        }
    }

    #[test]
    fn unknown_spellings_are_refused_with_the_field_name() {
        for spelling in ["", "BANK_INVOICE", "card", "stablecoin_erc20 "] {
            let error = PaymentMethod::parse(spelling).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidPaymentMethod);
            assert_eq!(error.details.unwrap()["field"], "paymentMethod");
        }
    }

    #[test]
    fn the_bank_and_card_rails_are_always_available_and_the_stablecoin_rail_depends_on_configuration() {
        assert!(!PaymentMethod::BankInvoice.depends_on_configuration());
        assert!(!PaymentMethod::CardCheckout.depends_on_configuration());
        assert!(PaymentMethod::ChainStablecoin.depends_on_configuration());
        let error = PaymentMethod::ChainStablecoin.unavailable();
        assert_eq!(error.code, ErrorCode::PaymentMethodUnavailable);
        assert_eq!(
            error.details.unwrap()["availableMethods"],
            serde_json::json!(["bank_invoice", "card_checkout"])
        );
    }
}

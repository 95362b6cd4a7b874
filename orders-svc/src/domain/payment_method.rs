//! Payment rails and the spellings the create-order request accepts for them.
//!
//! Accepted spellings: `bank_invoice`, `card_checkout`, `chain_stablecoin`, and the alias
//! `stablecoin_erc20` (canonical `chain_stablecoin`). The bank invoice and card checkout rails
//! are always offered; the stablecoin rail only when payments-svc is configured with it (orders-svc
//! asks payments-svc's `CheckStablecoinRail` before placing the order, and answers
//! `payment_method_unavailable` when it is not).

use platform::error::{ApiError, ErrorCode};
/// A payment rail: the one type of the mesh (`lab.common.v1.PaymentMethod`).
pub use proto::common::PaymentMethod;

/// Rails every deployment completes an order on (the stablecoin rail depends on payments-svc's
/// configuration).
pub const AVAILABLE_METHODS: [PaymentMethod; 2] = [PaymentMethod::BankInvoice, PaymentMethod::CardCheckout];

/// Rails whose orders are ship-first: the label is bought when the order is placed (SPEC,
/// "Shipping rules"); stablecoin orders get theirs once paid.
pub const SHIP_FIRST: [PaymentMethod; 2] = [PaymentMethod::BankInvoice, PaymentMethod::CardCheckout];

/// Parses a request spelling; `invalid_payment_method` (field `paymentMethod`) when unknown.
pub fn parse_request(spelling: &str) -> Result<PaymentMethod, ApiError> {
    let canonical = match spelling {
        "stablecoin_erc20" => "chain_stablecoin",
        other => other,
    };
    PaymentMethod::parse(canonical).ok_or_else(|| {
        ApiError::field(
            ErrorCode::InvalidPaymentMethod,
            "paymentMethod",
            "paymentMethod must be bank_invoice, card_checkout or chain_stablecoin",
        )
    })
}

/// True for the rail whose availability payments-svc decides (the stablecoin rail).
pub fn depends_on_configuration(method: PaymentMethod) -> bool {
    !AVAILABLE_METHODS.contains(&method)
}

/// The `payment_method_unavailable` refusal of a rail this deployment does not offer, listing
/// the available rails in `details.availableMethods`.
pub fn unavailable(method: PaymentMethod) -> ApiError {
    let available: Vec<&str> = AVAILABLE_METHODS.iter().map(|method| method.as_str()).collect();
    ApiError::field(
        ErrorCode::PaymentMethodUnavailable,
        "paymentMethod",
        format!(
            "the {} payment method is not offered by this deployment",
            method.as_str()
        ),
    )
    .with_details(serde_json::json!({ "availableMethods": available }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_maps_to_its_canonical_rail() {
        assert_eq!(parse_request("bank_invoice").unwrap(), PaymentMethod::BankInvoice);
        assert_eq!(
            parse_request("card_checkout").unwrap(),
            PaymentMethod::CardCheckout
        );
        assert_eq!(
            parse_request("chain_stablecoin").unwrap(),
            PaymentMethod::ChainStablecoin
        );
        assert_eq!(
            parse_request("stablecoin_erc20").unwrap(),
            PaymentMethod::ChainStablecoin
        );
        for method in [
            PaymentMethod::BankInvoice,
            PaymentMethod::CardCheckout,
            PaymentMethod::ChainStablecoin,
        ] {
            assert_eq!(PaymentMethod::parse(method.as_str()), Some(method));
        }
    }

    #[test]
    fn unknown_spellings_are_refused_with_the_field_name() {
        for spelling in ["", "BANK_INVOICE", "card", "stablecoin_erc20 "] {
            let error = parse_request(spelling).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidPaymentMethod);
            assert_eq!(error.details.unwrap()["field"], "paymentMethod");
        }
    }

    #[test]
    fn the_bank_and_card_rails_are_always_available_and_the_stablecoin_rail_depends_on_configuration() {
        assert!(!depends_on_configuration(PaymentMethod::BankInvoice));
        assert!(!depends_on_configuration(PaymentMethod::CardCheckout));
        assert!(depends_on_configuration(PaymentMethod::ChainStablecoin));
        let error = unavailable(PaymentMethod::ChainStablecoin);
        assert_eq!(error.code, ErrorCode::PaymentMethodUnavailable);
        assert_eq!(
            error.details.unwrap()["availableMethods"],
            serde_json::json!(["bank_invoice", "card_checkout"])
        );
    }
}

//! The create-order request (SPEC "Create-order request") and its validation.
//!
//! Checks run in this order, the first failure answering: `quoteId` is a UUID, the
//! `paymentMethod` spelling is known, the length limits and UUID fields, the `sampleMetadata`
//! items (size, lengths, lot number or matrix notes, unique compound names), then `confirm` is
//! true. Whether the stablecoin rail is offered, and its `expectedPayerAddress` (required there,
//! EIP-55), are checked next by payments-svc (`CheckStablecoinRail`, see
//! `crate::service::create`) before anything is written. What needs the quote (expiry, compound names on the quote,
//! spend envelope) is checked by [`crate::domain::quote::plan_order`].

use crate::domain::fields::check_length;
use crate::domain::payment_method::PaymentMethod;
use crate::domain::sample_metadata::validate_sample_metadata;
pub use crate::domain::sample_metadata::{SampleMetadata, UncheckedSampleMetadata};
use platform::error::{ApiError, ErrorCode};
use platform::ids::parse_uuid;
use uuid::Uuid;

/// Largest `expectedPayerAddress`, in characters.
pub const MAX_PAYER_ADDRESS: usize = 100;
/// Largest `clientReference`, in characters (smallest is 1).
pub const MAX_CLIENT_REFERENCE: usize = 120;
/// Largest `notes`, in characters.
pub const MAX_NOTES: usize = 4000;

/// The create-order request as received, before any check.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UncheckedOrderRequest {
    pub quote_id: String,
    pub payment_method: String,
    pub confirm: bool,
    pub expected_payer_address: Option<String>,
    pub client_reference: Option<String>,
    pub notes: Option<String>,
    pub publish_raw_data: Option<bool>,
    pub billing_address_id: Option<String>,
    pub shipping_address_id: Option<String>,
    pub sample_metadata: Vec<UncheckedSampleMetadata>,
}

/// A validated create-order request.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderRequest {
    pub quote_id: Uuid,
    pub payment_method: PaymentMethod,
    pub expected_payer_address: Option<String>,
    pub client_reference: Option<String>,
    pub notes: Option<String>,
    /// Defaults to true.
    pub publish_raw_data: bool,
    pub billing_address_id: Option<Uuid>,
    pub shipping_address_id: Option<Uuid>,
    /// Unique compound names, in request order.
    pub sample_metadata: Vec<SampleMetadata>,
}

impl UncheckedOrderRequest {
    /// Validates the request shape, `confirm` and the rail (see the module doc for the order).
    pub fn validate(self) -> Result<OrderRequest, ApiError> {
        let quote_id = parse_uuid("quoteId", &self.quote_id)?;
        let payment_method = crate::domain::payment_method::parse_request(&self.payment_method)?;
        check_length(
            "expectedPayerAddress",
            self.expected_payer_address.as_deref(),
            0,
            MAX_PAYER_ADDRESS,
        )?;
        check_length(
            "clientReference",
            self.client_reference.as_deref(),
            1,
            MAX_CLIENT_REFERENCE,
        )?;
        check_length("notes", self.notes.as_deref(), 0, MAX_NOTES)?;
        let billing_address_id = self
            .billing_address_id
            .as_deref()
            .map(|id| parse_uuid("billingAddressId", id))
            .transpose()?;
        let shipping_address_id = self
            .shipping_address_id
            .as_deref()
            .map(|id| parse_uuid("shippingAddressId", id))
            .transpose()?;
        let sample_metadata = validate_sample_metadata(self.sample_metadata)?;
        if !self.confirm {
            return Err(ApiError::field(
                ErrorCode::ConfirmationRequired,
                "confirm",
                "confirm must be true to place an order",
            ));
        }
        Ok(OrderRequest {
            quote_id,
            payment_method,
            expected_payer_address: self.expected_payer_address,
            client_reference: self.client_reference,
            notes: self.notes,
            publish_raw_data: self.publish_raw_data.unwrap_or(true),
            billing_address_id,
            shipping_address_id,
            sample_metadata,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> UncheckedOrderRequest {
        UncheckedOrderRequest {
            quote_id: Uuid::now_v7().to_string(),
            payment_method: "bank_invoice".into(),
            confirm: true,
            ..Default::default()
        }
    }

    fn item(name: &str, lot: Option<&str>, notes: Option<&str>) -> UncheckedSampleMetadata {
        UncheckedSampleMetadata {
            compound_name: name.into(),
            lot_number: lot.map(Into::into),
            matrix_notes: notes.map(Into::into),
        }
    }

    fn refused(request: UncheckedOrderRequest) -> (ErrorCode, String) {
        let error = request.validate().unwrap_err();
        let field = error
            .details
            .as_ref()
            .and_then(|d| d["field"].as_str())
            .unwrap_or_default()
            .to_owned();
        (error.code, field)
    }

    #[test]
    fn a_minimal_request_is_valid_and_publishes_raw_data_by_default() {
        let order = valid().validate().unwrap();
        assert!(order.publish_raw_data);
        assert_eq!(order.payment_method, PaymentMethod::BankInvoice);
        let off = UncheckedOrderRequest {
            publish_raw_data: Some(false),
            ..valid()
        }
        .validate()
        .unwrap();
        assert!(!off.publish_raw_data);
    }

    #[test]
    fn length_limits_are_counted_in_characters_at_their_edges() {
        let ok = UncheckedOrderRequest {
            expected_payer_address: Some("a".repeat(100)),
            client_reference: Some("é".repeat(120)),
            notes: Some("n".repeat(4000)),
            ..valid()
        };
        assert!(ok.validate().is_ok());
        let cases = [
            (
                UncheckedOrderRequest {
                    expected_payer_address: Some("a".repeat(101)),
                    ..valid()
                },
                "expectedPayerAddress",
            ),
            (
                UncheckedOrderRequest {
                    client_reference: Some(String::new()),
                    ..valid()
                },
                "clientReference",
            ),
            (
                UncheckedOrderRequest {
                    client_reference: Some("r".repeat(121)),
                    ..valid()
                },
                "clientReference",
            ),
            (
                UncheckedOrderRequest {
                    notes: Some("n".repeat(4001)),
                    ..valid()
                },
                "notes",
            ),
            (
                UncheckedOrderRequest {
                    quote_id: "not-a-uuid".into(),
                    ..valid()
                },
                "quoteId",
            ),
            (
                UncheckedOrderRequest {
                    billing_address_id: Some("x".into()),
                    ..valid()
                },
                "billingAddressId",
            ),
            (
                UncheckedOrderRequest {
                    shipping_address_id: Some("1".into()),
                    ..valid()
                },
                "shippingAddressId",
            ),
        ];
        for (request, field) in cases {
            assert_eq!(refused(request), (ErrorCode::InvalidRequest, field.to_owned()));
        }
    }

    #[test]
    fn sample_metadata_is_validated_with_the_request_and_before_confirm() {
        let duplicate = vec![item("TB-500", Some("1"), None), item("TB-500", Some("2"), None)];
        let request = UncheckedOrderRequest {
            sample_metadata: duplicate,
            confirm: false,
            ..valid()
        };
        assert_eq!(
            refused(request),
            (
                ErrorCode::DuplicateCompound,
                "sampleMetadata[1].compoundName".to_owned()
            )
        );
        let fine = UncheckedOrderRequest {
            sample_metadata: vec![item("TB-500", None, Some("powder"))],
            ..valid()
        };
        assert_eq!(
            fine.validate().unwrap().sample_metadata[0]
                .matrix_notes
                .as_deref(),
            Some("powder")
        );
    }

    #[test]
    fn confirm_must_be_true_and_is_checked_after_the_shape() {
        let request = UncheckedOrderRequest {
            confirm: false,
            ..valid()
        };
        assert_eq!(
            refused(request),
            (ErrorCode::ConfirmationRequired, "confirm".to_owned())
        );
        let both = UncheckedOrderRequest {
            confirm: false,
            notes: Some("n".repeat(4001)),
            ..valid()
        };
        assert_eq!(refused(both).0, ErrorCode::InvalidRequest);
    }

    #[test]
    fn payment_method_spelling_is_checked_first_and_the_stablecoin_rail_is_left_to_payments_svc() {
        let unknown = UncheckedOrderRequest {
            payment_method: "wire".into(),
            notes: Some("n".repeat(4001)),
            ..valid()
        };
        assert_eq!(
            refused(unknown),
            (ErrorCode::InvalidPaymentMethod, "paymentMethod".to_owned())
        );
        let stablecoin = UncheckedOrderRequest {
            payment_method: "chain_stablecoin".into(),
            ..valid()
        };
        assert_eq!(
            stablecoin.validate().unwrap().payment_method,
            PaymentMethod::ChainStablecoin
        );
        let card_bad = UncheckedOrderRequest {
            payment_method: "stablecoin_erc20".into(),
            notes: Some("n".repeat(4001)),
            ..valid()
        };
        assert_eq!(refused(card_bad).0, ErrorCode::InvalidRequest);
    }
}

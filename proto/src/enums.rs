//! The names of the shared enums (`lab.common.v1`) outside protobuf: one Rust type each (the
//! generated enum), spelled in SQL TEXT columns, REST and webhook JSON by its snake_case name
//! after the prefix. `UNSPECIFIED` has no name: it is never stored or shown.

use crate::common::{InvoiceStatus, PaymentMethod};

/// `ALL`, `as_str` and `parse` of a shared enum, from its variants' names.
macro_rules! named {
    ($type:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $type {
            /// Every value but `Unspecified`.
            pub const ALL: &'static [$type] = &[$($type::$variant),+];

            /// The canonical name (empty for `Unspecified`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $type::Unspecified => "",
                    $($type::$variant => $name),+
                }
            }

            /// Reads a canonical name; `None` for anything else.
            pub fn parse(name: &str) -> Option<$type> {
                $type::ALL.iter().copied().find(|value| value.as_str() == name)
            }
        }
    };
}

named!(PaymentMethod {
    BankInvoice => "bank_invoice",
    CardCheckout => "card_checkout",
    ChainStablecoin => "chain_stablecoin",
});

named!(InvoiceStatus {
    Open => "open",
    Overdue => "overdue",
    Paid => "paid",
    Void => "void",
});

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T], as_str: fn(T) -> &'static str, parse: fn(&str) -> Option<T>)
    where
        T: Copy + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    {
        for &value in all {
            assert_eq!(parse(as_str(value)), Some(value));
            assert_eq!(serde_json::to_value(value).unwrap(), as_str(value));
            let read: T = serde_json::from_value(serde_json::json!(as_str(value))).unwrap();
            assert_eq!(read, value);
        }
        assert_eq!(parse(""), None);
    }

    #[test]
    fn every_shared_enum_reads_back_from_its_name_and_its_json() {
        round_trips(PaymentMethod::ALL, PaymentMethod::as_str, PaymentMethod::parse);
        round_trips(InvoiceStatus::ALL, InvoiceStatus::as_str, InvoiceStatus::parse);
    }

    #[test]
    fn the_names_are_the_snake_case_spellings_of_rest_and_webhooks() {
        let names: Vec<&str> = PaymentMethod::ALL.iter().map(|method| method.as_str()).collect();
        assert_eq!(names, ["bank_invoice", "card_checkout", "chain_stablecoin"]);
        let names: Vec<&str> = InvoiceStatus::ALL.iter().map(|status| status.as_str()).collect();
        assert_eq!(names, ["open", "overdue", "paid", "void"]);
        assert_eq!(PaymentMethod::parse("stablecoin_erc20"), None);
        assert_eq!(PaymentMethod::parse("BANK_INVOICE"), None);
    }
}

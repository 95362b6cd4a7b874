//! The names of the shared enums (`lab.common.v1`) outside protobuf: one Rust type each (the
//! generated enum), spelled in SQL TEXT columns, REST and webhook JSON by its snake_case name
//! after the prefix. `UNSPECIFIED` has no name: it is never stored or shown.
//!
//! Fields that were text before they became enums keep a `legacy_*` text twin for one release:
//! writers fill both ([`Named::as_str`]), readers take the enum and fall back to the text of a
//! message written before ([`or_legacy`]), so that a rolling upgrade and the events already in
//! the streams read the same.

use crate::common::{InvoiceStatus, OrderStatus, PaymentMethod, ShipmentStatus};
use std::fmt;

/// What every shared enum offers beyond its generated code: its name both ways.
pub trait Named: Copy + TryFrom<i32> + Default + PartialEq + 'static {
    /// Every value but `Unspecified`.
    const VALUES: &'static [Self];
    /// The canonical name (empty for `Unspecified`).
    fn name(self) -> &'static str;
    /// Reads a canonical name; `None` for anything else.
    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES.iter().copied().find(|value| value.name() == name)
    }
}

/// The value of an enum field, or of its `legacy_*` text twin when the enum is unset (a message
/// written before the field became an enum); `Unspecified` (the default) when neither says.
pub fn or_legacy<T: Named>(value: i32, legacy: &str) -> T {
    match T::try_from(value) {
        Ok(read) if read != T::default() => read,
        _ => T::from_name(legacy).unwrap_or_default(),
    }
}

/// The name to show for an enum field (REST JSON): the enum's name, else its text twin as sent,
/// so that a value newer than this build still shows as its writer named it.
pub fn shown<T: Named>(value: i32, legacy: String) -> String {
    match T::try_from(value) {
        Ok(read) if read != T::default() => read.name().to_owned(),
        _ => legacy,
    }
}

/// serde `serialize_with` of an enum field of an event payload: its name (webhook `data`).
pub fn serialize_name<T: Named, S: serde::Serializer>(value: &i32, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(T::try_from(*value).map(T::name).unwrap_or(""))
}

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

        impl Named for $type {
            const VALUES: &'static [$type] = $type::ALL;

            fn name(self) -> &'static str {
                self.as_str()
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
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

named!(OrderStatus {
    InvoiceSent => "invoice_sent",
    Overdue => "overdue",
    Paid => "paid",
    LabelGenerated => "label_generated",
    InTransit => "in_transit",
    SampleReceived => "sample_received",
    InLab => "in_lab",
    Reporting => "reporting",
    Completed => "completed",
    Cancelled => "cancelled",
});

named!(ShipmentStatus {
    PreTransit => "pre_transit",
    InTransit => "in_transit",
    Exception => "exception",
    OutForDelivery => "out_for_delivery",
    Delivered => "delivered",
    Returned => "returned",
    Lost => "lost",
    PickupBooked => "pickup_booked",
});

impl ShipmentStatus {
    /// True for the statuses a shipment can have (not `pickup_booked`, which only
    /// `shipment.updated` carries, nor `Unspecified`).
    pub fn is_shipment_status(self) -> bool {
        !matches!(self, ShipmentStatus::Unspecified | ShipmentStatus::PickupBooked)
    }

    /// How far along the shipment is (docs/shipping.md): 0 before the carrier has it, 1 moving
    /// or held, 2 out for delivery, 3 terminal; 0 for what is no shipment status.
    pub fn rank(self) -> u8 {
        match self {
            ShipmentStatus::Unspecified | ShipmentStatus::PickupBooked | ShipmentStatus::PreTransit => 0,
            ShipmentStatus::InTransit | ShipmentStatus::Exception => 1,
            ShipmentStatus::OutForDelivery => 2,
            ShipmentStatus::Delivered | ShipmentStatus::Returned | ShipmentStatus::Lost => 3,
        }
    }

    /// True when no later scan changes the status (delivered, returned, lost).
    pub fn is_terminal(self) -> bool {
        self.rank() == 3
    }

    /// True when the carrier has the parcel (the order moves to `in_transit`).
    pub fn carrier_has_parcel(self) -> bool {
        self.rank() >= 1
    }
}

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
        round_trips(OrderStatus::ALL, OrderStatus::as_str, OrderStatus::parse);
        round_trips(ShipmentStatus::ALL, ShipmentStatus::as_str, ShipmentStatus::parse);
    }

    #[test]
    fn an_enum_field_is_read_from_its_text_twin_when_a_message_predates_it() {
        let set = OrderStatus::Paid as i32;
        assert_eq!(or_legacy::<OrderStatus>(set, "cancelled"), OrderStatus::Paid);
        assert_eq!(or_legacy::<OrderStatus>(0, "in_lab"), OrderStatus::InLab);
        assert_eq!(or_legacy::<OrderStatus>(0, ""), OrderStatus::Unspecified);
        assert_eq!(or_legacy::<OrderStatus>(0, "shipped"), OrderStatus::Unspecified);
        // A number this build does not know (a newer writer) falls back to the text too.
        assert_eq!(or_legacy::<OrderStatus>(99, "paid"), OrderStatus::Paid);
    }

    #[test]
    fn an_event_payload_shows_its_enum_fields_by_name_and_hides_their_text_twins() {
        let changed = crate::orders::OrderStatusChanged {
            from_status: OrderStatus::Paid as i32,
            legacy_from_status: "paid".into(),
            to_status: OrderStatus::LabelGenerated as i32,
            legacy_to_status: "label_generated".into(),
            ..Default::default()
        };
        let json = serde_json::to_value(&changed).unwrap();
        assert_eq!(json["from_status"], "paid");
        assert_eq!(json["to_status"], "label_generated");
        assert!(json.get("legacy_from_status").is_none() && json.get("legacy_to_status").is_none());
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

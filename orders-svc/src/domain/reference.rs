//! Order references: how every operation on an order names it (UUID, order number, invoice
//! number, the accession number of one of its samples, or the tracking number of its label).

use uuid::Uuid;

/// A parsed order reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderReference {
    /// The order's UUID.
    Id(Uuid),
    /// The public order number, `ORD-…`.
    OrderNumber(String),
    /// The number of the order's invoice, `INV-…`.
    InvoiceNumber(String),
    /// The accession number of one of the order's samples, `ACC-…`.
    AccessionNumber(String),
    /// Anything else that could be a carrier's tracking number of the order's label (letters,
    /// digits and dashes, at most [`MAX_TRACKING_NUMBER`] characters).
    TrackingNumber(String),
}

/// The longest tracking number looked up.
pub const MAX_TRACKING_NUMBER: usize = 100;

impl OrderReference {
    /// Parses a reference; `None` when it cannot name any order (answered as `not_found`).
    pub fn parse(reference: &str) -> Option<OrderReference> {
        let reference = reference.trim();
        if let Ok(id) = Uuid::parse_str(reference) {
            return Some(OrderReference::Id(id));
        }
        if reference.len() > 4 && reference.starts_with("ORD-") {
            return Some(OrderReference::OrderNumber(reference.to_owned()));
        }
        if reference.len() > 4 && reference.starts_with("INV-") {
            return Some(OrderReference::InvoiceNumber(reference.to_owned()));
        }
        if reference.len() > 4 && reference.starts_with("ACC-") {
            return Some(OrderReference::AccessionNumber(reference.to_owned()));
        }
        let prefixed = ["ORD-", "INV-", "ACC-"]
            .iter()
            .any(|prefix| reference.starts_with(prefix));
        let plausible = !reference.is_empty()
            && reference.len() <= MAX_TRACKING_NUMBER
            && reference
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
        (plausible && !prefixed).then(|| OrderReference::TrackingNumber(reference.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_recognised_by_shape() {
        let id = Uuid::now_v7();
        assert_eq!(
            OrderReference::parse(&id.to_string()),
            Some(OrderReference::Id(id))
        );
        assert_eq!(
            OrderReference::parse("ORD-2026-000001"),
            Some(OrderReference::OrderNumber("ORD-2026-000001".into()))
        );
        assert_eq!(
            OrderReference::parse("INV-2026-000001"),
            Some(OrderReference::InvoiceNumber("INV-2026-000001".into()))
        );
        assert_eq!(
            OrderReference::parse("ACC-2026-000001"),
            Some(OrderReference::AccessionNumber("ACC-2026-000001".into()))
        );
        assert_eq!(
            OrderReference::parse(" 1Z999AA10123456784 "),
            Some(OrderReference::TrackingNumber("1Z999AA10123456784".into()))
        );
        assert_eq!(OrderReference::parse("ORD-"), None);
        assert_eq!(OrderReference::parse(""), None);
        assert_eq!(OrderReference::parse("not a tracking number"), None);
        assert_eq!(OrderReference::parse(&"9".repeat(MAX_TRACKING_NUMBER + 1)), None);
    }
}

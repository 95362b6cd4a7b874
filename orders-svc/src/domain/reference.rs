//! Order references: how `GetOrder` names an order (UUID, order number, invoice number or the
//! accession number of one of its samples).

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
}

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
        None
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
        assert_eq!(OrderReference::parse("1Z999"), None);
        assert_eq!(OrderReference::parse("ORD-"), None);
        assert_eq!(OrderReference::parse(""), None);
    }
}

//! The quote as orders-svc reads it from catalog-svc, and the rules that turn a quote and a
//! validated request into an order: expiry, the sample-metadata overlay and the spend envelope.

use crate::domain::order::{
    Charge, LineItem, Order, OrderLine, REASON_CREATED, SampleRequirement, StatusChange,
};
use crate::domain::request::OrderRequest;
use crate::domain::status::OrderStatus;
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use uuid::Uuid;

/// One sample line of a quote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuoteLine {
    pub line_number: i32,
    pub compound_name: String,
    pub items: Vec<LineItem>,
    pub subtotal: Cents,
    pub sample_requirements: Vec<SampleRequirement>,
}

/// An immutable, server-priced quote; its commercial rows stay authoritative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quote {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub catalog_revision: String,
    pub category_id: String,
    pub turnaround: String,
    pub turnaround_business_days: i32,
    pub conformity_samples: i64,
    pub lines: Vec<QuoteLine>,
    pub charges: Vec<Charge>,
    pub total: Cents,
    pub currency: String,
    pub expires_at: DateTime<Utc>,
}

/// Who places the order and when.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    pub customer_id: Uuid,
    /// The key's spend envelope: the largest order total it may commit, in cents.
    pub spend_limit: Option<Cents>,
    pub now: DateTime<Utc>,
}

/// An order ready to be stored, waiting for its id and number.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedOrder(Order);

impl PlannedOrder {
    /// Gives the order its id and public number.
    pub fn into_order(self, id: Uuid, order_number: String) -> Order {
        Order {
            id,
            order_number,
            ..self.0
        }
    }

    /// The order total (for the spend envelope and the invoice).
    pub fn total(&self) -> Cents {
        self.0.total
    }
}

/// Checks the quote against the request and the placement, then copies its commercial rows
/// into an order in `invoice_sent` with its first history entry. Errors, in this order:
/// `quote_not_found` (another customer's quote), `quote_expired` (`expires_at <= now`),
/// `unknown_compound` (field `sampleMetadata[i].compoundName`), `spend_limit_exceeded`.
pub fn plan_order(
    quote: Quote,
    request: OrderRequest,
    placement: Placement,
) -> Result<PlannedOrder, ApiError> {
    if quote.customer_id != placement.customer_id {
        return Err(ApiError::field(
            ErrorCode::QuoteNotFound,
            "quoteId",
            "the quote does not exist",
        ));
    }
    if quote.expires_at <= placement.now {
        return Err(ApiError::field(
            ErrorCode::QuoteExpired,
            "quoteId",
            "the quote has expired; create a new quote",
        )
        .with_details(serde_json::json!({ "expiredAt": platform::time::rfc3339(quote.expires_at) })));
    }
    for (index, metadata) in request.sample_metadata.iter().enumerate() {
        if !quote
            .lines
            .iter()
            .any(|line| line.compound_name == metadata.compound_name)
        {
            return Err(ApiError::field(
                ErrorCode::UnknownCompound,
                &format!("sampleMetadata[{index}].compoundName"),
                format!("compound {:?} is not on the quote", metadata.compound_name),
            ));
        }
    }
    if let Some(limit) = placement.spend_limit
        && quote.total > limit
    {
        return Err(ApiError::new(
            ErrorCode::SpendLimitExceeded,
            "the order total exceeds the key's spending envelope",
        )
        .with_details(serde_json::json!({ "totalCents": quote.total.0, "spendLimitCents": limit.0 })));
    }
    let lines = quote
        .lines
        .into_iter()
        .map(|line| {
            let overlay = request
                .sample_metadata
                .iter()
                .find(|metadata| metadata.compound_name == line.compound_name);
            OrderLine {
                line_number: line.line_number,
                lot_number: overlay.and_then(|metadata| metadata.lot_number.clone()),
                matrix_notes: overlay.and_then(|metadata| metadata.matrix_notes.clone()),
                compound_name: line.compound_name,
                items: line.items,
                sample_requirements: line.sample_requirements,
                subtotal: line.subtotal,
            }
        })
        .collect();
    let status = OrderStatus::InvoiceSent;
    Ok(PlannedOrder(Order {
        id: Uuid::nil(),
        order_number: String::new(),
        customer_id: placement.customer_id,
        quote_id: quote.id,
        status,
        payment_method: request.payment_method,
        catalog_revision: quote.catalog_revision,
        category_id: quote.category_id,
        turnaround: quote.turnaround,
        turnaround_business_days: quote.turnaround_business_days,
        conformity_samples: quote.conformity_samples,
        client_reference: request.client_reference,
        notes: request.notes,
        publish_raw_data: request.publish_raw_data,
        expected_payer_address: request.expected_payer_address,
        billing_address_id: request.billing_address_id,
        shipping_address_id: request.shipping_address_id,
        quote_expires_at: Some(quote.expires_at),
        lines,
        charges: quote.charges,
        total: quote.total,
        currency: quote.currency,
        status_history: vec![StatusChange {
            from: None,
            to: status,
            changed_at: placement.now,
            reason: REASON_CREATED.to_owned(),
        }],
        payment: None,
        created_at: placement.now,
        updated_at: placement.now,
        accession_numbers: Vec::new(),
        stablecoin: None,
        cancellation: None,
        addons: Vec::new(),
        sandbox: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::payment_method::PaymentMethod;
    use crate::domain::request::SampleMetadata;

    fn item(id: &str, price: i64) -> LineItem {
        LineItem {
            item_id: id.into(),
            kind: "test".into(),
            name: id.to_uppercase(),
            price_cents: price,
            test_ids: vec![id.into()],
        }
    }

    fn quote(customer: Uuid, now: DateTime<Utc>) -> Quote {
        let line = |n: i32, name: &str| QuoteLine {
            line_number: n,
            compound_name: name.into(),
            items: vec![item("purity", 10_000)],
            subtotal: Cents(10_000),
            sample_requirements: vec![],
        };
        Quote {
            id: Uuid::now_v7(),
            customer_id: customer,
            catalog_revision: "rev-1".into(),
            category_id: "peptides".into(),
            turnaround: "standard".into(),
            turnaround_business_days: 5,
            conformity_samples: 1,
            lines: vec![line(1, "BPC-157"), line(2, "TB-500")],
            charges: vec![Charge {
                kind: "conformity_samples".into(),
                description: "Conformity samples".into(),
                quantity: 1,
                unit_price: Cents(2_500),
                amount: Cents(2_500),
            }],
            total: Cents(22_500),
            currency: "USD".into(),
            expires_at: now + chrono::Duration::minutes(15),
        }
    }

    fn request(quote: &Quote, metadata: Vec<SampleMetadata>) -> OrderRequest {
        OrderRequest {
            quote_id: quote.id,
            payment_method: PaymentMethod::BankInvoice,
            expected_payer_address: None,
            client_reference: Some("po-1".into()),
            notes: None,
            publish_raw_data: true,
            billing_address_id: None,
            shipping_address_id: None,
            sample_metadata: metadata,
        }
    }

    fn metadata(name: &str, lot: &str) -> SampleMetadata {
        SampleMetadata {
            compound_name: name.into(),
            lot_number: Some(lot.into()),
            matrix_notes: None,
        }
    }

    fn placement(customer: Uuid, now: DateTime<Utc>, limit: Option<i64>) -> Placement {
        Placement {
            customer_id: customer,
            spend_limit: limit.map(Cents),
            now,
        }
    }

    #[test]
    fn the_overlay_sets_only_lot_number_and_matrix_notes_of_the_matching_line() {
        let (customer, now) = (Uuid::now_v7(), Utc::now());
        let quote = quote(customer, now);
        let request = request(&quote, vec![metadata("TB-500", "LOT-9")]);
        let order = plan_order(quote.clone(), request, placement(customer, now, None))
            .unwrap()
            .into_order(Uuid::nil(), "ORD".into());
        assert_eq!(order.lines[0].lot_number, None);
        assert_eq!(order.lines[1].lot_number.as_deref(), Some("LOT-9"));
        assert_eq!(order.lines[1].items, quote.lines[1].items);
        assert_eq!(order.lines[1].subtotal, quote.lines[1].subtotal);
        assert_eq!(order.total, Cents(22_500));
        assert_eq!(order.status, OrderStatus::InvoiceSent);
        assert_eq!(order.status_history.len(), 1);
        assert_eq!(order.status_history[0].reason, "order.created");
        let invoice = order.invoice_lines();
        assert_eq!(invoice[0].description, "BPC-157: PURITY");
        assert_eq!(
            Cents::sum(invoice.iter().map(|line| line.amount)),
            Some(order.total)
        );
    }

    #[test]
    fn compound_names_match_exactly_and_case_sensitively() {
        let (customer, now) = (Uuid::now_v7(), Utc::now());
        let quote = quote(customer, now);
        let request = request(&quote, vec![metadata("TB-500", "1"), metadata("bpc-157", "2")]);
        let error = plan_order(quote, request, placement(customer, now, None)).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownCompound);
        assert_eq!(error.details.unwrap()["field"], "sampleMetadata[1].compoundName");
    }

    #[test]
    fn a_quote_expiring_now_is_expired() {
        let (customer, now) = (Uuid::now_v7(), Utc::now());
        let mut expired = quote(customer, now);
        expired.expires_at = now;
        let request = request(&expired, vec![]);
        assert_eq!(
            plan_order(expired, request, placement(customer, now, None))
                .unwrap_err()
                .code,
            ErrorCode::QuoteExpired
        );
    }

    #[test]
    fn another_customers_quote_is_not_found() {
        let now = Utc::now();
        let quote = quote(Uuid::now_v7(), now);
        let request = request(&quote, vec![]);
        let error = plan_order(quote, request, placement(Uuid::now_v7(), now, None)).unwrap_err();
        assert_eq!(error.code, ErrorCode::QuoteNotFound);
    }

    #[test]
    fn the_spend_envelope_allows_the_exact_total_and_refuses_one_cent_more() {
        let (customer, now) = (Uuid::now_v7(), Utc::now());
        let quote = quote(customer, now);
        let at_limit = plan_order(
            quote.clone(),
            request(&quote, vec![]),
            placement(customer, now, Some(22_500)),
        );
        assert_eq!(at_limit.unwrap().total(), Cents(22_500));
        let over = plan_order(
            quote.clone(),
            request(&quote, vec![]),
            placement(customer, now, Some(22_499)),
        )
        .unwrap_err();
        assert_eq!(over.code, ErrorCode::SpendLimitExceeded);
        assert_eq!(over.details.unwrap()["spendLimitCents"], 22_499);
    }
}

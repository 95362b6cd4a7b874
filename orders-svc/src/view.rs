//! The order read model's document: the REST `order` object of `GET /orders/{reference}`
//! (camelCase, the shape of the gateway's `dto::orders::Order`, byte for byte, key order
//! included), rendered once per change of the order and stored in `orders.order_views`.
//!
//! Only the `shipping` block's signed label URL depends on the moment of the read: the stored
//! document leaves it out and keeps the byte offset where `"labelUrl":` awaits its value; a read
//! splices the URL and its expiry in ([`splice_label_url`]), with no JSON parsed.
//!
//! Adding a block to the order (for instance an `amount` block of stablecoin orders) is one
//! field of [`OrderDocument`] at its place in the gateway's key order, filled in [`render`]
//! (and the same field in the gateway's DTO, which still answers listings and creation).

use crate::domain::order::{Order, PaymentSummary};
use chrono::{DateTime, Utc};
use proto::shipping as shipping_pb;
use serde::{Serialize, Serializer};

/// The placeholder rendered as the label URL; removed from the stored document.
const URL_PLACEHOLDER: &str = "\u{1}";
/// What the placeholder renders to, with the expiry that follows it (both cut out).
const URL_PLACEHOLDER_RENDERED: &str = "\"\\u0001\",\"labelUrlExpiresAt\":null";
/// Where the placeholder sits: right after this key.
const URL_KEY: &str = "\"labelUrl\":";

/// The shipping block as orders-svc keeps it from `shipment.*` events.
#[derive(Clone, Debug, PartialEq)]
pub struct ShippingBlock {
    /// The shipment's normalized status (latest applied scan).
    pub status: String,
    /// The label without its signed URL.
    pub label: shipping_pb::Label,
}

/// A rendered document and where its label URL goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub document: String,
    /// Byte offset in `document` where the label URL's value and expiry go (`None`: no
    /// shipping block).
    pub label_url_at: Option<usize>,
    /// Offset of `null` in `"shipping":null` (for a gateway that must fill a block this read
    /// model does not know: orders labelled before the read model existed).
    pub shipping_null_at: Option<usize>,
}

/// Renders the order's document with its shipping block (if any).
pub fn render(order: &Order, shipping: Option<&ShippingBlock>) -> Result<Rendered, serde_json::Error> {
    let document = OrderDocument::of(order, shipping);
    let mut text = serde_json::to_string(&document)?;
    let mut label_url_at = None;
    let mut shipping_null_at = None;
    if shipping.is_some() {
        if let Some(position) = text.find(&format!("{URL_KEY}{URL_PLACEHOLDER_RENDERED}")) {
            let at = position + URL_KEY.len();
            text.replace_range(at..at + URL_PLACEHOLDER_RENDERED.len(), "");
            label_url_at = Some(at);
        }
    } else if let Some(position) = text.find(SHIPPING_NULL) {
        shipping_null_at = Some(position + ",\"shipping\":".len());
    }
    Ok(Rendered {
        document: text,
        label_url_at,
        shipping_null_at,
    })
}

/// The block of an order without shipping, right after its payment block.
const SHIPPING_NULL: &str = ",\"shipping\":null,\"publishRawData\":";

/// The stored document with the label URL and its expiry spliced in at `at`.
pub fn splice_label_url(document: &str, at: usize, url: &str, expires_at: DateTime<Utc>) -> Vec<u8> {
    let (head, tail) = document.split_at(at.min(document.len()));
    let url = serde_json::to_string(url).unwrap_or_else(|_| "\"\"".to_owned());
    let expires = platform::time::rfc3339(expires_at);
    let mut out = Vec::with_capacity(document.len() + url.len() + expires.len() + 24);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(url.as_bytes());
    out.extend_from_slice(b",\"labelUrlExpiresAt\":\"");
    out.extend_from_slice(expires.as_bytes());
    out.push(b'"');
    out.extend_from_slice(tail.as_bytes());
    out
}

fn rfc3339<S: Serializer>(time: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&platform::time::rfc3339(*time))
}

fn rfc3339_opt<S: Serializer>(time: &Option<DateTime<Utc>>, serializer: S) -> Result<S::Ok, S::Error> {
    match time {
        Some(time) => rfc3339(time, serializer),
        None => serializer.serialize_none(),
    }
}

/// `gateway::dto::orders::Order`, field for field.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrderDocument<'a> {
    id: String,
    order_number: &'a str,
    quote_id: String,
    status: &'a str,
    status_history: Vec<StatusChangeDocument<'a>>,
    payment_method: &'a str,
    catalog_revision: &'a str,
    category_id: &'a str,
    turnaround: &'a str,
    conformity_samples: i64,
    lines: Vec<LineDocument<'a>>,
    charges: Vec<ChargeDocument<'a>>,
    total_cents: i64,
    currency: &'a str,
    payment: Option<PaymentDocument<'a>>,
    shipping: Option<ShippingDocument<'a>>,
    publish_raw_data: bool,
    client_reference: Option<&'a str>,
    notes: Option<&'a str>,
    expected_payer_address: Option<&'a str>,
    billing_address_id: Option<String>,
    shipping_address_id: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    created_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339")]
    updated_at: DateTime<Utc>,
    payment_state: &'a str,
    accession_numbers: &'a [String],
    related: RelatedDocument,
    /// The stablecoin rail's exact amount, as issued with the order (`null` on other rails).
    amount: Option<AmountDocument<'a>>,
    /// The latest cancellation request (`null` when none was filed).
    cancellation: Option<CancellationDocument<'a>>,
    /// Add-on tests on the retained samples, oldest first (the gateway's `OrderAddon`).
    addons: Vec<AddonDocument<'a>>,
    /// `true` on a sandbox customer's order (docs/sandbox.md); absent on a live one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    sandbox: bool,
}

/// One add-on (the gateway's `OrderAddon`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AddonDocument<'a> {
    id: Option<String>,
    line_number: i32,
    accession_number: &'a str,
    status: &'a str,
    tests: &'a [crate::domain::addon::AddonTest],
    total_cents: i64,
    currency: &'a str,
    catalog_revision: &'a str,
    #[serde(serialize_with = "rfc3339_opt")]
    requested_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    paid_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    reported_at: Option<DateTime<Utc>>,
    invoice: Option<PaymentDocument<'a>>,
}

/// The `cancellation` block (the gateway's `CancellationRequest`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CancellationDocument<'a> {
    id: String,
    status: &'a str,
    reason: &'a str,
    #[serde(serialize_with = "rfc3339")]
    requested_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339_opt")]
    decided_at: Option<DateTime<Utc>>,
    note: Option<&'a str>,
    charge_cents: Option<i64>,
}

/// The `amount` block of a stablecoin order (the gateway's `StablecoinAmount`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AmountDocument<'a> {
    atomic: i64,
    decimal: &'a str,
    reference_atomic: i64,
    notice: &'a str,
    chain_id: u64,
    token_address: &'a str,
    target_address: &'a str,
    payer_address: &'a str,
    #[serde(serialize_with = "rfc3339_opt")]
    expires_at: Option<DateTime<Utc>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusChangeDocument<'a> {
    from_status: Option<&'a str>,
    to_status: &'a str,
    #[serde(serialize_with = "rfc3339")]
    changed_at: DateTime<Utc>,
    reason: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LineDocument<'a> {
    line_number: i32,
    compound_name: &'a str,
    lot_number: Option<&'a str>,
    matrix_notes: Option<&'a str>,
    items: &'a [crate::domain::order::LineItem],
    subtotal_cents: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChargeDocument<'a> {
    kind: &'a str,
    description: &'a str,
    quantity: i64,
    unit_price_cents: i64,
    amount_cents: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PaymentDocument<'a> {
    invoice_id: &'a str,
    invoice_number: &'a str,
    status: &'a str,
    amount_due_cents: i64,
    #[serde(serialize_with = "rfc3339_opt")]
    due_at: Option<DateTime<Utc>>,
    bank_instructions: Option<&'a crate::domain::order::BankInstructions>,
    hosted_url: Option<&'a str>,
    #[serde(serialize_with = "rfc3339_opt")]
    checkout_expires_at: Option<DateTime<Utc>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RelatedDocument {
    samples: String,
    custody: String,
    eta: String,
    results: String,
    invoice: Option<String>,
}

/// `gateway::dto::orders::OrderShipping`: the label, or the pending block of a ship-first order
/// whose label is being bought.
#[derive(Serialize)]
#[serde(untagged)]
enum ShippingDocument<'a> {
    Label(Box<LabelDocument<'a>>),
    Pending { status: &'static str },
}

/// The shipping block's status while a ship-first order's label is being bought.
pub const LABEL_PENDING_STATUS: &str = "label_pending";

/// Whether the order shows the pending shipping block when no label is kept: a card or bank
/// order (ship-first) that is still before `label_generated`. Stablecoin orders, cancelled
/// orders and orders already labelled (a label the read model does not keep) show `null`.
fn label_pending(order: &Order) -> bool {
    use crate::domain::status::{Lifecycle, OrderStatus};
    crate::domain::payment_method::SHIP_FIRST.contains(&order.payment_method)
        && order.status.can_transition_to(OrderStatus::LabelGenerated)
}

/// `gateway::dto::shipping::Label`, with the URL as a placeholder.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LabelDocument<'a> {
    shipment_id: &'a str,
    status: &'a str,
    tracking_number: &'a str,
    tracking_url: &'a str,
    carrier_code: &'a str,
    service_code: &'a str,
    label_url: &'static str,
    label_url_expires_at: Option<()>,
    ship_to: AddressDocument<'a>,
    ship_from: AddressDocument<'a>,
    packing_steps: Vec<PackingStepDocument<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AddressDocument<'a> {
    name: &'a str,
    company: &'a str,
    street1: &'a str,
    street2: &'a str,
    city: &'a str,
    state: &'a str,
    postal_code: &'a str,
    country: &'a str,
    phone: &'a str,
    email: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PackingStepDocument<'a> {
    step: i32,
    line_number: i32,
    sample_reference: &'a str,
    compound_name: &'a str,
    container: &'a str,
    quantity: &'a str,
    temperature: &'a str,
    instruction: &'a str,
    test_ids: &'a [String],
}

/// An address the label may lack: the empty address, as the gateway renders it.
static NO_ADDRESS: shipping_pb::Address = shipping_pb::Address {
    name: String::new(),
    company: String::new(),
    street1: String::new(),
    street2: String::new(),
    city: String::new(),
    state: String::new(),
    postal_code: String::new(),
    country: String::new(),
    phone: String::new(),
    email: String::new(),
};

impl<'a> AddressDocument<'a> {
    fn of(address: Option<&'a shipping_pb::Address>) -> Self {
        let address = address.unwrap_or(&NO_ADDRESS);
        Self {
            name: &address.name,
            company: &address.company,
            street1: &address.street1,
            street2: &address.street2,
            city: &address.city,
            state: &address.state,
            postal_code: &address.postal_code,
            country: &address.country,
            phone: &address.phone,
            email: &address.email,
        }
    }
}

impl<'a> LabelDocument<'a> {
    fn of(block: &'a ShippingBlock) -> Self {
        let label = &block.label;
        Self {
            shipment_id: &label.shipment_id,
            status: &block.status,
            tracking_number: &label.tracking_number,
            tracking_url: &label.tracking_url,
            carrier_code: &label.carrier_code,
            service_code: &label.service_code,
            label_url: URL_PLACEHOLDER,
            label_url_expires_at: None,
            ship_to: AddressDocument::of(label.ship_to.as_ref()),
            ship_from: AddressDocument::of(label.ship_from.as_ref()),
            packing_steps: label
                .packing_steps
                .iter()
                .map(|step| PackingStepDocument {
                    step: step.step,
                    line_number: step.line_number,
                    sample_reference: &step.sample_reference,
                    compound_name: &step.compound_name,
                    container: &step.container,
                    quantity: &step.quantity,
                    temperature: &step.temperature,
                    instruction: &step.instruction,
                    test_ids: &step.test_ids,
                })
                .collect(),
        }
    }
}

fn non_empty(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

impl<'a> PaymentDocument<'a> {
    fn of(payment: &'a PaymentSummary) -> Self {
        Self {
            invoice_id: &payment.invoice_id,
            invoice_number: &payment.invoice_number,
            status: payment.status.as_str(),
            amount_due_cents: payment.amount_due.0,
            due_at: payment.due_at,
            bank_instructions: payment.bank_instructions.as_ref(),
            hosted_url: payment.hosted_url.as_deref(),
            checkout_expires_at: payment.checkout_expires_at,
        }
    }
}

impl<'a> OrderDocument<'a> {
    fn of(order: &'a Order, shipping: Option<&'a ShippingBlock>) -> Self {
        let id = order.id.to_string();
        Self {
            amount: order.stablecoin.as_ref().map(|request| AmountDocument {
                atomic: request.atomic,
                decimal: &request.decimal,
                reference_atomic: request.reference_atomic,
                notice: &request.notice,
                chain_id: request.chain_id,
                token_address: &request.token_address,
                target_address: &request.target_address,
                payer_address: &request.payer_address,
                expires_at: request.expires_at,
            }),
            related: RelatedDocument {
                samples: format!("/orders/{id}/samples"),
                custody: format!("/orders/{id}/custody"),
                eta: format!("/orders/{id}/eta"),
                results: format!("/results?orderId={id}"),
                invoice: order
                    .payment
                    .as_ref()
                    .map(|payment| format!("/invoices/{}", payment.invoice_number)),
            },
            id,
            order_number: &order.order_number,
            quote_id: order.quote_id.to_string(),
            status: order.status.as_str(),
            status_history: order
                .status_history
                .iter()
                .map(|change| StatusChangeDocument {
                    from_status: change.from.map(|status| status.as_str()),
                    to_status: change.to.as_str(),
                    changed_at: change.changed_at,
                    reason: non_empty(&change.reason),
                })
                .collect(),
            payment_method: order.payment_method.as_str(),
            catalog_revision: &order.catalog_revision,
            category_id: &order.category_id,
            turnaround: &order.turnaround,
            conformity_samples: order.conformity_samples,
            lines: order
                .lines
                .iter()
                .map(|line| LineDocument {
                    line_number: line.line_number,
                    compound_name: &line.compound_name,
                    lot_number: line.lot_number.as_deref(),
                    matrix_notes: line.matrix_notes.as_deref(),
                    items: &line.items,
                    subtotal_cents: line.subtotal.0,
                })
                .collect(),
            charges: order
                .charges
                .iter()
                .map(|charge| ChargeDocument {
                    kind: &charge.kind,
                    description: &charge.description,
                    quantity: charge.quantity,
                    unit_price_cents: charge.unit_price.0,
                    amount_cents: charge.amount.0,
                })
                .collect(),
            total_cents: order.total.0,
            currency: &order.currency,
            payment: order.payment.as_ref().map(PaymentDocument::of),
            shipping: match shipping {
                Some(block) => Some(ShippingDocument::Label(Box::new(LabelDocument::of(block)))),
                None if label_pending(order) => Some(ShippingDocument::Pending {
                    status: LABEL_PENDING_STATUS,
                }),
                None => None,
            },
            publish_raw_data: order.publish_raw_data,
            client_reference: order.client_reference.as_deref(),
            notes: order.notes.as_deref(),
            expected_payer_address: order.expected_payer_address.as_deref(),
            billing_address_id: order.billing_address_id.map(|id| id.to_string()),
            shipping_address_id: order.shipping_address_id.map(|id| id.to_string()),
            created_at: order.created_at,
            updated_at: order.updated_at,
            payment_state: order.payment_state(),
            accession_numbers: &order.accession_numbers,
            sandbox: order.sandbox,
            cancellation: order.cancellation.as_ref().map(|request| CancellationDocument {
                id: request.id.to_string(),
                status: request.status.as_str(),
                reason: &request.reason,
                requested_at: request.requested_at,
                decided_at: request.decided_at,
                note: request.note.as_deref(),
                charge_cents: request.charge_cents,
            }),
            addons: order
                .addons
                .iter()
                .map(|addon| AddonDocument {
                    id: Some(addon.id.to_string()),
                    line_number: addon.line_number,
                    accession_number: &addon.accession_number,
                    status: addon.status.as_str(),
                    tests: &addon.tests,
                    total_cents: addon.total.0,
                    currency: &addon.currency,
                    catalog_revision: &addon.catalog_revision,
                    requested_at: addon.requested_at,
                    paid_at: addon.paid_at,
                    reported_at: addon.reported_at,
                    invoice: addon.invoice.as_ref().map(PaymentDocument::of),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::{LineItem, OrderLine, StatusChange};
    use crate::domain::payment_method::PaymentMethod;
    use crate::domain::status::OrderStatus;
    use platform::money::Cents;
    use uuid::Uuid;

    fn order() -> Order {
        let at = DateTime::from_timestamp(1_800_000_000, 123_456_000).unwrap();
        Order {
            id: Uuid::now_v7(),
            order_number: "ORD-2027-000001".to_owned(),
            customer_id: Uuid::now_v7(),
            quote_id: Uuid::now_v7(),
            status: OrderStatus::LabelGenerated,
            payment_method: PaymentMethod::BankInvoice,
            catalog_revision: "r1".to_owned(),
            category_id: "peptides".to_owned(),
            turnaround: "standard".to_owned(),
            turnaround_business_days: 10,
            conformity_samples: 0,
            client_reference: Some("a \"quoted\" \\ labelUrl\":\"\\u0001".to_owned()),
            notes: None,
            publish_raw_data: true,
            expected_payer_address: None,
            billing_address_id: None,
            shipping_address_id: None,
            quote_expires_at: None,
            lines: vec![OrderLine {
                line_number: 1,
                compound_name: "BPC-157".to_owned(),
                lot_number: None,
                matrix_notes: None,
                items: vec![LineItem {
                    item_id: "t1".to_owned(),
                    kind: "test".to_owned(),
                    name: "Identity".to_owned(),
                    price_cents: 100,
                    test_ids: vec!["t1".to_owned()],
                }],
                sample_requirements: Vec::new(),
                subtotal: Cents(100),
            }],
            charges: Vec::new(),
            total: Cents(100),
            currency: "USD".to_owned(),
            status_history: vec![StatusChange {
                from: None,
                to: OrderStatus::InvoiceSent,
                changed_at: at,
                reason: String::new(),
            }],
            payment: None,
            created_at: at,
            updated_at: at,
            accession_numbers: Vec::new(),
            stablecoin: None,
            cancellation: None,
            addons: Vec::new(),
            sandbox: false,
        }
    }

    #[test]
    fn a_document_without_shipping_says_null_where_a_block_would_go() {
        let order = order();
        let rendered = render(&order, None).unwrap();
        assert_eq!(rendered.label_url_at, None);
        let at = rendered.shipping_null_at.unwrap();
        assert_eq!(&rendered.document[at..at + 4], "null");
        let value: serde_json::Value = serde_json::from_str(&rendered.document).unwrap();
        assert_eq!(value["shipping"], serde_json::Value::Null);
        assert_eq!(value["statusHistory"][0]["reason"], serde_json::Value::Null);
        assert_eq!(value["createdAt"], "2027-01-15T08:00:00.123456Z");
        assert_eq!(value["related"]["invoice"], serde_json::Value::Null);
    }

    #[test]
    fn the_label_url_is_spliced_into_the_shipping_block_at_read_time() {
        let order = order();
        let shipment_id = Uuid::now_v7();
        let block = ShippingBlock {
            status: "pre_transit".to_owned(),
            label: shipping_pb::Label {
                shipment_id: shipment_id.to_string(),
                tracking_number: "1Z999AA10123456784".to_owned(),
                ..shipping_pb::Label::default()
            },
        };
        let rendered = render(&order, Some(&block)).unwrap();
        assert!(!rendered.document.contains("labelUrlExpiresAt"));
        let at = rendered.label_url_at.unwrap();
        let expires = DateTime::from_timestamp(1_800_003_600, 0).unwrap();
        let json = splice_label_url(
            &rendered.document,
            at,
            "https://lab.example/l.pdf?a=1&b=2",
            expires,
        );
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let shipping = &value["shipping"];
        assert_eq!(shipping["labelUrl"], "https://lab.example/l.pdf?a=1&b=2");
        assert_eq!(shipping["labelUrlExpiresAt"], "2027-01-15T09:00:00.000000Z");
        assert_eq!(shipping["shipmentId"], shipment_id.to_string());
        assert_eq!(shipping["status"], "pre_transit");
        assert_eq!(shipping["shipTo"]["city"], "");
        assert_eq!(value["clientReference"], order.client_reference.unwrap());
        let text = String::from_utf8(json).unwrap();
        assert!(text.contains("\"serviceCode\":\"\",\"labelUrl\":\"https://lab.example/l.pdf?a=1&b=2\",\"labelUrlExpiresAt\":\"2027-01-15T09:00:00.000000Z\",\"shipTo\":{"));
    }

    #[test]
    fn a_ship_first_order_without_its_label_yet_shows_the_pending_shipping_block() {
        let shipping_of = |payment_method, status| {
            let order = Order {
                payment_method,
                status,
                ..order()
            };
            let rendered = render(&order, None).unwrap();
            let value: serde_json::Value = serde_json::from_str(&rendered.document).unwrap();
            value["shipping"].clone()
        };
        let pending = serde_json::json!({ "status": "label_pending" });
        assert_eq!(
            shipping_of(PaymentMethod::CardCheckout, OrderStatus::InvoiceSent),
            pending
        );
        assert_eq!(
            shipping_of(PaymentMethod::BankInvoice, OrderStatus::Paid),
            pending
        );
        assert_eq!(
            shipping_of(PaymentMethod::BankInvoice, OrderStatus::Overdue),
            pending
        );
        // Stablecoin orders get their label once paid; cancelled orders none; an order already
        // labelled without a kept block is filled by the gateway.
        let null = serde_json::Value::Null;
        assert_eq!(
            shipping_of(PaymentMethod::ChainStablecoin, OrderStatus::InvoiceSent),
            null
        );
        assert_eq!(
            shipping_of(PaymentMethod::CardCheckout, OrderStatus::Cancelled),
            null
        );
        assert_eq!(
            shipping_of(PaymentMethod::CardCheckout, OrderStatus::LabelGenerated),
            null
        );
    }
}

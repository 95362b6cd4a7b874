//! Order shapes: the create-order body (exactly the spec's table), the orders query, and the
//! order with its lines, charges, status history and payment block.

use super::common::{
    list_envelope, non_empty, optional_time, required_time, rfc3339, rfc3339_opt, single_envelope,
};
use super::quotes::{Charge, LineItem};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::common::{InvoiceStatus, OrderStatus};
use proto::enums::shown;
use proto::orders as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Spellings of the payment rail (documentation of `paymentMethod`).
#[derive(ToSchema)]
#[allow(dead_code, non_camel_case_types)]
pub enum PaymentMethod {
    bank_invoice,
    card_checkout,
    chain_stablecoin,
    stablecoin_erc20,
}

/// Body of `POST /orders`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateOrderRequest {
    /// The locked quote to consume.
    pub quote_id: Uuid,
    /// `bank_invoice` (default rail), `card_checkout`, `chain_stablecoin` (alias `stablecoin_erc20`).
    #[schema(value_type = PaymentMethod)]
    pub payment_method: String,
    /// Must be `true`.
    pub confirm: bool,
    /// Self-custodied sender address for the stablecoin rail.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub expected_payer_address: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 120)]
    pub client_reference: Option<String>,
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub notes: Option<String>,
    /// Default `true`.
    #[serde(default)]
    pub publish_raw_data: Option<bool>,
    #[serde(default)]
    pub billing_address_id: Option<Uuid>,
    #[serde(default)]
    pub shipping_address_id: Option<Uuid>,
    /// Lot numbers and matrix notes of quoted compounds (a unique subset of the quote's compounds).
    #[serde(default)]
    #[schema(max_items = 50)]
    pub sample_metadata: Option<Vec<SampleMetadata>>,
}

/// Lot number and matrix notes of one quoted compound; one of the two is required.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SampleMetadata {
    /// Exact, case-sensitive match to a compound of the quote.
    #[schema(min_length = 1, max_length = 200)]
    pub compound_name: String,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub lot_number: Option<String>,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub matrix_notes: Option<String>,
}

impl From<CreateOrderRequest> for pb::CreateOrderRequest {
    fn from(body: CreateOrderRequest) -> Self {
        Self {
            quote_id: body.quote_id.to_string(),
            payment_method: body.payment_method,
            confirm: body.confirm,
            expected_payer_address: body.expected_payer_address,
            client_reference: body.client_reference,
            notes: body.notes,
            publish_raw_data: body.publish_raw_data,
            billing_address_id: body.billing_address_id.map(|id| id.to_string()),
            shipping_address_id: body.shipping_address_id.map(|id| id.to_string()),
            sample_metadata: body
                .sample_metadata
                .unwrap_or_default()
                .into_iter()
                .map(|item| pb::SampleMetadata {
                    compound_name: item.compound_name,
                    lot_number: item.lot_number,
                    matrix_notes: item.matrix_notes,
                })
                .collect(),
        }
    }
}

/// Query of `GET /orders`.
#[derive(Deserialize, IntoParams, Debug, Default)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OrdersQuery {
    /// Only orders in this status.
    pub status: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i32>,
    pub cursor: Option<String>,
}

/// A laboratory order.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub id: String,
    /// Public order number (`ORD-…`).
    pub order_number: String,
    pub quote_id: String,
    /// `invoice_sent`, `overdue`, `paid`, `label_generated`, `in_transit`, `sample_received`,
    /// `in_lab`, `reporting`, `completed` or `cancelled`.
    pub status: String,
    pub status_history: Vec<StatusChange>,
    pub payment_method: String,
    pub catalog_revision: String,
    pub category_id: String,
    pub turnaround: String,
    pub conformity_samples: i64,
    pub lines: Vec<OrderLine>,
    pub charges: Vec<Charge>,
    pub total_cents: i64,
    pub currency: String,
    /// Payment block (invoice as last known); `null` until an invoice exists.
    pub payment: Option<OrderPayment>,
    /// Shipping block: the prepaid inbound label, tracking, ship-to address and packing steps
    /// (as `GET /shipments/{reference}/label`). Card and bank orders are ship-first: their
    /// label is bought while `POST /orders` answers, so the block is there from the start;
    /// only when the carrier is slow is it `{"status":"label_pending"}` until
    /// `shipment.label_created` (moments later). Stablecoin orders show `null` until their
    /// payment settles; cancelled orders without a label and listings show `null`.
    pub shipping: Option<OrderShipping>,
    pub publish_raw_data: bool,
    pub client_reference: Option<String>,
    pub notes: Option<String>,
    pub expected_payer_address: Option<String>,
    pub billing_address_id: Option<String>,
    pub shipping_address_id: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
    /// Payment state apart from the physical progress: `unpaid` or `paid`. Card and bank orders
    /// are ship-first: their samples may be received and tested before payment, which gates only
    /// the release of COAs.
    pub payment_state: String,
    /// Accession numbers of the received samples (each also finds this order).
    pub accession_numbers: Vec<String>,
    /// The order's related resources, as paths relative to `/api/v1/agent`.
    pub related: OrderRelated,
    /// Stablecoin rail: the exact amount to send (`atomic`, `decimal` with exactly six decimals,
    /// `referenceAtomic`), the no-rounding notice, token, target, payer and expiry, as issued with
    /// the order; `null` on the other rails. The live state of the request:
    /// `GET /payments/stablecoin/{reference}`.
    pub amount: Option<super::stablecoin::StablecoinAmount>,
    /// The latest cancellation request (`POST /orders/{reference}/cancel-request`) and what
    /// staff decided; `null` when none was filed.
    pub cancellation: Option<CancellationRequest>,
    /// Add-on tests ordered on the retained samples (`POST /orders/{reference}/addons`),
    /// oldest first, each with its supplementary invoice and where it stands.
    pub addons: Vec<OrderAddon>,
}

/// An order's `shipping` block: the label, or the pending block of a card or bank order whose
/// label is still being bought.
#[derive(Serialize, ToSchema, Debug)]
#[serde(untagged)]
pub enum OrderShipping {
    Label(Box<super::shipping::Label>),
    Pending(PendingShipping),
}

/// The shipping block of a card or bank order while its label is being bought (the carrier did
/// not answer within the order's wait); `shipment.label_created` follows and the order's next
/// read shows the label.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PendingShipping {
    pub status: PendingShippingStatus,
}

/// The status of a pending shipping block (one value, so that no label matches it).
#[derive(Serialize, ToSchema, Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum PendingShippingStatus {
    LabelPending,
}

/// Body of `POST /orders/{reference}/addons`.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddonRequestBody {
    /// The order line whose retained sample the tests run on.
    pub line_number: i32,
    /// Catalog test ids (tests, not bundles), 1 to 20, each once, not already on the line.
    #[schema(min_items = 1, max_items = 20)]
    pub test_ids: Vec<String>,
    /// `false` or absent: a priced preview, nothing stored. `true`: order the add-on (needs
    /// `Idempotency-Key`).
    #[serde(default)]
    pub confirm: bool,
}

/// One priced test of an add-on.
#[derive(Serialize, ToSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AddonTest {
    pub test_id: String,
    pub name: String,
    /// Price in the order's catalog revision, in cents.
    pub price_cents: i64,
}

/// Add-on tests on the retained sample of one order line (docs/order-states.md, "Add-ons").
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderAddon {
    /// `null` in a preview.
    pub id: Option<String>,
    pub line_number: i32,
    /// The sample the tests run on.
    pub accession_number: String,
    /// `preview`, `pending_payment`, `paid` (on the lab's list), `in_testing`, `reported` (a
    /// COA reporting every test is published) or `cancelled` (unpaid when its order was
    /// cancelled: its invoice is void, the tests never run).
    pub status: String,
    pub tests: Vec<AddonTest>,
    pub total_cents: i64,
    pub currency: String,
    /// The catalog revision the tests were priced from (the order's).
    pub catalog_revision: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub requested_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub paid_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub reported_at: Option<DateTime<Utc>>,
    /// The supplementary invoice on the order's rail (bank instructions, or the card's own
    /// `hostedUrl`); `null` in a preview.
    pub invoice: Option<OrderPayment>,
}

impl From<pb::Addon> for OrderAddon {
    fn from(addon: pb::Addon) -> Self {
        Self {
            id: non_empty(addon.id),
            line_number: addon.line_number,
            accession_number: addon.accession_number,
            status: addon.status,
            tests: addon
                .tests
                .into_iter()
                .map(|test| AddonTest {
                    test_id: test.test_id,
                    name: test.name,
                    price_cents: test.price_cents,
                })
                .collect(),
            total_cents: addon.total_cents,
            currency: addon.currency,
            catalog_revision: addon.catalog_revision,
            requested_at: optional_time(addon.requested_at.as_ref()),
            paid_at: optional_time(addon.paid_at.as_ref()),
            reported_at: optional_time(addon.reported_at.as_ref()),
            invoice: addon.invoice.map(OrderPayment::from),
        }
    }
}

single_envelope!(AddonEnvelope, AddonData, addon: OrderAddon);

/// A request to cancel an order, which a human decides (docs/order-states.md, "Cancellation").
#[derive(Serialize, ToSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CancellationRequest {
    pub id: String,
    /// `pending`, `approved` (the order is `cancelled`) or `declined` (the order goes on).
    pub status: String,
    /// The reason given with the request, as written.
    pub reason: String,
    #[serde(serialize_with = "rfc3339")]
    pub requested_at: DateTime<Utc>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub decided_at: Option<DateTime<Utc>>,
    /// What staff wrote with the decision; `null` while pending.
    pub note: Option<String>,
    /// Approved: what the customer still owes for the cancelled order, in cents (0 before the
    /// sample is received; after receipt, the charge for work already done). Payments above it
    /// are refunded and an unpaid invoice is voided. `null` unless approved.
    pub charge_cents: Option<i64>,
}

impl TryFrom<pb::CancelRequest> for CancellationRequest {
    type Error = ApiError;

    fn try_from(request: pb::CancelRequest) -> Result<Self, ApiError> {
        let approved = request.status == "approved";
        Ok(Self {
            requested_at: required_time(request.requested_at.as_ref(), "cancellation requestedAt")?,
            decided_at: optional_time(request.decided_at.as_ref()),
            note: non_empty(request.note),
            charge_cents: approved.then_some(request.charge_cents),
            id: request.id,
            status: request.status,
            reason: request.reason,
        })
    }
}

/// Body of `POST /orders/{reference}/cancel-request`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelRequestBody {
    /// Why the order should be cancelled, 1 to 2000 characters (shown to staff as written).
    #[schema(min_length = 1, max_length = 2000)]
    pub reason: String,
    /// Must be `true`: the caller confirms it wants the order cancelled.
    pub confirm: bool,
}

single_envelope!(CancellationEnvelope, CancellationData, cancel_request: CancellationRequest);

/// Paths of an order's related resources.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderRelated {
    pub samples: String,
    pub custody: String,
    pub eta: String,
    /// Published COAs of the order.
    pub results: String,
    /// The invoice; `null` until one exists.
    pub invoice: Option<String>,
}

single_envelope!(OrderEnvelope, OrderData, order: Order);
list_envelope!(OrderList, Order);

impl TryFrom<pb::Order> for Order {
    type Error = ApiError;

    fn try_from(order: pb::Order) -> Result<Self, ApiError> {
        Ok(Self {
            created_at: required_time(order.created_at.as_ref(), "order createdAt")?,
            updated_at: required_time(order.updated_at.as_ref(), "order updatedAt")?,
            status_history: order
                .status_history
                .into_iter()
                .map(StatusChange::try_from)
                .collect::<Result<_, _>>()?,
            related: OrderRelated {
                samples: format!("/orders/{}/samples", order.id),
                custody: format!("/orders/{}/custody", order.id),
                eta: format!("/orders/{}/eta", order.id),
                results: format!("/results?orderId={}", order.id),
                invoice: order
                    .payment
                    .as_ref()
                    .map(|payment| format!("/invoices/{}", payment.invoice_number)),
            },
            payment_state: order.payment_state,
            accession_numbers: order.accession_numbers,
            payment: order.payment.map(OrderPayment::from),
            amount: order.amount.map(super::stablecoin::StablecoinAmount::from),
            cancellation: order
                .cancellation
                .map(CancellationRequest::try_from)
                .transpose()?,
            addons: order.addons.into_iter().map(OrderAddon::from).collect(),
            shipping: None,
            id: order.id,
            order_number: order.order_number,
            quote_id: order.quote_id,
            status: shown::<OrderStatus>(order.status, order.legacy_status),
            payment_method: shown::<proto::common::PaymentMethod>(
                order.payment_method,
                order.legacy_payment_method,
            ),
            catalog_revision: order.catalog_revision,
            category_id: order.category_id,
            turnaround: order.turnaround,
            conformity_samples: order.conformity_samples,
            lines: order.lines.into_iter().map(OrderLine::from).collect(),
            charges: order.charges.into_iter().map(charge).collect(),
            total_cents: order.total_cents,
            currency: order.currency,
            publish_raw_data: order.publish_raw_data,
            client_reference: order.client_reference,
            notes: order.notes,
            expected_payer_address: order.expected_payer_address,
            billing_address_id: order.billing_address_id,
            shipping_address_id: order.shipping_address_id,
        })
    }
}

/// One sample line of an order.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderLine {
    pub line_number: i32,
    pub compound_name: String,
    pub lot_number: Option<String>,
    pub matrix_notes: Option<String>,
    pub items: Vec<LineItem>,
    pub subtotal_cents: i64,
}

impl From<pb::OrderLine> for OrderLine {
    fn from(line: pb::OrderLine) -> Self {
        Self {
            line_number: line.line_number,
            compound_name: line.compound_name,
            lot_number: line.lot_number,
            matrix_notes: line.matrix_notes,
            items: line
                .items
                .into_iter()
                .map(|item| LineItem {
                    item_id: item.item_id,
                    kind: item.kind,
                    name: item.name,
                    price_cents: item.price_cents,
                    test_ids: item.test_ids,
                })
                .collect(),
            subtotal_cents: line.subtotal_cents,
        }
    }
}

fn charge(charge: pb::OrderCharge) -> Charge {
    Charge {
        kind: charge.kind,
        description: charge.description,
        quantity: charge.quantity,
        unit_price_cents: charge.unit_price_cents,
        amount_cents: charge.amount_cents,
    }
}

/// One entry of the status history, oldest first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusChange {
    /// `null` for the first entry.
    pub from_status: Option<String>,
    pub to_status: String,
    #[serde(serialize_with = "rfc3339")]
    pub changed_at: DateTime<Utc>,
    pub reason: Option<String>,
}

impl TryFrom<pb::StatusChange> for StatusChange {
    type Error = ApiError;

    fn try_from(change: pb::StatusChange) -> Result<Self, ApiError> {
        Ok(Self {
            changed_at: required_time(change.changed_at.as_ref(), "status change time")?,
            from_status: non_empty(shown::<OrderStatus>(
                change.from_status,
                change.legacy_from_status,
            )),
            to_status: shown::<OrderStatus>(change.to_status, change.legacy_to_status),
            reason: non_empty(change.reason),
        })
    }
}

/// Replaces the value of the order document's `"hostedUrl"` with `null` (no JSON parsed: the key
/// can only appear as a key, a quote inside a string value being escaped). Returns where the
/// value started and how many bytes shorter the document became; `None` when it has no link.
pub fn blank_hosted_url(json: &mut Vec<u8>) -> Option<(usize, usize)> {
    const KEY: &[u8] = b"\"hostedUrl\":\"";
    let start = json.windows(KEY.len()).position(|window| window == KEY)? + KEY.len() - 1;
    let mut end = start + 1;
    while end < json.len() {
        match json[end] {
            b'\\' => end += 2,
            b'"' => break,
            _ => end += 1,
        }
    }
    if end >= json.len() {
        return None;
    }
    json.splice(start..=end, b"null".iter().copied());
    Some((start, end + 1 - start - 4))
}

#[cfg(test)]
mod blank_hosted_url_tests {
    use super::blank_hosted_url;

    #[test]
    fn the_pay_link_becomes_null_and_the_rest_of_the_document_stays() {
        let mut json = br#"{"clientReference":"say \"hostedUrl\":\"x","payment":{"hostedUrl":"https://lab.example.com/pay/abc","status":"open"},"shipping":null}"#.to_vec();
        let before = json.len();
        let (at, removed) = blank_hosted_url(&mut json).expect("a link");
        let text = String::from_utf8(json.clone()).unwrap();
        assert_eq!(
            text,
            r#"{"clientReference":"say \"hostedUrl\":\"x","payment":{"hostedUrl":null,"status":"open"},"shipping":null}"#
        );
        assert_eq!(before - removed, json.len());
        assert_eq!(&json[at..at + 4], b"null");
        assert!(serde_json::from_slice::<serde_json::Value>(&json).is_ok());
        let mut none = br#"{"payment":{"hostedUrl":null}}"#.to_vec();
        assert_eq!(blank_hosted_url(&mut none), None);
    }
}

/// The payment block of an order: its invoice as last known.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderPayment {
    pub invoice_id: String,
    pub invoice_number: String,
    pub status: String,
    pub amount_due_cents: i64,
    #[serde(serialize_with = "rfc3339_opt")]
    pub due_at: Option<DateTime<Utc>>,
    /// Bank transfer instructions (bank rail), else `null`.
    pub bank_instructions: Option<BankInstructions>,
    /// Card rail: the hosted checkout link issued with the order (single use, locked to the
    /// amount, expiring with the quote), else `null`. `POST /payments/prepare` mints a fresh one
    /// after expiry; this field keeps the link issued at order time. Shown only to keys holding
    /// `payments:read` or `payments:write` (the link takes a payment): `null` for any other key.
    pub hosted_url: Option<String>,
    /// When `hostedUrl` expires, else `null`.
    #[serde(serialize_with = "rfc3339_opt")]
    pub checkout_expires_at: Option<DateTime<Utc>>,
}

impl From<pb::OrderPayment> for OrderPayment {
    fn from(payment: pb::OrderPayment) -> Self {
        Self {
            due_at: optional_time(payment.due_at.as_ref()),
            checkout_expires_at: optional_time(payment.checkout_expires_at.as_ref()),
            hosted_url: payment.hosted_url,
            invoice_id: payment.invoice_id,
            invoice_number: payment.invoice_number,
            status: shown::<InvoiceStatus>(payment.status, payment.legacy_status),
            amount_due_cents: payment.amount_due_cents,
            bank_instructions: payment.bank_instructions.map(|bank| BankInstructions {
                beneficiary: bank.beneficiary,
                bank_name: bank.bank_name,
                account_number: bank.account_number,
                routing_number: bank.routing_number,
                swift: bank.swift,
                reference: bank.reference,
            }),
        }
    }
}

/// Where and how to pay a bank invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BankInstructions {
    pub beneficiary: String,
    pub bank_name: String,
    pub account_number: String,
    pub routing_number: String,
    pub swift: String,
    /// Put this in the transfer's remittance information.
    pub reference: String,
}

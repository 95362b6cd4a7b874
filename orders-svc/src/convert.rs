//! Conversions between protobuf messages (own API, catalog-svc's quote, payments-svc's invoice
//! and stream events) and the domain. Kept out of `domain/` so that it stays transport-free.

use crate::domain::cancellation::CancelRequest;
use crate::domain::order::{
    BankInstructions, Charge, InvoiceLine, InvoiceNews, LineItem, Order, OrderLine, PaymentSummary,
    SampleRequirement, StablecoinRequest, StatusChange,
};
use crate::domain::quote::{Quote, QuoteLine};
use crate::domain::request::{UncheckedOrderRequest, UncheckedSampleMetadata};
use crate::domain::sample::{Sample, UncheckedReceipt};
use crate::domain::sample_items::SampleItem;
use crate::repo::samples::CustodyRow;
use platform::error::ApiError;
use platform::money::Cents;
use platform::time::{from_timestamp, to_timestamp, to_timestamp_opt};
use proto::enums::or_legacy;
use proto::events::event_envelope::Data;
use proto::{catalog, orders, payments};
use uuid::Uuid;

impl From<orders::CreateOrderRequest> for UncheckedOrderRequest {
    fn from(request: orders::CreateOrderRequest) -> Self {
        Self {
            quote_id: request.quote_id,
            payment_method: request.payment_method,
            confirm: request.confirm,
            expected_payer_address: request.expected_payer_address,
            client_reference: request.client_reference,
            notes: request.notes,
            publish_raw_data: request.publish_raw_data,
            billing_address_id: request.billing_address_id,
            shipping_address_id: request.shipping_address_id,
            sample_metadata: request
                .sample_metadata
                .into_iter()
                .map(|item| UncheckedSampleMetadata {
                    compound_name: item.compound_name,
                    lot_number: item.lot_number,
                    matrix_notes: item.matrix_notes,
                })
                .collect(),
        }
    }
}

impl TryFrom<catalog::Quote> for Quote {
    type Error = ApiError;

    /// Reads catalog-svc's quote; a malformed one is an internal error (a peer bug).
    fn try_from(quote: catalog::Quote) -> Result<Self, ApiError> {
        let uuid = |field: &str, value: &str| {
            Uuid::parse_str(value)
                .map_err(|_| ApiError::internal(format!("catalog quote {field} {value:?} is not a uuid")))
        };
        let expires_at = quote
            .expires_at
            .as_ref()
            .and_then(from_timestamp)
            .ok_or_else(|| ApiError::internal("catalog quote has no valid expires_at"))?;
        Ok(Quote {
            id: uuid("id", &quote.id)?,
            customer_id: uuid("customer_id", &quote.customer_id)?,
            catalog_revision: quote.catalog_revision,
            category_id: quote.category_id,
            turnaround: quote.turnaround,
            turnaround_business_days: quote.turnaround_business_days,
            conformity_samples: quote.conformity_samples,
            lines: quote
                .lines
                .into_iter()
                .map(|line| QuoteLine {
                    line_number: line.line_number,
                    compound_name: line.compound_name,
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
                    subtotal: Cents(line.subtotal_cents),
                    sample_requirements: line
                        .sample_requirements
                        .into_iter()
                        .map(|req| SampleRequirement {
                            container: req.container,
                            amount: req.amount,
                            notes: req.notes,
                        })
                        .collect(),
                })
                .collect(),
            charges: quote
                .charges
                .into_iter()
                .map(|charge| Charge {
                    kind: charge.kind,
                    description: charge.description,
                    quantity: charge.quantity,
                    unit_price: Cents(charge.unit_price_cents),
                    amount: Cents(charge.amount_cents),
                })
                .collect(),
            total: Cents(quote.total_cents),
            currency: quote.currency,
            expires_at,
        })
    }
}

impl From<&payments::Invoice> for PaymentSummary {
    fn from(invoice: &payments::Invoice) -> Self {
        PaymentSummary {
            invoice_id: invoice.id.clone(),
            invoice_number: invoice.invoice_number.clone(),
            status: or_legacy(invoice.status, &invoice.legacy_status),
            amount_due: Cents(invoice.amount_due_cents),
            due_at: invoice.due_at.as_ref().and_then(from_timestamp),
            bank_instructions: invoice.bank_instructions.as_ref().map(|bank| BankInstructions {
                beneficiary: bank.beneficiary.clone(),
                bank_name: bank.bank_name.clone(),
                account_number: bank.account_number.clone(),
                routing_number: bank.routing_number.clone(),
                swift: bank.swift.clone(),
                reference: bank.reference.clone(),
            }),
            hosted_url: invoice
                .checkout
                .as_ref()
                .map(|checkout| checkout.hosted_url.clone()),
            checkout_expires_at: invoice
                .checkout
                .as_ref()
                .and_then(|checkout| checkout.expires_at.as_ref())
                .and_then(from_timestamp),
        }
    }
}

/// Builds the CreateInvoice request of an order.
pub fn create_invoice_request(order: &Order) -> payments::CreateInvoiceRequest {
    payments::CreateInvoiceRequest {
        order_id: order.id.to_string(),
        order_number: order.order_number.clone(),
        payment_method: order.payment_method as i32,
        legacy_payment_method: order.payment_method.as_str().to_owned(),
        currency: order.currency.clone(),
        lines: order
            .invoice_lines()
            .into_iter()
            .map(payments::InvoiceLine::from)
            .collect(),
        total_cents: order.total.0,
        checkout_expires_at: to_timestamp_opt(order.quote_expires_at),
        addon_id: None,
        sandbox: order.sandbox,
    }
}

/// Builds the CreateInvoice request of an add-on's supplementary invoice: the order's rail,
/// one line per test, bound to the add-on id.
pub fn create_addon_invoice_request(
    order: &Order,
    addon: &crate::domain::addon::Addon,
    lines: &[InvoiceLine],
) -> payments::CreateInvoiceRequest {
    payments::CreateInvoiceRequest {
        order_id: order.id.to_string(),
        order_number: order.order_number.clone(),
        payment_method: order.payment_method as i32,
        legacy_payment_method: order.payment_method.as_str().to_owned(),
        currency: addon.currency.clone(),
        lines: lines.iter().cloned().map(payments::InvoiceLine::from).collect(),
        total_cents: addon.total.0,
        checkout_expires_at: None,
        addon_id: Some(addon.id.to_string()),
        sandbox: order.sandbox,
    }
}

/// The add-on id and the news of a payments-stream payload about a supplementary invoice
/// (the add-on id in the news is nil until the caller parses the first part).
pub fn addon_invoice_news(data: &Data) -> Option<(String, crate::service::AddonInvoiceNews)> {
    let news = |addon_id: &Option<String>, invoice_id: &str, invoice_number: &str, status, amount_due| {
        addon_id.as_ref().map(|addon_id| {
            (
                addon_id.clone(),
                crate::service::AddonInvoiceNews {
                    addon_id: uuid::Uuid::nil(),
                    invoice_id: invoice_id.to_owned(),
                    invoice_number: invoice_number.to_owned(),
                    status,
                    amount_due,
                },
            )
        })
    };
    match data {
        Data::PaymentConfirmed(confirmed) => news(
            &confirmed.addon_id,
            &confirmed.invoice_id,
            &confirmed.invoice_number,
            proto::common::InvoiceStatus::Paid,
            None,
        ),
        Data::InvoiceCreated(created) => news(
            &created.addon_id,
            &created.invoice_id,
            &created.invoice_number,
            or_legacy(created.status, &created.legacy_status),
            Some(Cents(created.amount_due_cents)),
        ),
        Data::InvoiceUpdated(updated) => news(
            &updated.addon_id,
            &updated.invoice_id,
            &updated.invoice_number,
            or_legacy(updated.status, &updated.legacy_status),
            Some(Cents(updated.amount_due_cents)),
        ),
        _ => None,
    }
}

impl From<&crate::domain::addon::Addon> for orders::Addon {
    fn from(addon: &crate::domain::addon::Addon) -> Self {
        orders::Addon {
            id: if addon.id.is_nil() {
                String::new()
            } else {
                addon.id.to_string()
            },
            order_id: addon.order_id.to_string(),
            order_number: addon.order_number.clone(),
            line_number: addon.line_number,
            accession_number: addon.accession_number.clone(),
            status: addon.status.as_str().to_owned(),
            tests: addon
                .tests
                .iter()
                .map(|test| orders::AddonTest {
                    test_id: test.test_id.clone(),
                    name: test.name.clone(),
                    price_cents: test.price_cents,
                })
                .collect(),
            total_cents: addon.total.0,
            currency: addon.currency.clone(),
            catalog_revision: addon.catalog_revision.clone(),
            requested_at: to_timestamp_opt(addon.requested_at),
            paid_at: to_timestamp_opt(addon.paid_at),
            reported_at: to_timestamp_opt(addon.reported_at),
            invoice: addon.invoice.as_ref().map(orders::OrderPayment::from),
        }
    }
}

impl From<InvoiceLine> for payments::InvoiceLine {
    fn from(line: InvoiceLine) -> Self {
        payments::InvoiceLine {
            description: line.description,
            quantity: line.quantity,
            unit_price_cents: line.unit_price.0,
            amount_cents: line.amount.0,
        }
    }
}

impl From<&Order> for orders::Order {
    fn from(order: &Order) -> Self {
        orders::Order {
            id: order.id.to_string(),
            order_number: order.order_number.clone(),
            customer_id: order.customer_id.to_string(),
            quote_id: order.quote_id.to_string(),
            status: order.status as i32,
            legacy_status: order.status.as_str().to_owned(),
            payment_method: order.payment_method as i32,
            legacy_payment_method: order.payment_method.as_str().to_owned(),
            catalog_revision: order.catalog_revision.clone(),
            category_id: order.category_id.clone(),
            turnaround: order.turnaround.clone(),
            conformity_samples: order.conformity_samples,
            client_reference: order.client_reference.clone(),
            notes: order.notes.clone(),
            publish_raw_data: order.publish_raw_data,
            expected_payer_address: order.expected_payer_address.clone(),
            billing_address_id: order.billing_address_id.map(|id| id.to_string()),
            shipping_address_id: order.shipping_address_id.map(|id| id.to_string()),
            lines: order.lines.iter().map(orders::OrderLine::from).collect(),
            charges: order.charges.iter().map(orders::OrderCharge::from).collect(),
            total_cents: order.total.0,
            currency: order.currency.clone(),
            status_history: order
                .status_history
                .iter()
                .map(orders::StatusChange::from)
                .collect(),
            payment: order.payment.as_ref().map(orders::OrderPayment::from),
            created_at: Some(to_timestamp(order.created_at)),
            updated_at: Some(to_timestamp(order.updated_at)),
            payment_state: order.payment_state().to_owned(),
            accession_numbers: order.accession_numbers.clone(),
            amount: order.stablecoin.as_ref().map(orders::StablecoinAmount::from),
            // The customer's view: who decided stays with staff.
            cancellation: order.cancellation.as_ref().map(|request| orders::CancelRequest {
                decided_by: String::new(),
                ..request.into()
            }),
            addons: order.addons.iter().map(orders::Addon::from).collect(),
        }
    }
}

impl From<&CancelRequest> for orders::CancelRequest {
    fn from(request: &CancelRequest) -> Self {
        orders::CancelRequest {
            id: request.id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number.clone(),
            status: request.status.as_str().to_owned(),
            reason: request.reason.clone(),
            order_status: request.order_status as i32,
            requested_at: Some(to_timestamp(request.requested_at)),
            decided_at: request.decided_at.map(to_timestamp),
            note: request.note.clone().unwrap_or_default(),
            charge_cents: request.charge_cents.unwrap_or_default(),
            decided_by: request.decided_by.clone().unwrap_or_default(),
        }
    }
}

impl From<&StablecoinRequest> for orders::StablecoinAmount {
    fn from(request: &StablecoinRequest) -> Self {
        orders::StablecoinAmount {
            atomic: request.atomic,
            decimal: request.decimal.clone(),
            reference_atomic: request.reference_atomic,
            notice: request.notice.clone(),
            chain_id: request.chain_id,
            token_address: request.token_address.clone(),
            target_address: request.target_address.clone(),
            payer_address: request.payer_address.clone(),
            expires_at: to_timestamp_opt(request.expires_at),
            request_id: request.request_id.clone(),
        }
    }
}

impl From<&payments::StablecoinPayment> for StablecoinRequest {
    fn from(payment: &payments::StablecoinPayment) -> Self {
        StablecoinRequest {
            request_id: payment.id.clone(),
            atomic: payment.amount_atomic,
            decimal: payment.amount_decimal.clone(),
            reference_atomic: payment.reference_atomic,
            notice: payment.notice.clone(),
            chain_id: payment.chain_id,
            token_address: payment.token_address.clone(),
            target_address: payment.target_address.clone(),
            payer_address: payment.payer_address.clone(),
            expires_at: payment.expires_at.as_ref().and_then(from_timestamp),
        }
    }
}

impl From<&Sample> for orders::Sample {
    fn from(sample: &Sample) -> Self {
        orders::Sample {
            accession_number: sample.accession_number.clone(),
            line_number: sample.line_number,
            compound_name: sample.compound_name.clone(),
            lot_number: sample.lot_number.clone(),
            units: sample.units,
            containers: sample.containers.clone(),
            condition: sample.condition.clone(),
            storage_location: sample.storage_location.clone(),
            received_at: Some(to_timestamp(sample.received_at)),
            received_by: sample.received_by.clone(),
            testing_started_at: to_timestamp_opt(sample.testing_started_at),
            retain_until: Some(to_timestamp(sample.retain_until)),
            test_ids: sample.test_ids.clone(),
            test_names: sample.test_names.clone(),
            disposed_at: to_timestamp_opt(sample.disposed_at),
            status: if sample.disposed_at.is_some() {
                "disposed"
            } else if sample.testing_started_at.is_some() {
                "in_testing"
            } else {
                "received"
            }
            .to_owned(),
            expected_containers: Vec::new(),
            status_history: Vec::new(),
        }
    }
}

/// One sample item of `GET /orders/{reference}/samples`: the logged sample, or the line awaiting
/// receipt, with its status, history and expected containers.
pub fn sample_item(item: &SampleItem<'_>) -> orders::Sample {
    let base = match item.sample {
        Some(sample) => orders::Sample::from(sample),
        None => orders::Sample {
            line_number: item.line.line_number,
            compound_name: item.line.compound_name.clone(),
            lot_number: item.line.lot_number.clone(),
            test_ids: crate::domain::order::line_test_ids(&item.line.items),
            test_names: item
                .line
                .items
                .iter()
                .map(|line_item| line_item.name.clone())
                .collect(),
            ..orders::Sample::default()
        },
    };
    orders::Sample {
        status: item.status.to_owned(),
        expected_containers: item.expected_containers.clone(),
        status_history: item
            .history
            .iter()
            .map(|(status, at)| orders::SampleStatusChange {
                status: (*status).to_owned(),
                at: Some(to_timestamp(*at)),
            })
            .collect(),
        ..base
    }
}

impl From<orders::SampleReceipt> for UncheckedReceipt {
    fn from(receipt: orders::SampleReceipt) -> Self {
        UncheckedReceipt {
            line_number: receipt.line_number,
            units: receipt.units,
            containers: receipt.containers,
            condition: receipt.condition,
            storage_location: receipt.storage_location,
        }
    }
}

/// One stored custody entry as the API answers it.
pub fn custody_entry((facts, previous_hash, hash): &CustodyRow) -> orders::CustodyEntry {
    orders::CustodyEntry {
        sequence: facts.sequence,
        occurred_at: Some(to_timestamp(facts.occurred_at)),
        action: facts.action.clone(),
        accession_number: facts.accession_number.clone(),
        actor: facts.actor.clone(),
        location: facts.location.clone(),
        details: facts.details.clone(),
        previous_hash: previous_hash.clone(),
        hash: hash.clone(),
    }
}

impl From<&OrderLine> for orders::OrderLine {
    fn from(line: &OrderLine) -> Self {
        orders::OrderLine {
            line_number: line.line_number,
            compound_name: line.compound_name.clone(),
            lot_number: line.lot_number.clone(),
            matrix_notes: line.matrix_notes.clone(),
            items: line
                .items
                .iter()
                .map(|item| orders::OrderLineItem {
                    item_id: item.item_id.clone(),
                    kind: item.kind.clone(),
                    name: item.name.clone(),
                    price_cents: item.price_cents,
                    test_ids: item.test_ids.clone(),
                })
                .collect(),
            subtotal_cents: line.subtotal.0,
        }
    }
}

impl From<&Charge> for orders::OrderCharge {
    fn from(charge: &Charge) -> Self {
        orders::OrderCharge {
            kind: charge.kind.clone(),
            description: charge.description.clone(),
            quantity: charge.quantity,
            unit_price_cents: charge.unit_price.0,
            amount_cents: charge.amount.0,
        }
    }
}

impl From<&StatusChange> for orders::StatusChange {
    fn from(change: &StatusChange) -> Self {
        orders::StatusChange {
            from_status: change.from.unwrap_or_default() as i32,
            legacy_from_status: change.from.unwrap_or_default().as_str().to_owned(),
            to_status: change.to as i32,
            legacy_to_status: change.to.as_str().to_owned(),
            changed_at: Some(to_timestamp(change.changed_at)),
            reason: change.reason.clone(),
        }
    }
}

impl From<&PaymentSummary> for orders::OrderPayment {
    fn from(payment: &PaymentSummary) -> Self {
        orders::OrderPayment {
            invoice_id: payment.invoice_id.clone(),
            invoice_number: payment.invoice_number.clone(),
            status: payment.status as i32,
            legacy_status: payment.status.as_str().to_owned(),
            amount_due_cents: payment.amount_due.0,
            due_at: to_timestamp_opt(payment.due_at),
            bank_instructions: payment
                .bank_instructions
                .as_ref()
                .map(|bank| orders::BankInstructions {
                    beneficiary: bank.beneficiary.clone(),
                    bank_name: bank.bank_name.clone(),
                    account_number: bank.account_number.clone(),
                    routing_number: bank.routing_number.clone(),
                    swift: bank.swift.clone(),
                    reference: bank.reference.clone(),
                }),
            hosted_url: payment.hosted_url.clone(),
            checkout_expires_at: to_timestamp_opt(payment.checkout_expires_at),
        }
    }
}

/// The order id and the news of a payments-stream payload that orders-svc applies, else `None`.
pub fn invoice_news(data: &Data) -> Option<(&str, InvoiceNews)> {
    match data {
        Data::PaymentConfirmed(confirmed) => Some((
            &confirmed.order_id,
            InvoiceNews::PaymentConfirmed {
                invoice_id: confirmed.invoice_id.clone(),
                invoice_number: confirmed.invoice_number.clone(),
            },
        )),
        Data::InvoiceCreated(created) => Some((
            &created.order_id,
            InvoiceNews::InvoiceCreated(PaymentSummary {
                invoice_id: created.invoice_id.clone(),
                invoice_number: created.invoice_number.clone(),
                status: or_legacy(created.status, &created.legacy_status),
                amount_due: Cents(created.amount_due_cents),
                due_at: chrono::DateTime::parse_from_rfc3339(&created.due_at)
                    .ok()
                    .map(|at| at.to_utc()),
                bank_instructions: None,
                hosted_url: None,
                checkout_expires_at: None,
            }),
        )),
        Data::InvoiceUpdated(updated) => Some((
            &updated.order_id,
            InvoiceNews::InvoiceUpdated {
                invoice_id: updated.invoice_id.clone(),
                invoice_number: updated.invoice_number.clone(),
                status: or_legacy(updated.status, &updated.legacy_status),
                amount_due: Cents(updated.amount_due_cents),
            },
        )),
        _ => None,
    }
}

/// The answer of GetEta.
pub fn eta_response(order: &Order, eta: &crate::domain::eta::Eta) -> orders::GetEtaResponse {
    orders::GetEtaResponse {
        order: Some(order.into()),
        stages: eta
            .stages
            .iter()
            .map(|stage| orders::EtaStage {
                stage: stage.stage.to_owned(),
                state: stage.state.to_owned(),
                at: to_timestamp_opt(stage.at),
                estimated_at: to_timestamp_opt(stage.estimated_at),
            })
            .collect(),
        estimated_completion: to_timestamp_opt(eta.estimated_completion),
        turnaround_business_days: order.turnaround_business_days,
        basis: eta.basis.clone(),
    }
}

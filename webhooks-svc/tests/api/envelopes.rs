//! Event envelopes as the domain services' relays publish them.

use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use uuid::Uuid;

/// A W3C traceparent with a random trace id.
pub fn traceparent() -> String {
    format!(
        "00-{}-{}-01",
        Uuid::new_v4().simple(),
        &Uuid::new_v4().simple().to_string()[..16]
    )
}

/// An envelope of `event_type` for `customer` carrying `data`.
pub fn envelope(customer: Uuid, event_type: &str, data: Data) -> EventEnvelope {
    let id = Uuid::now_v7();
    EventEnvelope {
        id: id.to_string(),
        r#type: event_type.to_owned(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer.to_string(),
        // `publish` stamps the owner of the stream it writes, as the domain's relay does.
        source: String::new(),
        subject_id: id.to_string(),
        traceparent: traceparent(),
        tracestate: String::new(),
        schema_version: 1,
        data: Some(data),
    }
}

/// `order.created` for a new order of `customer`.
pub fn order_created(customer: Uuid) -> EventEnvelope {
    let order_id = Uuid::now_v7().to_string();
    envelope(
        customer,
        "order.created",
        Data::OrderCreated(proto::orders::OrderCreated {
            order_number: format!("ORD-{}", &order_id[30..]),
            order_id,
            status: proto::common::OrderStatus::InvoiceSent as i32,
            payment_method: proto::common::PaymentMethod::BankInvoice as i32,
            currency: "USD".into(),
            total_cents: 12_500,
            ..Default::default()
        }),
    )
}

/// `coa.published` for `customer`.
pub fn coa_published(customer: Uuid) -> EventEnvelope {
    envelope(
        customer,
        "coa.published",
        Data::CoaPublished(proto::results::CoaPublished {
            test_ids: Vec::new(),
            coa_id: Uuid::now_v7().to_string(),
            submission_id: "SUB-1".into(),
            accession_number: "ACC-2026-0001".into(),
            compound: "Caffeine".into(),
            lot_number: Some("LOT-7".into()),
            order_id: Uuid::now_v7().to_string(),
            order_number: "ORD-1".into(),
            published_at: platform::time::rfc3339(platform::time::now()),
            version: 1,
            amends_coa_id: None,
        }),
    )
}

//! Card checkout settlement: card orders paid one after the other on their hosted page with the
//! sandbox's success card. Each timed request is the whole settlement (the charge, the payment
//! record, the invoice `paid` with its previous status and `invoice.updated` in the outbox, in
//! one transaction under the session's row lock); the quote and the order before it are not
//! timed. A PSP's webhook settles through the same code after its signature check.

use crate::machine;
use crate::report::Row;
use crate::seed::Bench;
use serde_json::json;
use std::time::Instant;

/// Settles `payments` card orders and returns the row of their pay requests.
pub async fn settlement_row(bench: &Bench, payments: u32) -> anyhow::Result<Row> {
    let mut latencies = Vec::with_capacity(payments as usize);
    let mut errors = 0;
    let before = machine::sample();
    let started = Instant::now();
    for index in 0..payments {
        let quote = bench.post("/quotes", &bench.quote_body, None).await?;
        let body = json!({
            "quoteId": quote["data"]["quote"]["id"],
            "paymentMethod": "card_checkout",
            "confirm": true,
        });
        let order = bench
            .post("/orders", &body, Some(&format!("bench-card-{index}")))
            .await?;
        let hosted_url = order["data"]["order"]["payment"]["hostedUrl"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let form = [
            ("card_number", "4242424242424242"),
            ("exp_month", "12"),
            ("exp_year", "2034"),
            ("cvc", "123"),
        ];
        let sent = Instant::now();
        let answer = bench.http.post(&hosted_url).form(&form).send().await?;
        let ok = answer.status().is_success() && answer.text().await?.contains("data-outcome=\"paid\"");
        latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
        if !ok {
            errors += 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let usage = machine::sample().usage_since(&before);
    latencies.sort_by(f64::total_cmp);
    let percentile = |share: f64| {
        let index = ((latencies.len() as f64 - 1.0) * share).round() as usize;
        latencies.get(index).copied().unwrap_or_default()
    };
    Ok(Row {
        label: "POST /pay/{id} (card settlement) ×1".to_owned(),
        unit: "payments/s",
        rate: f64::from(payments) / elapsed.max(1e-9),
        count: f64::from(payments),
        p50_ms: Some(percentile(0.50)),
        p99_ms: Some(percentile(0.99)),
        average_ms: None,
        errors,
        usage,
        database_cpu_seconds: None,
    })
}

//! Label rendering benchmark: renders the 4×6 in label (PDF + Code128) N times and prints p50,
//! p99 and max. `cargo run -p shipping-svc --example label_bench [-- --release] [N]`; the
//! figures go to `docs/performance.md`, and `--max-p99-ms <ms>` makes it a regression check.

use shipping_svc::config::default_lab_address;
use shipping_svc::domain::packing::{Requirement, SampleLine, packing_steps};
use shipping_svc::domain::tracking::tracking_number;
use shipping_svc::label::{LabelContent, render};
use shipping_svc::service::labels::ship_from;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: usize = args.first().and_then(|text| text.parse().ok()).unwrap_or(2_000);
    let max_p99_ms: Option<f64> = args
        .iter()
        .position(|arg| arg == "--max-p99-ms")
        .and_then(|index| args.get(index + 1))
        .and_then(|text| text.parse().ok());
    let requirement = |test: &str, container: &str, amount: &str| Requirement {
        test_id: test.to_owned(),
        container: container.to_owned(),
        amount: amount.to_owned(),
        notes: "Ship sealed and unopened.".to_owned(),
    };
    let lines: Vec<SampleLine> = (1..=3)
        .map(|line| SampleLine {
            line_number: line,
            compound_name: format!("Compound {line}"),
            requirements: vec![
                requirement("hplc-purity", "2 mL amber glass vial", "5 mg"),
                requirement("lcms-identity", "2 mL amber glass vial", "2 mg"),
                requirement("endotoxin-lal", "Sterile, depyrogenated glass vial", "10 mg"),
            ],
        })
        .collect();
    let steps = packing_steps("ORD-2026-000123", &lines);
    let from = ship_from("Acme Peptides", "lab@acme.example", None);
    let to = default_lab_address();
    let samples: Vec<(String, String)> = lines
        .iter()
        .map(|line| {
            (
                format!("ORD-2026-000123-L{}", line.line_number),
                line.compound_name.clone(),
            )
        })
        .collect();
    let mut timings = Vec::with_capacity(count);
    let mut bytes = 0;
    for index in 0..count {
        let tracking = tracking_number("LAB001", "03", index as u32);
        let content = LabelContent {
            carrier_name: "UPS",
            service_name: "Ground",
            tracking_number: &tracking,
            ship_from: &from,
            ship_to: &to,
            order_number: "ORD-2026-000123",
            samples: samples.clone(),
            packing_steps: &steps,
        };
        let started = Instant::now();
        let pdf = render(&content).expect("the label renders");
        timings.push(started.elapsed());
        bytes = pdf.len();
    }
    timings.sort();
    let at = |quantile: f64| timings[((timings.len() as f64 * quantile) as usize).min(timings.len() - 1)];
    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    println!(
        "labels: {count}, PDF {bytes} bytes, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(at(0.50)),
        ms(at(0.99)),
        ms(*timings.last().unwrap())
    );
    if let Some(limit) = max_p99_ms {
        assert!(
            ms(at(0.99)) <= limit,
            "p99 {:.2} ms is over {limit} ms",
            ms(at(0.99))
        );
    }
}

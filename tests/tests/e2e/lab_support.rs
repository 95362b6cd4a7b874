//! Helpers of the lab flows: two lab operators (an analyst who receives, tests and records, and
//! a QA officer: four eyes), walking an order to submitted results, and reading COAs.

use platform::testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tests::Sandbox;

/// Credentials of the two operators of a lab flow.
pub struct LabStaff {
    /// lab.technician and lab.analyst: receives samples, starts testing, records and submits.
    pub analyst: String,
    /// lab.qa: approves, sends back, publishes, retracts, amends.
    pub qa: String,
}

/// Registers the analyst `ana` and the QA officer `quinn`.
pub async fn lab_staff(sandbox: &Sandbox) -> LabStaff {
    let create = |name: &'static str, roles: &'static str| async move {
        let created = sandbox
            .labctl(&["operators", "create", name, "--roles", roles])
            .await
            .unwrap();
        created["credential"].as_str().unwrap().to_owned()
    };
    LabStaff {
        analyst: create("ana", "lab.technician,lab.analyst").await,
        qa: create("quinn", "lab.qa").await,
    }
}

/// Receives every line of `order` (one sample per line) and starts testing; returns the samples.
pub async fn receive_and_start(sandbox: &Sandbox, staff: &LabStaff, order: &str, lines: usize) -> Vec<Value> {
    let samples: Vec<String> = (1..=lines)
        .map(|line| format!("{line}:2:intact:FRZ-1/A{line}:2 x 2 mL amber vial"))
        .collect();
    let mut args = vec![
        "samples",
        "receive",
        "--order",
        order,
        "--tracking",
        "1Z999AA10123456784",
    ];
    for sample in &samples {
        args.extend(["--sample", sample.as_str()]);
    }
    let received = sandbox.labctl_as(&staff.analyst, &args).await.unwrap();
    assert_eq!(received["status"], "sample_received", "{received}");
    let started = sandbox
        .labctl_as(&staff.analyst, &["samples", "start-testing", "--order", order])
        .await
        .unwrap();
    assert_eq!(started["status"], "in_lab", "{started}");
    received["samples"].as_array().unwrap().clone()
}

/// Passing results for every test of `sample`.
pub fn passing_rows(sample: &Value) -> String {
    let rows: Vec<Value> = sample["testIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|test| {
            json!({
                "analyte": format!("{} assay", test.as_str().unwrap()), "testId": test, "value": "99.2",
                "unit": "%", "loq": "0.05", "specification": ">= 98.0", "outcome": "pass",
                "method": "HPLC-UV (USP <621>)", "instrument": "HPLC-02",
            })
        })
        .collect();
    Value::Array(rows).to_string()
}

/// Records passing results of `accession` as the analyst (waiting until results-svc has learned
/// of the sample from orders-svc's events) and submits them.
pub async fn record_and_submit(sandbox: &Sandbox, staff: &LabStaff, sample: &Value) {
    let accession = sample["accessionNumber"].as_str().unwrap();
    let rows = passing_rows(sample);
    wait_for(
        "results-svc to know the tested sample",
        Duration::from_secs(20),
        || async {
            sandbox
                .labctl_as(
                    &staff.analyst,
                    &[
                        "results",
                        "record",
                        "--accession",
                        accession,
                        "--results-json",
                        &rows,
                    ],
                )
                .await
                .ok()
        },
    )
    .await;
    let submitted = sandbox
        .labctl_as(&staff.analyst, &["results", "submit", "--accession", accession])
        .await
        .unwrap();
    assert_eq!(submitted["status"], "submitted");
}

/// Approves and publishes `accession` as QA; returns the COA as labctl shows it.
pub async fn approve_and_publish(sandbox: &Sandbox, staff: &LabStaff, accession: &str) -> Value {
    let approved = sandbox
        .labctl_as(&staff.qa, &["results", "approve", "--accession", accession])
        .await
        .unwrap();
    assert_eq!(approved["status"], "approved");
    sandbox
        .labctl_as(&staff.qa, &["results", "publish", "--accession", accession])
        .await
        .unwrap()
}

/// Pays a bank order in full as the sandbox's operator.
pub async fn pay(sandbox: &Sandbox, invoice: &str, total: &str, reference: &str) {
    crate::support::record_bank_payment(sandbox, invoice, total, reference).await;
}

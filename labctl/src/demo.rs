//! `labctl demo --order ORD-…`: walks an order through the lab with plausible results generated
//! from the catalog's tests, as two operators (four eyes): the operator running the command
//! receives the samples, starts testing, records and submits the results; the QA operator
//! (`--qa-credential`) approves and publishes. A COA of an unpaid order is held until payment.

use crate::Connection;
use crate::client::{request, staff_token, status_error};
use crate::lab::{coa_json, orders_client, results_client, sample_json};
use platform::mesh;
use platform::principal::roles;
use proto::results::{AccessionRequest, AnalyteResult, RecordResultsRequest};
use serde_json::{Value, json};
use std::time::Duration;

/// How long the demo waits for results-svc to learn of the received samples.
const SAMPLE_WAIT: Duration = Duration::from_secs(30);

/// A small deterministic generator so that one accession always gets the same results.
pub(crate) struct Dice(u64);

impl Dice {
    fn new(seed: &str) -> Self {
        Self(seed.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
        }))
    }

    /// A number in `low..=high` with `decimals` decimals, as text.
    fn decimal(&mut self, low: f64, high: f64, decimals: usize) -> String {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        format!("{:.*}", decimals, low + (high - low) * unit)
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    analyte: &str,
    test_id: &str,
    value: Option<String>,
    qualifier: Option<&str>,
    unit: &str,
    loq: Option<&str>,
    specification: Option<&str>,
    method: &str,
    instrument: &str,
) -> AnalyteResult {
    AnalyteResult {
        analyte: analyte.to_owned(),
        test_id: test_id.to_owned(),
        value,
        qualifier: qualifier.map(str::to_owned),
        unit: unit.to_owned(),
        loq: loq.map(str::to_owned),
        lod: None,
        outcome: specification.map(|_| "pass".to_owned()),
        specification: specification.map(str::to_owned),
        method: method.to_owned(),
        instrument: instrument.to_owned(),
        analyst: String::new(),
        measured_at: None,
    }
}

/// Plausible rows for one catalog test (all within specification).
pub(crate) fn plausible_rows(test_id: &str, test_name: &str, dice: &mut Dice) -> Vec<AnalyteResult> {
    let key = format!("{test_id} {}", test_name.to_lowercase());
    let has = |word: &str| key.contains(word);
    if has("identity") || has("nmr") {
        return vec![row(
            "Identity",
            test_id,
            None,
            Some("detected"),
            "n/a",
            None,
            Some("conforms to reference"),
            test_name,
            "LCMS-QTOF-01",
        )];
    }
    if has("purity") || has("potency") {
        let value = dice.decimal(98.2, 99.8, 1);
        return vec![row(
            "Purity",
            test_id,
            Some(value),
            None,
            "%",
            Some("0.05"),
            Some(">= 98.0"),
            "HPLC-UV (USP <621>)",
            "HPLC-02",
        )];
    }
    if has("endotoxin") {
        let value = dice.decimal(0.2, 2.5, 2);
        return vec![row(
            "Bacterial endotoxins",
            test_id,
            Some(value),
            None,
            "EU/mg",
            Some("0.05"),
            Some("<= 5.0"),
            "LAL kinetic chromogenic (USP <85>)",
            "KINETIC-READER-01",
        )];
    }
    if has("metals") {
        let method = "ICP-MS (USP <233>)";
        return vec![
            row(
                "Lead (Pb)",
                test_id,
                Some(dice.decimal(0.06, 0.2, 2)),
                None,
                "ppm",
                Some("0.05"),
                Some("<= 0.5"),
                method,
                "ICPMS-01",
            ),
            row(
                "Arsenic (As)",
                test_id,
                None,
                Some("<LOQ"),
                "ppm",
                Some("0.05"),
                Some("<= 1.5"),
                method,
                "ICPMS-01",
            ),
            row(
                "Cadmium (Cd)",
                test_id,
                None,
                Some("<LOQ"),
                "ppm",
                Some("0.02"),
                Some("<= 0.5"),
                method,
                "ICPMS-01",
            ),
            row(
                "Mercury (Hg)",
                test_id,
                None,
                Some("ND"),
                "ppm",
                Some("0.02"),
                Some("<= 1.5"),
                method,
                "ICPMS-01",
            ),
        ];
    }
    if has("solvent") {
        let method = "GC-HS (USP <467>)";
        return vec![
            row(
                "Acetonitrile",
                test_id,
                Some(dice.decimal(20.0, 180.0, 0)),
                None,
                "ppm",
                Some("10"),
                Some("<= 410"),
                method,
                "GCHS-01",
            ),
            row(
                "Ethyl acetate",
                test_id,
                None,
                Some("<LOQ"),
                "ppm",
                Some("50"),
                Some("<= 5000"),
                method,
                "GCHS-01",
            ),
        ];
    }
    if has("microbial") || has("sterility") || has("pathogen") {
        return vec![
            row(
                "Total aerobic microbial count",
                test_id,
                None,
                Some("<LOQ"),
                "CFU/g",
                Some("10"),
                Some("<= 1000"),
                "USP <61>",
                "INCUBATOR-02",
            ),
            row(
                "Escherichia coli",
                test_id,
                None,
                Some("not_detected"),
                "in 10 g",
                None,
                Some("absent"),
                "USP <62>",
                "INCUBATOR-02",
            ),
        ];
    }
    if has("water") {
        let value = dice.decimal(1.5, 5.5, 1);
        return vec![row(
            "Water content",
            test_id,
            Some(value),
            None,
            "%",
            Some("0.1"),
            Some("<= 8.0"),
            "Karl Fischer (USP <921>)",
            "KF-01",
        )];
    }
    if has("content") {
        let value = dice.decimal(78.0, 88.0, 1);
        return vec![row(
            "Net peptide content",
            test_id,
            Some(value),
            None,
            "%",
            None,
            Some(">= 70.0"),
            "Nitrogen / AAA",
            "AAA-01",
        )];
    }
    let value = dice.decimal(0.1, 0.9, 2);
    vec![row(
        test_name,
        test_id,
        Some(value),
        None,
        "n/a",
        None,
        None,
        test_name,
        "LAB-GENERAL-01",
    )]
}

/// Walks the order through the lab; returns what happened, step by step.
pub(crate) async fn walk(connection: &Connection, order: &str, qa_credential: &str) -> anyhow::Result<Value> {
    let technician = staff_token(connection, mesh::ORDERS_SVC, roles::LAB_TECHNICIAN).await?;
    let mut orders = orders_client(connection).await?;
    let lab_order = orders
        .get_lab_order(request(
            proto::orders::GetOrderRequest {
                reference: order.to_owned(),
            },
            &technician,
        ))
        .await
        .map_err(status_error)?
        .into_inner()
        .order
        .unwrap_or_default();
    let receipts = lab_order
        .lines
        .iter()
        .map(|line| proto::orders::SampleReceipt {
            line_number: line.line_number,
            units: 2,
            containers: "2 x 2 mL amber glass vial".into(),
            condition: "intact".into(),
            storage_location: format!("FRZ-1/A{}", line.line_number),
        })
        .collect();
    let received = orders
        .receive_samples(request(
            proto::orders::ReceiveSamplesRequest {
                order_reference: order.to_owned(),
                tracking_number: String::new(),
                samples: receipts,
            },
            &technician,
        ))
        .await
        .map_err(status_error)?
        .into_inner();
    orders
        .start_testing(request(
            proto::orders::StartTestingRequest {
                order_reference: order.to_owned(),
            },
            &technician,
        ))
        .await
        .map_err(status_error)?;

    let analyst = staff_token(connection, mesh::RESULTS_SVC, roles::LAB_ANALYST).await?;
    let qa_connection = Connection {
        credential: qa_credential.to_owned(),
        ..connection.clone()
    };
    let qa = staff_token(&qa_connection, mesh::RESULTS_SVC, roles::LAB_QA).await?;
    let mut results = results_client(connection).await?;
    let mut coas = Vec::new();
    let mut imports = Vec::new();
    for sample in &received.samples {
        let mut dice = Dice::new(&sample.accession_number);
        let rows: Vec<AnalyteResult> = sample
            .test_ids
            .iter()
            .enumerate()
            .flat_map(|(index, test_id)| {
                let name = sample
                    .test_names
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| test_id.clone());
                plausible_rows(test_id, &name, &mut dice)
            })
            .collect();
        let message = RecordResultsRequest {
            accession_number: sample.accession_number.clone(),
            results: rows,
        };
        // results-svc learns of the samples from orders-svc's events: wait until it has.
        let started = std::time::Instant::now();
        loop {
            match results.record_results(request(message.clone(), &analyst)).await {
                Ok(_) => break,
                Err(status)
                    if started.elapsed() < SAMPLE_WAIT
                        && matches!(
                            status.code(),
                            tonic::Code::NotFound | tonic::Code::FailedPrecondition
                        ) =>
                {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(status) => return Err(status_error(status)),
            }
        }
        // The instrument's report behind the results, released with the COA (raw-data manifest).
        let report = quant_report(&sample.accession_number, &message.results, &mut dice);
        let header = crate::data::header(
            &sample.accession_number,
            "demo-quant-report",
            "Agilent",
            format!("{}-quant.csv", sample.accession_number),
            &report,
            Some("text/csv".to_owned()),
            None,
            None,
            None,
        );
        let imported = results
            .import_instrument_file(request(
                crate::data::import_stream(header, report, None),
                &analyst,
            ))
            .await
            .map_err(status_error)?
            .into_inner();
        if let Some(import) = &imported.import {
            imports.push(crate::data::import_json(import, imported.unchanged));
        }
        let accession = || AccessionRequest {
            accession_number: sample.accession_number.clone(),
        };
        results
            .submit_results(request(accession(), &analyst))
            .await
            .map_err(status_error)?;
        results
            .approve_results(request(accession(), &qa))
            .await
            .map_err(status_error)?;
        let published = results
            .publish_coa(request(accession(), &qa))
            .await
            .map_err(status_error)?
            .into_inner();
        coas.push(coa_json(&published.coa.unwrap_or_default(), published.unchanged));
    }
    Ok(json!({
        "orderNumber": lab_order.order_number,
        "paymentState": lab_order.payment_state,
        "samples": received.samples.iter().map(sample_json).collect::<Vec<_>>(),
        "coas": coas,
        "imports": imports,
    }))
}

/// A vendor quantitation report (CSV, the layout of docs/results.md "Instrument file formats")
/// with one row per recorded analyte: what an instrument's software would have exported.
pub(crate) fn quant_report(accession: &str, rows: &[AnalyteResult], dice: &mut Dice) -> Vec<u8> {
    let quote = |text: &str| format!("\"{}\"", text.replace('"', "\"\""));
    let instrument = rows
        .first()
        .map_or("LAB-GENERAL-01", |row| row.instrument.as_str());
    let mut csv = format!(
        "Report,Quantitation Report\r\nSoftware,labctl demo\r\nInstrument,{}\r\nRun ID,DEMO-{accession}\r\n\
         Sample ID,{accession}\r\nAcquired,{}\r\n\r\nAnalyte,RT (min),Area,Calc. Conc.,Units,LOQ\r\n",
        quote(instrument),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"),
    );
    for row in rows {
        let concentration = row.value.clone().unwrap_or_else(|| "ND".to_owned());
        csv.push_str(&format!(
            "{},{},{},{},{},{}\r\n",
            quote(&row.analyte),
            dice.decimal(1.5, 14.5, 3),
            dice.decimal(1_000.0, 90_000.0, 1),
            concentration,
            quote(&row.unit),
            row.loq.as_deref().unwrap_or(""),
        ));
    }
    csv.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_row_has_a_value_or_qualifier_and_passes_its_specification() {
        let mut dice = Dice::new("ACC-2026-000001");
        for (id, name) in [
            ("hplc-purity", "HPLC purity (UV)"),
            ("lcms-identity", "LC-MS identity (accurate mass)"),
            ("heavy-metals-icpms", "Heavy metals by ICP-MS (Pb, As, Cd, Hg)"),
            ("endotoxin-lal", "Bacterial endotoxins (LAL)"),
            ("residual-solvents", "Residual solvents (GC-HS, USP <467>)"),
            ("microbial-limits", "Microbial limits (TAMC/TYMC)"),
            ("optical-rotation", "Specific optical rotation"),
        ] {
            for row in plausible_rows(id, name, &mut dice) {
                assert!(row.value.is_some() || row.qualifier.is_some(), "{id}");
                assert_eq!(row.test_id, id);
                assert!(row.specification.is_none() || row.outcome.as_deref() == Some("pass"));
            }
        }
        assert_eq!(
            Dice::new("a").decimal(1.0, 2.0, 3),
            Dice::new("a").decimal(1.0, 2.0, 3)
        );
    }
}

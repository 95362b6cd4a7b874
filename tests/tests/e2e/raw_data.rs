//! Data products through the whole mesh: staff import instrument files with labctl, a published
//! COA releases them, and the customer reads the raw-data manifest (exactly the spec's schema),
//! downloads every file through its signed URL (exact bytes; an altered link fails), reads the
//! structured instrument data, and meets one byte-identical 404 for every case the spec names.

use crate::lab_support::{
    LabStaff, approve_and_publish, lab_staff, pay, receive_and_start, record_and_submit,
};
use crate::support::{order_body, place_order, quote};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use tests::{Customer, Sandbox};

/// A vendor quantitation report (ours) and a real mzML file with SRM chromatograms (pymzML's, MIT),
/// from results-svc's test data.
const CSV_FILE: &str = "quant_report.csv";
const MZML_FILE: &str = "mini.chrom.mzML";

/// What quant_report.csv's analyte table says, as instrument data shows it: (analyte, retention
/// time, area, reported concentration, unit, Q1, Q3).
fn expected_csv_measurements() -> Value {
    let rows = [
        (
            "Benzo[a]pyrene",
            json!(12.384),
            json!(48211.7),
            json!("1.250"),
            "µg/kg",
            253.1,
            250.1,
        ),
        (
            "Benz[a]anthracene, total",
            json!(11.902),
            json!(37654.2),
            json!("0.980"),
            "µg/kg",
            229.1,
            226.1,
        ),
        (
            "Chrysene",
            json!(11.975),
            json!(29876.0),
            json!("0.7500"),
            "µg/kg",
            229.1,
            228.1,
        ),
        (
            "Benzo[b]fluoranthene \"BbF\"",
            json!(13.511),
            Value::Null,
            Value::Null,
            "µg/kg",
            253.1,
            250.1,
        ),
        (
            "Caffeine-d9 (ISTD)",
            json!(3.412),
            json!(1532201.5),
            Value::Null,
            "ng/mL",
            204.1,
            144.1,
        ),
    ];
    Value::Array(
        rows.into_iter()
            .map(|(analyte, rt, area, concentration, unit, q1, q3)| {
                json!({ "analyte": analyte, "retentionTimeMin": rt, "response": area, "concentration": concentration,
                        "concentrationUnit": unit, "precursorMz": q1, "productMz": q3 })
            })
            .collect(),
    )
}

/// The fields of `measurements` that [`expected_csv_measurements`] names.
fn csv_view(measurements: &Value) -> Value {
    Value::Array(
        measurements
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                json!({ "analyte": m["analyte"], "retentionTimeMin": m["retentionTimeMin"], "response": m["response"],
                        "concentration": m["concentration"], "concentrationUnit": m["concentrationUnit"],
                        "precursorMz": m["precursorMz"], "productMz": m["productMz"] })
            })
            .collect(),
    )
}

const SCOPES: &str =
    "catalog:read,quotes:write,orders:read,orders:write,results:read,raw_data:read,instruments:read";

fn instrument_file(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../results-svc/tests/data/instruments"
    ))
    .join(name)
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A bank order of one sample with `publish_raw_data`, paid: (order id, order number, sample).
async fn paid_order(
    sandbox: &Sandbox,
    agent: &Customer,
    staff: &LabStaff,
    key: &str,
    publish_raw_data: bool,
) -> (String, String, Value) {
    let quote = quote(sandbox, agent, &["BPC-157"]).await;
    let mut body = order_body(quote["id"].as_str().unwrap());
    body["publishRawData"] = json!(publish_raw_data);
    let created = place_order(sandbox, agent, &body, key).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = &created.body["data"]["order"];
    let (id, number) = (
        order["id"].as_str().unwrap().to_owned(),
        order["orderNumber"].as_str().unwrap().to_owned(),
    );
    let invoice = order["payment"]["invoiceNumber"].as_str().unwrap();
    pay(
        sandbox,
        invoice,
        &order["totalCents"].as_i64().unwrap().to_string(),
        &format!("PAY-{key}"),
    )
    .await;
    let samples = receive_and_start(sandbox, staff, &id, 1).await;
    (id, number, samples[0].clone())
}

/// Imports `path` into `result_set` of `accession` as the analyst.
async fn import(
    sandbox: &Sandbox,
    staff: &LabStaff,
    accession: &str,
    result_set: &str,
    path: &std::path::Path,
    extra: &[&str],
) -> Value {
    let path = path.to_str().unwrap();
    let mut args = vec![
        "data",
        "import",
        path,
        "--accession",
        accession,
        "--result-set",
        result_set,
        "--vendor",
        "Agilent",
    ];
    args.extend_from_slice(extra);
    sandbox.labctl_as(&staff.analyst, &args).await.unwrap()
}

/// GET with the raw answer bytes.
async fn raw_get(sandbox: &Sandbox, key: Option<&str>, url: &str) -> (u16, Vec<u8>) {
    let url = if url.starts_with("http") {
        url.to_owned()
    } else {
        format!("{}/api/v1/agent{url}", sandbox.base_url)
    };
    let mut request = sandbox.http.get(url);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    (
        response.status().as_u16(),
        response.bytes().await.unwrap().to_vec(),
    )
}

/// Validates `document` against the spec's manifest schema with Python's jsonschema.
fn assert_matches_spec_schema(document: &Value) {
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/e2e/raw_data_manifest.schema.json"
    );
    let dir = tempfile_dir();
    let path = dir.join("manifest.json");
    std::fs::write(&path, document.to_string()).unwrap();
    let script = "import json,sys,jsonschema\n\
        schema=json.load(open(sys.argv[1])); doc=json.load(open(sys.argv[2]))\n\
        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(doc)\n\
        print('valid')";
    let output = std::process::Command::new("python3")
        .args(["-c", script, schema, path.to_str().unwrap()])
        .output()
        .expect("python3 runs (bash deploy/local/test.sh installs PyPI mcp, which brings jsonschema)");
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "valid",
        "the manifest does not match the spec's schema: {}\n{document}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lab-raw-data-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn released_files_are_listed_exactly_as_the_spec_says_and_each_url_returns_the_exact_bytes_until_altered()
 {
    let sandbox = Sandbox::start().await;
    let staff = lab_staff(&sandbox).await;
    let agent = sandbox.customer("Raw Data Co", SCOPES).await;
    let (order_id, order_number, sample) =
        paid_order(&sandbox, &agent, &staff, "raw-data-order-1", true).await;
    let accession = sample["accessionNumber"].as_str().unwrap();
    record_and_submit(&sandbox, &staff, &sample).await;

    let csv = instrument_file(CSV_FILE);
    let mzml = instrument_file(MZML_FILE);
    let garbage = tempfile_dir().join("broken.mzML");
    std::fs::write(&garbage, b"<?xml version=\"1.0\"?><mzML><run>truncated").unwrap();
    let imported_csv = import(
        &sandbox,
        &staff,
        accession,
        "hplc-purity",
        &csv,
        &["--mime-type", "text/csv"],
    )
    .await;
    assert_eq!(imported_csv["parseStatus"], "parsed", "{imported_csv}");
    assert!(
        imported_csv["integrityVerifiedAt"].is_string(),
        "labctl's hash matches: {imported_csv}"
    );
    let imported_mzml = import(&sandbox, &staff, accession, "lcms-identity", &mzml, &[]).await;
    assert_eq!(imported_mzml["parseStatus"], "parsed", "{imported_mzml}");
    let wrong_hash = "0".repeat(64);
    let imported_garbage = import(
        &sandbox,
        &staff,
        accession,
        "lcms-identity",
        &garbage,
        &["--client-sha256", &wrong_hash],
    )
    .await;
    assert_eq!(imported_garbage["parseStatus"], "failed", "{imported_garbage}");
    assert!(
        imported_garbage["parseError"]
            .as_str()
            .is_some_and(|e| !e.is_empty())
    );
    assert!(
        imported_garbage["integrityVerifiedAt"].is_null(),
        "a different client hash is not verified"
    );
    // The same file into the same set again changes nothing.
    let again = import(
        &sandbox,
        &staff,
        accession,
        "hplc-purity",
        &csv,
        &["--mime-type", "text/csv"],
    )
    .await;
    assert_eq!(
        (again["id"].clone(), again["unchanged"].clone()),
        (imported_csv["id"].clone(), json!(true))
    );

    // Before publication nothing is released: the order has no published COA.
    let (status, _) = raw_get(
        &sandbox,
        Some(&agent.key),
        &format!("/orders/{order_id}/raw-data"),
    )
    .await;
    assert_eq!(status, 404);

    let coa = approve_and_publish(&sandbox, &staff, accession).await;
    assert_eq!(coa["status"], "published", "{coa}");
    let answer = sandbox
        .get(&agent.key, &format!("/orders/{order_number}/raw-data"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_matches_spec_schema(&answer.body);
    let manifest = &answer.body["data"]["rawData"];
    assert_eq!(
        manifest["order"],
        json!({ "id": order_id, "orderNumber": order_number })
    );
    let generated = chrono::DateTime::parse_from_rfc3339(manifest["generatedAt"].as_str().unwrap()).unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(manifest["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(expires - generated, chrono::Duration::hours(1));
    let files = manifest["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{manifest}");
    for (file, source) in files.iter().zip([&csv, &mzml, &garbage]) {
        let bytes = std::fs::read(source).unwrap();
        assert_eq!(file["sha256"], sha256_hex(&bytes));
        assert_eq!(file["sizeBytes"], bytes.len());
        assert_eq!(
            file["metadata"]["releases"],
            json!([{ "coaId": coa["id"], "accessionNumber": accession, "publishedAt": file["metadata"]["releases"][0]["publishedAt"] }])
        );
        assert!(file["metadata"]["releases"][0]["publishedAt"].is_string());
        assert_eq!(
            file["metadata"]["connectorVersion"]
                .as_str()
                .map(|v| v.starts_with("labctl/")),
            Some(true)
        );
        let url = file["downloadUrl"].as_str().unwrap();
        let (status, downloaded) = raw_get(&sandbox, None, url).await;
        assert_eq!(status, 200, "{url}");
        assert_eq!(
            sha256_hex(&downloaded),
            file["sha256"].as_str().unwrap(),
            "exact bytes of {url}"
        );
        // Any change to the URL fails: the signature, the expiry, the key, an added parameter.
        let tampered_signature = {
            let (head, signature) = url.rsplit_once("signature=").unwrap();
            let mut chars: Vec<char> = signature.chars().collect();
            chars[0] = if chars[0] == 'A' { 'B' } else { 'A' };
            format!("{head}signature={}", chars.into_iter().collect::<String>())
        };
        let expires_at = expires.timestamp();
        for altered in [
            tampered_signature,
            url.replace(
                &format!("expires={expires_at}"),
                &format!("expires={}", expires_at + 3600),
            ),
            url.replace("/file/", "/native/"),
            format!("{url}&download=1"),
        ] {
            assert_ne!(altered, url);
            let (status, _) = raw_get(&sandbox, None, &altered).await;
            assert_eq!(status, 404, "an altered link fails: {altered}");
        }
    }
    assert_eq!(files[2]["metadata"]["clientSha256"], wrong_hash);
    assert!(files[2]["metadata"]["integrityVerifiedAt"].is_null());
    assert!(files[0]["metadata"]["integrityVerifiedAt"].is_string());

    // The same manifest as an MCP tool.
    let tool = sandbox
        .call_tool(
            &agent.key,
            "svc.order.raw_data.get",
            json!({ "reference": order_id }),
        )
        .await;
    let text = tool["result"]["content"][0]["text"].as_str().unwrap_or_default();
    let through_mcp: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    assert_eq!(
        through_mcp["data"]["rawData"]["files"].as_array().map(Vec::len),
        Some(3),
        "{tool}"
    );

    // A retracted COA releases nothing: no COA in force, no manifest, and its links stop working.
    let first_url = files[0]["downloadUrl"].as_str().unwrap().to_owned();
    sandbox
        .labctl_as(
            &staff.qa,
            &[
                "results",
                "retract",
                "--coa",
                accession,
                "--reason",
                "instrument drift found",
            ],
        )
        .await
        .unwrap();
    let (status, _) = raw_get(
        &sandbox,
        Some(&agent.key),
        &format!("/orders/{order_id}/raw-data"),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = raw_get(&sandbox, None, &first_url).await;
    assert_eq!(status, 404, "a retracted COA's file no longer downloads");
    sandbox.stop().await;
}

#[tokio::test]
async fn every_unreleased_case_answers_the_same_bytes_and_instrument_data_keeps_measurements_without_links() {
    let sandbox = Sandbox::start().await;
    let staff = lab_staff(&sandbox).await;
    let agent = sandbox.customer("Instrument Data Co", SCOPES).await;
    let other = sandbox.customer("Other Lab Client", SCOPES).await;
    let csv = instrument_file(CSV_FILE);

    // Published, with raw data: the reference case.
    let (open_id, _, sample) = paid_order(&sandbox, &agent, &staff, "raw-data-open", true).await;
    let open_accession = sample["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(&sandbox, &staff, &sample).await;
    import(&sandbox, &staff, &open_accession, "hplc-purity", &csv, &[]).await;
    approve_and_publish(&sandbox, &staff, &open_accession).await;
    // Published, raw data disabled.
    let (closed_id, _, sample) = paid_order(&sandbox, &agent, &staff, "raw-data-closed", false).await;
    let closed_accession = sample["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(&sandbox, &staff, &sample).await;
    import(&sandbox, &staff, &closed_accession, "hplc-purity", &csv, &[]).await;
    approve_and_publish(&sandbox, &staff, &closed_accession).await;
    // Not published yet.
    let (unpublished_id, _, _) = paid_order(&sandbox, &agent, &staff, "raw-data-unpublished", true).await;

    let (status, _) = raw_get(&sandbox, Some(&agent.key), &format!("/orders/{open_id}/raw-data")).await;
    assert_eq!(status, 200);
    let mut answers = Vec::new();
    for (key, reference) in [
        (&agent.key, uuid::Uuid::new_v4().to_string()),
        (&other.key, open_id.clone()),
        (&agent.key, closed_id.clone()),
        (&agent.key, unpublished_id.clone()),
        (&agent.key, "ORD-DOES-NOT-EXIST".to_owned()),
    ] {
        answers.push(raw_get(&sandbox, Some(key), &format!("/orders/{reference}/raw-data")).await);
    }
    for answer in &answers {
        assert_eq!(
            answer,
            &answers[0],
            "byte-identical 404s: {}",
            String::from_utf8_lossy(&answer.1)
        );
    }
    assert_eq!(answers[0].0, 404);

    // Instrument data: measurements always, download links only with publishRawData.
    let open = sandbox
        .get(&agent.key, &format!("/orders/{open_id}/instrument-data"))
        .await;
    assert_eq!(open.status, 200, "{:?}", open.body);
    let runs = open.body["data"]["instrumentData"]["runs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(runs.len(), 1);
    assert!(runs[0]["file"]["downloadUrl"].is_string());
    assert_eq!(
        csv_view(&runs[0]["measurements"]),
        expected_csv_measurements(),
        "{}",
        runs[0]
    );
    let closed = sandbox
        .get(
            &agent.key,
            &format!("/results/{closed_accession}/instrument-data"),
        )
        .await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);
    let data = &closed.body["data"]["instrumentData"];
    assert!(data["coaId"].is_string());
    assert!(data["runs"][0]["file"]["downloadUrl"].is_null(), "{data}");
    assert!(data["expiresAt"].is_null());
    assert_eq!(
        csv_view(&data["runs"][0]["measurements"]),
        expected_csv_measurements()
    );
    // Another customer's order is not found; a key without instruments:read is refused.
    let foreign = sandbox
        .get(&other.key, &format!("/orders/{open_id}/instrument-data"))
        .await;
    assert_eq!(foreign.status, 404, "{:?}", foreign.body);
    let narrow = sandbox
        .customer("Narrow Key Co", "orders:read,raw_data:read")
        .await;
    let refused = sandbox
        .get(&narrow.key, &format!("/orders/{open_id}/instrument-data"))
        .await;
    assert_eq!(
        (refused.status, refused.error_code()),
        (403, "insufficient_scope")
    );

    // Exports: every measurement of both published COAs as JSON, the COA rows as RFC 4180 CSV.
    let export = sandbox.get(&agent.key, "/export/instrument-results").await;
    assert_eq!(export.status, 200, "{:?}", export.body);
    assert_eq!(export.body["truncated"], false);
    let rows = export.body["data"].as_array().unwrap();
    assert_eq!(rows.len(), 10, "five measurements behind each of two COAs");
    assert!(
        rows.windows(2)
            .all(|pair| pair[0]["publishedAt"].as_str() <= pair[1]["publishedAt"].as_str())
    );
    assert_eq!(export.body["nextSince"], rows[9]["publishedAt"]);
    let response = sandbox
        .http
        .get(format!(
            "{}/api/v1/agent/export/coas?format=csv",
            sandbox.base_url
        ))
        .bearer_auth(&agent.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert_eq!(response.headers()["x-export-truncated"], "false");
    let csv = response.text().await.unwrap();
    let parsed = std::process::Command::new("python3")
        .args(["-c", "import csv,io,json,sys; print(json.dumps(list(csv.DictReader(io.StringIO(sys.argv[1], newline='')))))", &csv])
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let records: Vec<Value> = serde_json::from_slice(&parsed.stdout).unwrap();
    assert!(
        csv.starts_with("publishedAt,coaId,submissionId,accessionNumber,"),
        "{csv}"
    );
    assert!(csv.ends_with("\r\n"));
    assert_eq!(records.len(), 4, "two analyte rows of each of two COAs: {csv}");
    assert!(
        records.iter().all(|r| r["status"] == "published"
            && r["orderNumber"].as_str().is_some_and(|n| n.starts_with("ORD-")))
    );
    // The same page through MCP, JSON only.
    let tool = sandbox
        .call_tool(&agent.key, "svc.export.coas", json!({ "limit": 3 }))
        .await;
    let page: Value = serde_json::from_str(tool["result"]["content"][0]["text"].as_str().unwrap_or("null"))
        .unwrap_or(Value::Null);
    assert_eq!(
        (page["data"].as_array().map(Vec::len), page["truncated"].clone()),
        (Some(2), json!(true)),
        "{tool}"
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn with_an_s3_store_the_manifest_hands_out_presigned_urls_that_return_the_exact_bytes() {
    // A real S3-compatible server (s3rver, npm): presigned SigV4 URLs, refused once expired. It
    // does not check signatures (docs/operations.md, "Blob storage"), so tampering is tested on
    // the local store above.
    let Some(s3) = platform::testing::s3rver::S3rver::start() else {
        return;
    };
    let store = s3.settings();
    let sandbox = Sandbox::start_with(|settings| settings.results.blobs = store).await;
    let staff = lab_staff(&sandbox).await;
    let agent = sandbox.customer("S3 Raw Data Co", SCOPES).await;
    let (order_id, _, sample) = paid_order(&sandbox, &agent, &staff, "raw-data-s3", true).await;
    let accession = sample["accessionNumber"].as_str().unwrap();
    record_and_submit(&sandbox, &staff, &sample).await;
    let mzml = instrument_file(MZML_FILE);
    import(&sandbox, &staff, accession, "lcms-identity", &mzml, &[]).await;
    approve_and_publish(&sandbox, &staff, accession).await;
    let answer = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/raw-data"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_matches_spec_schema(&answer.body);
    let file = &answer.body["data"]["rawData"]["files"][0];
    let url = file["downloadUrl"].as_str().unwrap();
    assert!(url.starts_with(&s3.endpoint), "an S3 presigned URL: {url}");
    assert!(
        url.contains("X-Amz-Signature=") && url.contains("X-Amz-Expires="),
        "{url}"
    );
    let (status, bytes) = raw_get(&sandbox, None, url).await;
    assert_eq!(status, 200);
    assert_eq!(bytes, std::fs::read(&mzml).unwrap());
    assert_eq!(sha256_hex(&bytes), file["sha256"].as_str().unwrap());
    // The instrument data parsed from the mzML file: SRM transitions with Q1 and Q3.
    let data = sandbox
        .get(&agent.key, &format!("/orders/{order_id}/instrument-data"))
        .await;
    let measurements = data.body["data"]["instrumentData"]["runs"][0]["measurements"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(measurements.len(), 3, "pymzML's file has three SRM chromatograms");
    assert!(
        measurements.iter().all(|m| m["kind"] == "srm_transition"
            && m["precursorMz"].is_number()
            && m["productMz"].is_number()),
        "{measurements:?}"
    );
    sandbox.stop().await;
}

//! `GET /instruments` and `GET /methods` (and their MCP twins) against a real results-svc on
//! its own fresh database with the seeded registries; QA's maintenance through labctl as the
//! development operator, seen by a customer through the gateway.

use crate::helpers::{TestApp, error_envelope, json_with_status, spawn_app_with};
use clap::Parser;
use proto::scopes::{CATALOG_READ, RESULTS_READ};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A gateway whose results peer is a real results-svc; the guard stops results-svc.
async fn spawn_with_registry() -> (TestApp, String, tokio_util::sync::DropGuard) {
    let common = platform::config::CommonSettings::local(
        &platform::testing::fresh_database().await,
        &platform::testing::redis_url(),
        &platform::testing::unique_stream_prefix(),
    );
    let blobs = std::env::temp_dir().join(format!("lab-blobs-{}", uuid::Uuid::new_v4()));
    let results = results_svc::Application::build(results_svc::Settings::local(common, blobs))
        .await
        .expect("results-svc builds");
    let results_url = format!("http://{}", results.local_addr());
    let shutdown = CancellationToken::new();
    tokio::spawn(results.run_until_stopped(shutdown.clone()));
    let url = results_url.clone();
    let app = spawn_app_with(move |settings| settings.peers.results = url).await;
    (app, results_url, shutdown.drop_guard())
}

async fn mcp(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let response = app
        .http
        .post(app.url("/api/mcp"))
        .bearer_auth(key)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", gateway::mcp::PROTOCOL_VERSION)
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
        .send()
        .await
        .unwrap();
    json_with_status(response, 200).await
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_key_with_catalog_read_reads_the_instrument_and_method_registries() {
    let (app, _, _results) = spawn_with_registry().await;
    let key = app.identity.keyed_customer(&[CATALOG_READ]).await.plaintext;

    let page = json_with_status(app.get("/instruments?kind=hplc-uv&limit=2", &key).await, 200).await;
    assert_eq!(ids(&page), ["hplc-uv-00", "hplc-uv-01"]);
    let cursor = page["pagination"]["nextCursor"].as_str().unwrap().to_owned();
    let hplc = &page["data"][1];
    assert_eq!(hplc["status"], "in_service");
    assert_eq!(hplc["calibrationStatus"], "calibrated");
    assert!(
        hplc["calibrationDueAt"]
            .as_str()
            .unwrap()
            .starts_with("2027-02-12")
    );
    assert_eq!(hplc["equipment"][4]["kind"], "column", "{hplc}");
    assert!(hplc["equipment"][0]["serialNumber"].is_string());
    let next = json_with_status(
        app.get(
            &format!("/instruments?kind=hplc-uv&limit=2&cursor={cursor}"),
            &key,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(ids(&next), ["hplc-uv-02"]);
    assert_eq!(next["pagination"]["nextCursor"], Value::Null);

    let metals = json_with_status(app.get("/methods?analyte=Lead&matrix=softgel", &key).await, 200).await;
    assert_eq!(ids(&metals), ["icpms-elemental-impurities"]);
    let method = &metals["data"][0];
    assert_eq!(method["validationStatus"], "validated");
    assert_eq!(method["instrumentKinds"], json!(["icp-ms"]));
    assert_eq!(method["testIds"], json!(["heavy-metals-icpms"]));
    assert_eq!(
        method["analytes"][0],
        json!({ "name": "Lead (Pb)", "unit": "ppm", "loq": "0.05", "lod": "0.015" })
    );
    let withdrawn = json_with_status(app.get("/methods?validationStatus=withdrawn", &key).await, 200).await;
    assert_eq!(ids(&withdrawn), ["hplc-uv-purity-legacy"]);
}

#[tokio::test]
async fn a_key_without_catalog_read_is_refused_the_registries_with_403() {
    let (app, _, _results) = spawn_with_registry().await;
    let key = app.identity.keyed_customer(&[RESULTS_READ]).await.plaintext;
    for path in ["/instruments", "/methods"] {
        let body = error_envelope(app.get(path, &key).await, 403, "insufficient_scope").await;
        assert_eq!(
            body["error"]["details"]["required"],
            json!(["catalog:read"]),
            "{path}"
        );
    }
}

#[tokio::test]
async fn an_invalid_registry_filter_is_a_400_envelope_naming_the_field() {
    let (app, _, _results) = spawn_with_registry().await;
    let key = app.identity.keyed_customer(&[CATALOG_READ]).await.plaintext;
    let body = error_envelope(
        app.get("/instruments?status=broken", &key).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "status");
    assert_eq!(
        body["error"]["details"]["allowed"],
        json!(["in_service", "out_of_service", "retired"])
    );
    let body = error_envelope(
        app.get("/methods?validationStatus=approved", &key).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(body["error"]["details"]["field"], "validationStatus");
    error_envelope(
        app.get("/methods?instrument=icpms-01", &key).await,
        400,
        "invalid_request",
    )
    .await;
    error_envelope(
        app.get("/methods?cursor=not-a-cursor", &key).await,
        400,
        "invalid_cursor",
    )
    .await;
}

#[tokio::test]
async fn the_registry_tools_are_listed_and_called_over_mcp_with_catalog_read_only() {
    let (app, _, _results) = spawn_with_registry().await;
    let reader = app.identity.keyed_customer(&[CATALOG_READ]).await.plaintext;
    let listed = mcp(&app, &reader, "tools/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"svc.instrument.list") && names.contains(&"svc.method.list"),
        "{names:?}"
    );
    let called = mcp(
        &app,
        &reader,
        "tools/call",
        json!({ "name": "svc.method.list", "arguments": { "technique": "karl-fischer" } }),
    )
    .await;
    let result = &called["result"];
    assert_eq!(result["isError"], false, "{called}");
    assert_eq!(ids(&result["structuredContent"]), ["kf-water-coulometric"]);

    let other = app.identity.keyed_customer(&[RESULTS_READ]).await.plaintext;
    let listed = mcp(&app, &other, "tools/list", json!({})).await;
    assert!(
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|tool| !tool["name"].as_str().unwrap().starts_with("svc.instrument"))
    );
}

#[tokio::test]
async fn qa_maintains_the_registries_with_labctl_and_customers_see_the_change() {
    let (app, results_url, _results) = spawn_with_registry().await;
    let labctl = |arguments: &[&str]| {
        let mut all = vec![
            "labctl",
            "--identity-addr",
            &app.identity.url,
            "--results-addr",
            &results_url,
            "--credential",
            identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL,
        ];
        all.extend_from_slice(arguments);
        labctl::execute(labctl::Cli::parse_from(all))
    };
    let instrument = json!({
        "id": "kf-vol-01", "name": "Karl Fischer 02 (volumetric)", "kind": "karl-fischer",
        "manufacturer": "Metrohm", "model": "901 Titrando", "serialNumber": "1901001007781",
        "location": "Wet chemistry lab",
        "equipment": [{ "id": "kf-vol-01-balance", "kind": "balance", "description": "Mettler Toledo XS205" }],
    })
    .to_string();
    let created = labctl(&["instruments", "upsert", "--definition", &instrument])
        .await
        .unwrap();
    assert_eq!(
        (created["created"].clone(), created["calibrationStatus"].clone()),
        (json!(true), json!("due"))
    );
    let calibrated = labctl(&[
        "instruments",
        "calibrate",
        "kf-vol-01",
        "--due-at",
        "2099-01-01T00:00:00Z",
        "--certificate",
        "CAL-KF-VOL-01",
    ])
    .await
    .unwrap();
    assert_eq!(calibrated["calibrationStatus"], "calibrated");
    let parked = labctl(&[
        "instruments",
        "status",
        "kf-vol-01",
        "--status",
        "out_of_service",
        "--reason",
        "titrant change",
    ])
    .await
    .unwrap();
    assert_eq!(parked["status"], "out_of_service");
    let refused = labctl(&["instruments", "status", "kf-vol-01", "--status", "parked"])
        .await
        .unwrap_err();
    assert!(refused.to_string().starts_with("invalid_request"), "{refused}");

    let method = json!({
        "id": "kf-water-volumetric", "name": "Water content by volumetric Karl Fischer", "technique": "karl-fischer",
        "instrumentKinds": ["karl-fischer"], "matrices": ["crystalline-powder"], "testIds": ["water-content-kf"],
        "analytes": [{ "name": "Water content", "unit": "%", "loq": "0.5", "lod": "0.15" }],
        "validationStatus": "in_validation", "reference": "USP <921> Method Ia",
    });
    let created = labctl(&["methods", "upsert", "--definition", &method.to_string()])
        .await
        .unwrap();
    assert_eq!(
        (created["version"].clone(), created["created"].clone()),
        (json!(1), json!(true))
    );
    let mut wider = method.clone();
    wider["matrices"] = json!(["crystalline-powder", "lyophilized-powder"]);
    let updated = labctl(&["methods", "upsert", "--definition", &wider.to_string()])
        .await
        .unwrap();
    assert_eq!(updated["version"], 2);
    let shown = labctl(&["methods", "show", "kf-water-volumetric"]).await.unwrap();
    assert_eq!(
        shown["matrices"],
        json!(["crystalline-powder", "lyophilized-powder"])
    );

    let key = app.identity.keyed_customer(&[CATALOG_READ]).await.plaintext;
    let page = json_with_status(app.get("/instruments?kind=karl-fischer", &key).await, 200).await;
    assert_eq!(ids(&page), ["kf-coul-01", "kf-vol-01"]);
    assert_eq!(page["data"][1]["statusReason"], "titrant change");
    let page = json_with_status(
        app.get(
            "/methods?technique=karl-fischer&validationStatus=in_validation",
            &key,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(ids(&page), ["kf-water-volumetric"]);
    assert_eq!(page["data"][0]["version"], 2);
}

//! The official MCP client SDKs, unmodified, against the MCP endpoint of a whole mesh: the Python
//! SDK (PyPI `mcp`, streamable HTTP client) and the TypeScript SDK (npm
//! `@modelcontextprotocol/sdk`) each initialize, list the tools and run catalog → quote → order
//! (bank invoice) → get order → support ticket → cancellation request (`tests/clients/`). `deploy/local/test.sh` installs both; with
//! `LAB_REQUIRE_PYTHON_TOOLS` set (as it sets it) a missing client fails the test instead of
//! skipping it. Also home of the JSON Schema check of tool outputs (Python `jsonschema`, which
//! the `mcp` package brings).

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use tests::Sandbox;

/// `tests/clients/` of this repository.
fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// True when a client can run; panics instead when the suite requires it.
fn available(what: &str, probe: &mut Command) -> bool {
    let ok = probe.output().is_ok_and(|output| output.status.success());
    if !ok && std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_some() {
        panic!(
            "LAB_REQUIRE_PYTHON_TOOLS is set but {what} is not installed (bash deploy/local/test.sh installs it)"
        );
    }
    if !ok {
        println!("note: {what} is not installed; skipping");
    }
    ok
}

/// Runs a client to completion and returns the JSON line it printed last.
fn run_client(mut command: Command) -> Value {
    let output = command.output().expect("the client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let line = stdout
        .lines()
        .rev()
        .find(|line| line.starts_with('{'))
        .unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|_| panic!("no JSON summary in:\n{stdout}\nstderr:\n{stderr}"))
}

/// What every client must have seen, checked against the mesh through REST.
async fn assert_flow(sandbox: &Sandbox, key: &str, summary: &Value) {
    assert_eq!(summary["protocolVersion"], "2025-11-25", "{summary}");
    assert_eq!(summary["serverName"], "lab-agent-api");
    assert_eq!(summary["instructions"], true);
    // Every tool but the sandbox simulation, which a live customer's key does not see.
    assert_eq!(
        summary["tools"].as_array().unwrap().len(),
        gateway::mcp::tools::TOOLS.len() - 1,
        "{summary}"
    );
    assert!(!summary["tools"].to_string().contains("svc.order.simulate"));
    // Ship-first: the label may already have moved the order when the client reads it.
    assert!(
        matches!(
            summary["orderStatus"].as_str(),
            Some("invoice_sent" | "label_generated")
        ),
        "{summary}"
    );
    assert!(summary["invoiceNumber"].as_str().unwrap().starts_with("INV-"));
    let order_id = summary["orderId"].as_str().unwrap();
    let order = sandbox.get(key, &format!("/orders/{order_id}")).await;
    assert_eq!(order.status, 200, "{:?}", order.body);
    assert_eq!(order.body["data"]["order"]["paymentMethod"], "bank_invoice");
    assert_eq!(
        order.body["data"]["order"]["totalCents"],
        summary["quoteTotalCents"]
    );
    assert_eq!(
        order.body["data"]["order"]["catalogRevision"],
        summary["catalogRevision"]
    );
    // The support ticket the client opened about the order, read back through the SDK.
    assert_eq!(summary["ticketOrderId"], order_id, "{summary}");
    assert_eq!(summary["ticketStatus"], "open");
    assert_eq!(
        summary["ticketBodyKept"], true,
        "the body comes back byte for byte"
    );
    let ticket_id = summary["ticketId"].as_str().unwrap();
    let ticket = sandbox.get(key, &format!("/support/tickets/{ticket_id}")).await;
    assert_eq!(ticket.status, 200, "{:?}", ticket.body);
    // The cancellation request the client filed shows on the order, pending a human decision.
    assert_eq!(summary["cancelRequestStatus"], "pending", "{summary}");
    let order = sandbox.get(key, &format!("/orders/{order_id}")).await;
    assert_eq!(
        order.body["data"]["order"]["cancellation"]["id"],
        summary["cancelRequestId"]
    );
    assert_eq!(order.body["data"]["order"]["cancellation"]["status"], "pending");
}

#[tokio::test]
async fn the_official_python_sdk_runs_the_order_flow_through_mcp() {
    if !available(
        "PyPI mcp (python3 -c 'import mcp')",
        Command::new("python3").args(["-c", "import mcp"]),
    ) {
        return;
    }
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Python Agent", "all").await;
    let mut command = Command::new("python3");
    command
        .arg(clients_dir().join("python/mcp_flow.py"))
        .args([sandbox.mcp_url(), agent.key.clone()]);
    let summary = tokio::task::spawn_blocking(move || run_client(command))
        .await
        .unwrap();
    assert_flow(&sandbox, &agent.key, &summary).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn the_official_typescript_sdk_runs_the_order_flow_through_mcp() {
    let sdk = clients_dir().join("node/node_modules/@modelcontextprotocol/sdk/package.json");
    let mut probe = Command::new("node");
    probe.arg("--version");
    if !available(
        "node with npm @modelcontextprotocol/sdk in tests/clients/node",
        &mut probe,
    ) {
        return;
    }
    if !sdk.exists() {
        assert!(
            std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_none(),
            "LAB_REQUIRE_PYTHON_TOOLS is set but {} is missing (npm ci in tests/clients/node)",
            sdk.display()
        );
        println!("note: the TypeScript SDK is not installed in tests/clients/node; skipping");
        return;
    }
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("TypeScript Agent", "all").await;
    let mut command = Command::new("node");
    command
        .arg(clients_dir().join("node/mcp_flow.mjs"))
        .args([sandbox.mcp_url(), agent.key.clone()]);
    let summary = tokio::task::spawn_blocking(move || run_client(command))
        .await
        .unwrap();
    assert_flow(&sandbox, &agent.key, &summary).await;
    sandbox.stop().await;
}

/// Validates each case `{ tool, schema, instance }` with Python `jsonschema`'s Draft 2020-12
/// validator (the dialect MCP 2025-11-25 names), failing with every violation.
pub fn jsonschema_validates(cases: &[Value]) {
    if !available(
        "PyPI jsonschema",
        Command::new("python3").args(["-c", "import jsonschema"]),
    ) {
        return;
    }
    let path = std::env::temp_dir().join(format!("mcp-schema-cases-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, serde_json::to_vec(cases).unwrap()).unwrap();
    let script = "import json, sys\n\
                  from jsonschema import Draft202012Validator\n\
                  failures = []\n\
                  cases = json.load(open(sys.argv[1]))\n\
                  for case in cases:\n\
                  \x20   Draft202012Validator.check_schema(case['schema'])\n\
                  \x20   for error in Draft202012Validator(case['schema']).iter_errors(case['instance']):\n\
                  \x20       failures.append(case['tool'] + ': ' + error.message)\n\
                  print('\\n'.join(failures) or 'validated %d' % len(cases))\n\
                  sys.exit(1 if failures else 0)\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "structured content does not match its outputSchema:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

//! Internal teams call the services directly with tools that are not ours: every process of the
//! mesh (each in a process of its own, `lab-process`) answers gRPC server reflection, and Python
//! `grpcio` + `grpcio-reflection` (tests/clients/python/grpc_reflection_flow.py, nothing of our
//! protos compiled in) lists each process's services, resolves a read method's descriptors at
//! run time and calls it with a staff token from `labctl token` (answered) and without one or
//! with one for another service (refused with UNAUTHENTICATED). docs/internal-api.md shows the
//! same session.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use tests::Sandbox;
use tests::processes::{Plan, SERVICES};

/// What each process serves besides health and reflection.
const LAB_SERVICES: [(&str, &[&str]); 8] = [
    ("gateway", &["lab.gateway.v1.OperationsService"]),
    ("identity-svc", &["lab.identity.v1.IdentityService"]),
    ("catalog-svc", &["lab.catalog.v1.CatalogService"]),
    (
        "orders-svc",
        &["lab.orders.v1.OrdersService", "lab.orders.v1.SupportService"],
    ),
    ("payments-svc", &["lab.payments.v1.PaymentsService"]),
    ("shipping-svc", &["lab.shipping.v1.ShippingService"]),
    (
        "results-svc",
        &[
            "lab.results.v1.NotificationService",
            "lab.results.v1.RegistryService",
            "lab.results.v1.ResultsService",
        ],
    ),
    ("webhooks-svc", &["lab.webhooks.v1.WebhooksService"]),
];

fn python_client_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import grpc, grpc_reflection"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !ok && std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_some() {
        panic!(
            "LAB_REQUIRE_PYTHON_TOOLS is set but PyPI grpcio and grpcio-reflection are not installed (bash deploy/local/test.sh installs them)"
        );
    }
    if !ok {
        println!("note: PyPI grpcio / grpcio-reflection are not installed; skipping");
    }
    ok
}

/// Runs the Python client on `plan` and returns its report.
async fn run_client(plan: Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/python/grpc_reflection_flow.py");
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        child
            .stdin
            .take()
            .expect("a piped stdin")
            .write_all(plan.to_string().as_bytes())?;
        child.wait_with_output()
    })
    .await
    .unwrap()
    .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the reflection client failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|_| panic!("no JSON report in:\n{stdout}\nstderr:\n{stderr}"))
}

#[tokio::test]
async fn a_reflection_client_lists_every_service_of_every_process_and_calls_a_read_only_with_a_token() {
    if !python_client_available() {
        return;
    }
    let sandbox = Sandbox::start_processes(&Plan::new(env!("CARGO_BIN_EXE_lab-process"))).await;
    let mesh = sandbox.processes();
    let processes: BTreeMap<&str, String> = SERVICES
        .iter()
        .map(|(service, _)| {
            (
                *service,
                mesh.uri(service).trim_start_matches("http://").to_owned(),
            )
        })
        .collect();

    // Staff tokens of the sandbox's operator, as a script obtains them.
    let token = |audience: &'static str, role: Option<&'static str>| {
        let sandbox = &sandbox;
        async move {
            let mut args = vec!["token", "--audience", audience];
            if let Some(role) = role {
                args.extend(["--role", role]);
            }
            let issued = sandbox.labctl(&args).await.expect("labctl token");
            assert_eq!(issued["audience"], audience, "{issued}");
            assert!(issued["expiresAt"].as_str().is_some(), "{issued}");
            issued["token"].as_str().expect("a token").to_owned()
        }
    };
    let results_token = token("results-svc", None).await;
    let identity_token = token("identity-svc", Some("identity.admin")).await;
    let gateway_token = token("gateway", None).await;

    let instruments = "lab.results.v1.RegistryService/ListInstruments";
    let customers = "lab.identity.v1.IdentityService/ListCustomers";
    let peers = "lab.gateway.v1.OperationsService/CheckPeers";
    let calls = json!([
        { "process": "results-svc", "method": instruments, "request": { "limit": 5 }, "token": results_token },
        { "process": "results-svc", "method": instruments, "request": { "limit": 5 }, "token": null },
        // A token is good only at the service it names.
        { "process": "results-svc", "method": instruments, "request": {}, "token": identity_token },
        { "process": "identity-svc", "method": customers, "request": {}, "token": identity_token },
        { "process": "identity-svc", "method": customers, "request": {}, "token": null },
        { "process": "gateway", "method": peers, "request": {}, "token": gateway_token },
        { "process": "gateway", "method": peers, "request": {}, "token": null },
    ]);
    let report = run_client(json!({ "processes": processes, "calls": calls })).await;

    for (process, lab_services) in LAB_SERVICES {
        let mut expected: Vec<&str> = lab_services.to_vec();
        expected.extend([
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]);
        expected.sort_unstable();
        for version in ["v1", "v1alpha"] {
            assert_eq!(
                report["processes"][process][version],
                json!(expected),
                "{process} over reflection {version}: {report}"
            );
        }
    }

    let calls = report["calls"].as_array().unwrap();
    let answered = |index: usize| {
        let call = &calls[index];
        assert_eq!(call["code"], "OK", "call {index}: {call}");
        &call["response"]
    };
    let refused = |index: usize| {
        let call = &calls[index];
        assert_eq!(call["code"], "UNAUTHENTICATED", "call {index}: {call}");
        assert!(call["response"].is_null(), "call {index}: {call}");
    };
    // The descriptors came from reflection, comments included.
    let described = &calls[0]["describe"];
    assert_eq!(
        described["input"], "lab.results.v1.ListInstrumentsRequest",
        "{described}"
    );
    assert_eq!(
        described["output"], "lab.results.v1.ListInstrumentsResponse",
        "{described}"
    );
    assert_eq!(described["serverStreaming"], false);
    assert!(
        described["inputFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|field| field == "limit"),
        "{described}"
    );
    assert!(!described["comment"].as_str().unwrap().is_empty(), "{described}");

    // The registry ships with the lab's instruments: a real read, five of them.
    let listed = answered(0)["instruments"].as_array().expect("instruments").len();
    assert_eq!(listed, 5, "{report}");
    refused(1);
    refused(2);
    let customers = answered(3);
    assert!(customers.is_object(), "{customers}");
    refused(4);
    let peers = answered(5);
    // Every peer of the gateway, each serving.
    let components = peers["components"].as_array().expect("components");
    assert!(components.len() >= 8, "{peers}");
    assert!(
        components
            .iter()
            .all(|component| component["status"] == "HEALTH_STATUS_SERVING"),
        "{peers}"
    );
    refused(6);
}

#[tokio::test]
async fn labctl_token_refuses_an_unknown_audience_and_a_role_the_operator_lacks() {
    let sandbox = Sandbox::start().await;
    let unknown = sandbox
        .labctl(&["token", "--audience", "billing-svc"])
        .await
        .expect_err("an unknown audience");
    assert!(format!("{unknown:#}").contains("audience"), "{unknown:#}");

    // An operator holding lab.analyst only gets no lab.qa token.
    let analyst = sandbox
        .labctl(&["operators", "create", "ana", "--roles", "lab.analyst"])
        .await
        .unwrap();
    let credential = analyst["credential"].as_str().expect("a credential").to_owned();
    let issued = sandbox
        .labctl_as(
            &credential,
            &["token", "--audience", "results-svc", "--role", "lab.analyst"],
        )
        .await
        .expect("a role the operator holds");
    assert_eq!(issued["roles"], json!(["lab.analyst"]), "{issued}");
    assert_eq!(issued["operator"], "ana", "{issued}");
    let refused = sandbox
        .labctl_as(
            &credential,
            &["token", "--audience", "results-svc", "--role", "lab.qa"],
        )
        .await
        .expect_err("a role the operator lacks");
    assert!(format!("{refused:#}").contains("lab.qa"), "{refused:#}");
}

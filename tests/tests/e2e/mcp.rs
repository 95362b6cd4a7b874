//! The MCP endpoint over raw JSON-RPC against the whole mesh: the handshake, every protocol and
//! transport error case, scopes deciding which tools exist, guarded writes sharing REST's
//! idempotency, tenant isolation, and every tool's output validated against its outputSchema.

use crate::support::{order_body, place_order, quote, two_tests};
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use tests::Sandbox;

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn initialize() -> Value {
    request(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "raw-e2e", "version": "1" }
        }),
    )
}

/// The names `tools/list` shows to `key`.
async fn tool_names(sandbox: &Sandbox, key: &str) -> Vec<String> {
    let listed = sandbox.mcp(key, &request(2, "tools/list", json!({}))).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    listed.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn initialize_negotiates_2025_11_25_without_a_session_and_notifications_are_accepted_without_a_body() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Handshake Labs", "all").await;
    let body = serde_json::to_vec(&initialize()).unwrap();
    let answer = sandbox.mcp_raw(Some(&agent.key), &body, &[]).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert!(
        answer.header("mcp-session-id").is_none(),
        "no session id is issued"
    );
    let result = &answer.body["result"];
    assert_eq!(answer.body["id"], 0);
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(result["serverInfo"]["name"], "lab-agent-api");
    assert!(result["serverInfo"]["version"].is_string());
    let instructions = result["instructions"].as_str().unwrap();
    for step in [
        "svc.catalog.search",
        "svc.quote.create",
        "svc.order.create",
        "svc.order.get",
    ] {
        assert!(instructions.contains(step), "the instructions name {step}");
    }
    // An unknown requested version is answered with ours.
    let mut old = initialize();
    old["params"]["protocolVersion"] = json!("2024-01-01");
    let answer = sandbox
        .mcp_raw(Some(&agent.key), &serde_json::to_vec(&old).unwrap(), &[])
        .await;
    assert_eq!(answer.body["result"]["protocolVersion"], "2025-11-25");

    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let accepted = sandbox.mcp(&agent.key, &initialized).await;
    assert_eq!(accepted.status, 202);
    assert_eq!(accepted.header("content-length"), Some("0"));
    let response = json!({ "jsonrpc": "2.0", "id": 9, "result": {} });
    assert_eq!(sandbox.mcp(&agent.key, &response).await.status, 202);

    // Stateless: a later request needs no session id, and a stray one changes nothing.
    let ping = sandbox
        .mcp_raw(
            Some(&agent.key),
            br#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#,
            &[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-session-id", "whatever"),
            ],
        )
        .await;
    assert_eq!(ping.status, 200);
    assert_eq!(ping.body, json!({ "jsonrpc": "2.0", "id": "p1", "result": {} }));
    sandbox.stop().await;
}

#[tokio::test]
async fn server_discover_and_every_other_unknown_method_are_json_rpc_method_not_found() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Discover Probe", "catalog:read").await;
    // Exactly what the Python SDK's first probe sends, with its newer protocol version.
    let probe = serde_json::to_vec(&request(1, "server/discover", json!({}))).unwrap();
    let answer = sandbox
        .mcp_raw(
            Some(&agent.key),
            &probe,
            &[("mcp-protocol-version", "2026-07-28")],
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.body["id"], 1);
    assert_eq!(answer.body["error"]["code"], -32601);
    for method in [
        "resources/list",
        "prompts/list",
        "tools/lists",
        "completion/complete",
    ] {
        let answer = sandbox.mcp(&agent.key, &request(5, method, json!({}))).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body["error"]["code"], -32601, "{method}");
    }
    sandbox.stop().await;
}

#[tokio::test]
async fn malformed_messages_get_their_json_rpc_errors() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Sloppy Client", "all").await;
    let cases: [(&str, &[u8], u16, i64); 9] = [
        ("not JSON", b"{\"jsonrpc\":\"2.0\",", 400, -32700),
        ("a batch", br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, 400, -32600),
        ("no jsonrpc", br#"{"id":1,"method":"ping"}"#, 400, -32600),
        ("no method", br#"{"jsonrpc":"2.0","id":1}"#, 400, -32600),
        ("no id", br#"{"jsonrpc":"2.0","method":"tools/list"}"#, 400, -32600),
        ("a null id", br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, 400, -32600),
        (
            "tools/call without a name",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            200,
            -32602,
        ),
        (
            "arguments that are not an object",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"svc.order.list","arguments":[1]}}"#,
            200,
            -32602,
        ),
        (
            "initialize without a protocol version",
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            200,
            -32602,
        ),
    ];
    for (case, body, status, code) in cases {
        let answer = sandbox
            .mcp_raw(Some(&agent.key), body, &[("mcp-protocol-version", "2025-11-25")])
            .await;
        assert_eq!(answer.status, status, "{case}: {:?}", answer.body);
        assert_eq!(answer.body["jsonrpc"], "2.0", "{case}");
        assert_eq!(answer.body["error"]["code"], code, "{case}: {:?}", answer.body);
        assert!(answer.body["error"]["message"].is_string(), "{case}");
    }
    sandbox.stop().await;
}

#[tokio::test]
async fn the_transport_refuses_other_methods_foreign_origins_and_hosts_unsupported_versions_and_missing_keys()
{
    let sandbox = Sandbox::start_with(|settings| {
        settings.gateway.mcp.allowed_hosts = vec!["127.0.0.1".to_owned()];
    })
    .await;
    let agent = sandbox.customer("Transport Checks", "all").await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        for key in [Some(agent.key.as_str()), None] {
            let answer = sandbox.call(method.clone(), "/api/mcp", key, None, &[]).await;
            assert_eq!(answer.status, 405, "{method} with key {:?}", key.is_some());
            assert_eq!(answer.header("allow"), Some("POST"));
        }
    }
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let foreign = sandbox
        .mcp_raw(Some(&agent.key), ping, &[("origin", "https://evil.example")])
        .await;
    assert_eq!(foreign.status, 403, "{:?}", foreign.body);
    assert_eq!(foreign.body["error"]["code"], -32600);
    let local = sandbox
        .mcp_raw(Some(&agent.key), ping, &[("origin", "http://localhost:6274")])
        .await;
    assert_eq!(local.status, 200, "a loopback origin is allowed by default");

    let foreign_host = sandbox
        .mcp_raw(Some(&agent.key), ping, &[("host", "rebound.example:8080")])
        .await;
    assert_eq!(foreign_host.status, 403, "a Host outside the allowed hosts");
    assert_eq!(foreign_host.body["error"]["code"], -32600);

    let unsupported = sandbox
        .mcp_raw(Some(&agent.key), ping, &[("mcp-protocol-version", "1999-01-01")])
        .await;
    assert_eq!(unsupported.status, 400);
    assert_eq!(unsupported.body["error"]["code"], -32600);
    assert_eq!(unsupported.body["id"], 1);
    for version in ["2025-11-25", "2025-06-18"] {
        let answer = sandbox
            .mcp_raw(Some(&agent.key), ping, &[("mcp-protocol-version", version)])
            .await;
        assert_eq!(answer.status, 200, "{version}");
    }
    let text = sandbox
        .mcp_raw(Some(&agent.key), ping, &[("content-type", "text/plain")])
        .await;
    assert_eq!(text.status, 415);

    let anonymous = sandbox.mcp_raw(None, ping, &[]).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer realm=\"lab\""));
    let forged = sandbox
        .mcp_raw(Some("svc_live_nope_0000000000000000"), ping, &[])
        .await;
    assert_eq!(forged.status, 401);
    assert!(
        forged
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn a_key_without_orders_write_neither_sees_nor_can_call_svc_order_create() {
    let sandbox = Sandbox::start().await;
    let writer = sandbox.customer("Full Access", "all").await;
    let reader = sandbox
        .customer("Read Only Buyer", "catalog:read,quotes:write,orders:read")
        .await;
    let all = tool_names(&sandbox, &writer.key).await;
    assert_eq!(
        all.len(),
        gateway::mcp::tools::TOOLS.len() - 1,
        "a live key with every scope sees every tool but the sandbox simulation"
    );
    assert!(all.contains(&"svc.order.create".to_owned()));
    assert!(!all.contains(&"svc.order.simulate".to_owned()));
    // The live key's call of the simulation is an unknown tool's.
    let called = sandbox
        .mcp(
            &writer.key,
            &request(
                9,
                "tools/call",
                json!({ "name": "svc.order.simulate", "arguments": { "reference": "ORD-1", "scenario": "received" } }),
            ),
        )
        .await;
    let unknown = sandbox
        .mcp(
            &writer.key,
            &request(
                9,
                "tools/call",
                json!({ "name": "svc.order.simulated", "arguments": {} }),
            ),
        )
        .await;
    assert_eq!(
        called.body["error"]["code"], unknown.body["error"]["code"],
        "{:?}",
        called.body
    );
    sandbox
        .labctl(&["customers", "sandbox", &writer.id, "on"])
        .await
        .unwrap();
    let sandboxed = wait_for(
        "the sandbox flag at the gateway",
        Duration::from_secs(10),
        || async {
            let names = tool_names(&sandbox, &writer.key).await;
            (names.len() == gateway::mcp::tools::TOOLS.len()).then_some(names)
        },
    )
    .await;
    assert!(sandboxed.contains(&"svc.order.simulate".to_owned()));
    let visible = tool_names(&sandbox, &reader.key).await;
    assert_eq!(
        visible,
        [
            "svc.catalog.search",
            "svc.instrument.list",
            "svc.method.list",
            "svc.quote.create",
            "svc.order.list",
            "svc.order.get",
            "svc.order.sample.list",
            "svc.order.custody.get",
            "svc.order.eta.get",
            // The public verification's tools need no scope.
            "svc.coa.verify",
            "svc.coa.verify.post",
            "svc.coa.verify.batch",
            "svc.coa.verify.batch.post",
            "svc.support.ticket.list",
            "svc.support.ticket.get",
            "svc.notification.consent.list",
        ]
    );

    let quote = quote(&sandbox, &reader, &["BPC-157"]).await;
    let mut arguments = order_body(quote["id"].as_str().unwrap());
    arguments["idempotencyKey"] = json!("scope-check-0001");
    let refused = sandbox
        .call_tool(&reader.key, "svc.order.create", arguments.clone())
        .await;
    let missing = sandbox
        .call_tool(&reader.key, "svc.order.cancel_everything", arguments.clone())
        .await;
    assert!(refused.get("result").is_none(), "{refused}");
    assert_eq!(refused["error"]["code"], -32602);
    let as_if_missing = missing
        .to_string()
        .replace("svc.order.cancel_everything", "svc.order.create");
    assert_eq!(
        refused.to_string(),
        as_if_missing,
        "the same answer as a tool that does not exist"
    );
    assert!(!refused.to_string().contains("scope"));
    let orders = sandbox.get(&reader.key, "/orders").await;
    assert_eq!(orders.body["data"], json!([]), "nothing was ordered");
    sandbox.stop().await;
}

#[tokio::test]
async fn the_same_idempotency_key_through_mcp_and_rest_yields_one_order() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Retrying Agent", "all").await;
    let quote = quote(&sandbox, &agent, &["BPC-157"]).await;
    let body = order_body(quote["id"].as_str().unwrap());
    let mut arguments = body.clone();
    arguments["idempotencyKey"] = json!("shared-key-00001");

    let first = sandbox
        .call_tool(&agent.key, "svc.order.create", arguments.clone())
        .await;
    let result = &first["result"];
    assert_eq!(result["isError"], false, "{first}");
    assert!(result.get("_meta").is_none(), "the first call is no replay");
    let order = result["structuredContent"]["data"]["order"].clone();
    crate::support::assert_fresh_bank_order(&order);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text, result["structuredContent"],
        "the text block is the same JSON"
    );

    let rest = place_order(&sandbox, &agent, &body, "shared-key-00001").await;
    assert_eq!(rest.status, 201, "{:?}", rest.body);
    assert_eq!(rest.header("idempotent-replayed"), Some("true"));
    // The same order; its label link is signed afresh for each answer.
    let same = crate::support::without_label_link;
    assert_eq!(same(&rest.body["data"]["order"]), same(&order));

    let again = sandbox.call_tool(&agent.key, "svc.order.create", arguments).await;
    assert_eq!(
        same(&again["result"]["structuredContent"]["data"]["order"]),
        same(&order)
    );
    assert_eq!(again["result"]["_meta"]["lab/idempotentReplayed"], true);
    let orders = sandbox.get(&agent.key, "/orders").await;
    assert_eq!(orders.body["data"].as_array().unwrap().len(), 1, "one order");

    // The guards of REST hold: the same key with other input, confirm false, a missing key.
    let mut other = order_body(quote["id"].as_str().unwrap());
    other["clientReference"] = json!("PO-OTHER");
    other["idempotencyKey"] = json!("shared-key-00001");
    let reused = sandbox
        .call_tool(&agent.key, "svc.order.create", other.clone())
        .await;
    let rest_reused = place_order(
        &sandbox,
        &agent,
        &json!({ "quoteId": quote["id"], "paymentMethod": "bank_invoice", "confirm": true, "clientReference": "PO-OTHER" }),
        "shared-key-00001",
    )
    .await;
    assert_eq!(reused["result"]["isError"], true);
    assert_eq!(
        reused["result"]["structuredContent"], rest_reused.body,
        "same code and message as REST"
    );
    assert_eq!(rest_reused.error_code(), "idempotency_key_reused");

    let second_quote = crate::support::quote(&sandbox, &agent, &["TB-500"]).await;
    let mut unconfirmed = order_body(second_quote["id"].as_str().unwrap());
    unconfirmed["confirm"] = json!(false);
    let rest_unconfirmed = place_order(&sandbox, &agent, &unconfirmed, "unconfirmed-rest-1").await;
    unconfirmed["idempotencyKey"] = json!("unconfirmed-mcp-1");
    let mcp_unconfirmed = sandbox
        .call_tool(&agent.key, "svc.order.create", unconfirmed.clone())
        .await;
    assert_eq!(mcp_unconfirmed["result"]["isError"], true);
    assert_eq!(
        mcp_unconfirmed["result"]["structuredContent"],
        rest_unconfirmed.body
    );
    assert!(rest_unconfirmed.status >= 400, "{:?}", rest_unconfirmed.body);

    unconfirmed.as_object_mut().unwrap().remove("idempotencyKey");
    unconfirmed["confirm"] = json!(true);
    let keyless = sandbox
        .call_tool(&agent.key, "svc.order.create", unconfirmed)
        .await;
    assert_eq!(keyless["result"]["isError"], true);
    assert_eq!(
        keyless["result"]["structuredContent"]["error"]["code"],
        "idempotency_key_missing"
    );
    assert_eq!(
        keyless["result"]["structuredContent"]["error"]["details"]["field"],
        "idempotencyKey"
    );
    let orders = sandbox.get(&agent.key, "/orders").await;
    assert_eq!(
        orders.body["data"].as_array().unwrap().len(),
        1,
        "still one order"
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn another_customers_order_through_mcp_is_indistinguishable_from_a_missing_one() {
    let sandbox = Sandbox::start().await;
    let alice = sandbox.customer("Alice Assays", "all").await;
    let bob = sandbox.customer("Bob Botanicals", "all").await;
    let quote = quote(&sandbox, &alice, &["BPC-157"]).await;
    let placed = place_order(
        &sandbox,
        &alice,
        &order_body(quote["id"].as_str().unwrap()),
        "alice-order-1",
    )
    .await;
    assert_eq!(placed.status, 201);
    let order = &placed.body["data"]["order"];
    let order_id = order["id"].as_str().unwrap();
    let order_number = order["orderNumber"].as_str().unwrap();
    // Compared once the ship-first label exists, so that nothing changes between the two reads.
    crate::support::wait_for_label(&sandbox, &alice, order_id).await;

    let own = sandbox
        .call_tool(&alice.key, "svc.order.get", json!({ "reference": order_id }))
        .await;
    let rest = sandbox.get(&alice.key, &format!("/orders/{order_id}")).await;
    assert_eq!(
        own["result"]["structuredContent"], rest.body,
        "the REST body, unchanged"
    );

    let missing_id = uuid::Uuid::new_v4().to_string();
    for (theirs, absent) in [(order_id, missing_id.as_str()), (order_number, "ORD-000000-NOPE")] {
        let foreign = sandbox
            .call_tool(&bob.key, "svc.order.get", json!({ "reference": theirs }))
            .await;
        let missing = sandbox
            .call_tool(&bob.key, "svc.order.get", json!({ "reference": absent }))
            .await;
        assert_eq!(foreign["result"]["isError"], true, "{foreign}");
        assert_eq!(
            foreign["result"]["structuredContent"]["error"]["code"],
            "not_found"
        );
        let normalize = |answer: &Value, reference: &str| answer.to_string().replace(reference, "REF");
        assert_eq!(normalize(&foreign, theirs), normalize(&missing, absent));
        let rest = sandbox.get(&bob.key, &format!("/orders/{theirs}")).await;
        assert_eq!(foreign["result"]["structuredContent"], rest.body);
    }
    sandbox.stop().await;
}

#[tokio::test]
async fn control_characters_in_tool_arguments_are_refused_like_rest_input() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Input Rules", "all").await;
    let answer = sandbox
        .call_tool(&agent.key, "svc.order.get", json!({ "reference": "ORD-\u{0}1" }))
        .await;
    let error = &answer["result"]["structuredContent"]["error"];
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(error["code"], "invalid_request");
    assert_eq!(error["details"]["field"], "arguments.reference");
    let unknown = sandbox
        .call_tool(
            &agent.key,
            "svc.order.get",
            json!({ "reference": "x", "extra": 1 }),
        )
        .await;
    assert_eq!(
        unknown["result"]["structuredContent"]["error"]["details"]["field"],
        "extra"
    );
    sandbox.stop().await;
}

#[tokio::test]
async fn every_tool_answers_structured_content_that_validates_against_its_output_schema() {
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Schema Checker", "all").await;
    // A sandbox customer, so that the simulation's tool is listed and called too.
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();
    let listed = sandbox
        .mcp(&agent.key, &request(1, "tools/list", json!({})))
        .await;
    let definitions = listed.body["result"]["tools"].as_array().unwrap().clone();
    let schema_of = |name: &str| {
        definitions
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["outputSchema"].clone())
            .unwrap()
    };
    for tool in &definitions {
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert!(tool["description"].as_str().unwrap().len() > 40);
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(tool["annotations"][hint].is_boolean(), "{} {hint}", tool["name"]);
        }
    }

    let mut results: Vec<(String, Value)> = Vec::new();
    let mut call = async |name: &str, arguments: Value| -> Value {
        let answer = sandbox.call_tool(&agent.key, name, arguments).await;
        let result = answer["result"].clone();
        assert!(result.is_object(), "{name}: {answer}");
        results.push((name.to_owned(), result.clone()));
        result["structuredContent"].clone()
    };
    let tests = two_tests(&sandbox, &agent, "peptides").await;
    let page = call("svc.catalog.search", json!({ "include": "all", "limit": 3 })).await;
    assert!(page["catalogRevision"].is_string());
    let quote = call(
        "svc.quote.create",
        json!({ "categoryId": "peptides", "compoundNames": ["BPC-157"], "testIds": [tests[0].0, tests[1].0] }),
    )
    .await;
    let quote_id = quote["data"]["quote"]["id"].as_str().unwrap().to_owned();
    let created = call(
        "svc.order.create",
        json!({ "quoteId": quote_id, "paymentMethod": "bank_invoice", "confirm": true, "idempotencyKey": "schema-order-1" }),
    )
    .await;
    let order = &created["data"]["order"];
    let (order_id, invoice_number) = (
        order["id"].as_str().unwrap().to_owned(),
        order["payment"]["invoiceNumber"].as_str().unwrap().to_owned(),
    );
    let total = order["totalCents"].as_i64().unwrap().to_string();
    crate::support::record_bank_payment(&sandbox, &invoice_number, &total, "SCHEMA-REF-1").await;
    call("svc.order.list", json!({ "limit": 5 })).await;
    call("svc.order.get", json!({ "reference": order_id })).await;
    call("svc.invoice.list", json!({ "orderId": order_id })).await;
    call("svc.invoice.get", json!({ "reference": invoice_number })).await;
    let payments = call("svc.payment.list", json!({})).await;
    let payment_id = payments["data"][0]["id"].as_str().unwrap().to_owned();
    call("svc.payment.get", json!({ "reference": payment_id })).await;
    // Shipping: the label exists at once (ship-first); pickups need the payment recorded.
    let labelled = crate::support::wait_for_label(&sandbox, &agent, &order_id).await;
    let tracking = labelled["shipping"]["trackingNumber"]
        .as_str()
        .unwrap()
        .to_owned();
    platform::testing::wait_for(
        "the pickup options",
        std::time::Duration::from_secs(30),
        || async {
            let answer = sandbox
                .get(&agent.key, &format!("/orders/{order_id}/pickup"))
                .await;
            (answer.status == 200).then_some(())
        },
    )
    .await;
    call("svc.shipment.list", json!({ "orderId": order_id })).await;
    call("svc.shipment.get", json!({ "reference": tracking })).await;
    call("svc.shipment.label.get", json!({ "reference": order_id })).await;
    let options = call("svc.pickup.options", json!({ "reference": order_id })).await;
    let options = &options["data"]["pickupOptions"];
    // The spec does not require Idempotency-Key for a pickup: the tool's schema leaves
    // `idempotencyKey` optional and the tool takes the call without one, as REST takes the request
    // without the header; the same request sent again over REST is the first one's replay.
    let pickup = json!({ "date": options["dates"][0], "window": options["windows"][0]["id"],
        "quoteToken": options["quoteToken"], "confirm": true });
    let mut arguments = pickup.clone();
    arguments["reference"] = json!(order_id);
    let requested = call("svc.pickup.request", arguments).await;
    let again = sandbox
        .post(&agent.key, &format!("/orders/{order_id}/pickup"), &pickup, &[])
        .await;
    assert_eq!(again.status, 201, "{:?}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(
        again.body["data"]["pickup"]["id"],
        requested["data"]["pickup"]["id"]
    );
    call("svc.spend.envelope.get", json!({})).await;
    let card_quote = call(
        "svc.quote.create",
        json!({ "categoryId": "peptides", "compoundNames": ["BPC-157"], "testIds": [tests[0].0, tests[1].0] }),
    )
    .await;
    let card_order = call(
        "svc.order.create",
        json!({ "quoteId": card_quote["data"]["quote"]["id"], "paymentMethod": "card_checkout", "confirm": true, "idempotencyKey": "schema-order-2" }),
    )
    .await;
    let checkout = call(
        "svc.payment.card.checkout",
        json!({ "orderReference": card_order["data"]["order"]["orderNumber"], "idempotencyKey": "schema-checkout-1" }),
    )
    .await;
    assert_eq!(
        checkout["data"]["payment"]["checkout"]["hostedUrl"],
        card_order["data"]["order"]["payment"]["hostedUrl"]
    );
    // The lab side: receive, test and publish the order's COA, then read it through the tools.
    let staff = crate::lab_support::lab_staff(&sandbox).await;
    let samples = crate::lab_support::receive_and_start(&sandbox, &staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    crate::lab_support::record_and_submit(&sandbox, &staff, &samples[0]).await;
    crate::lab_support::approve_and_publish(&sandbox, &staff, &accession).await;
    let delivered = call(
        "svc.order.simulate",
        json!({ "reference": order_id, "scenario": "delivered" }),
    )
    .await;
    assert_eq!(
        delivered["data"]["simulation"]["status"], "delivered",
        "{delivered}"
    );
    call("svc.order.sample.list", json!({ "reference": order_id })).await;
    // Two received units both went to the line's two tests: an add-on is refused (its error
    // envelope validates like any answer); its success is validated in addons.rs.
    call(
        "svc.order.addons",
        json!({ "reference": order_id, "lineNumber": 1, "testIds": ["heavy-metals-icpms"] }),
    )
    .await;
    call("svc.order.custody.get", json!({ "reference": order_id })).await;
    call("svc.order.eta.get", json!({ "reference": order_id })).await;
    call("svc.result.list", json!({ "orderId": order_id })).await;
    let coa = call("svc.result.get", json!({ "reference": accession })).await;
    assert_eq!(coa["data"]["result"]["accessionNumber"], accession.as_str());
    call("svc.result.analyte.list", json!({ "reference": accession })).await;
    call("svc.order.raw_data.get", json!({ "reference": order_id })).await;
    call("svc.order.instrument_data.get", json!({ "reference": order_id })).await;
    call(
        "svc.result.instrument_data.get",
        json!({ "reference": accession }),
    )
    .await;
    let exported = call("svc.export.coas", json!({ "limit": 10 })).await;
    assert!(
        exported["data"].as_array().is_some_and(|rows| !rows.is_empty()),
        "{exported}"
    );
    call("svc.export.instrument_results", json!({})).await;
    call("svc.instrument.list", json!({ "kind": "hplc-uv" })).await;
    call("svc.method.list", json!({ "limit": 5 })).await;
    let verified = call("svc.coa.verify", json!({ "accession": accession })).await;
    assert_eq!(verified["data"]["verification"]["status"], "authentic");
    call(
        "svc.coa.verify.post",
        json!({ "accession": accession, "code": "WRONGCODE1" }),
    )
    .await;
    call("svc.coa.verify.batch", json!({ "accessions": accession })).await;
    call("svc.coa.verify.batch.post", json!({ "accessions": [accession] })).await;
    let endpoint = call(
        "svc.webhook.create",
        json!({ "url": receiver.url("/schema"), "events": ["order.created"], "idempotencyKey": "schema-hook-1" }),
    )
    .await;
    let endpoint_id = endpoint["data"]["endpoint"]["id"].as_str().unwrap().to_owned();
    assert!(
        endpoint["data"]["signingSecret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    call("svc.webhook.list", json!({})).await;
    call(
        "svc.webhook.test",
        json!({ "endpointId": endpoint_id, "idempotencyKey": "schema-test-1" }),
    )
    .await;
    call("svc.webhook.delivery.list", json!({ "endpointId": endpoint_id })).await;
    call(
        "svc.webhook.secret.rotate",
        json!({ "endpointId": endpoint_id, "idempotencyKey": "schema-rotate-1" }),
    )
    .await;
    call(
        "svc.webhook.delete",
        json!({ "endpointId": endpoint_id, "idempotencyKey": "schema-delete-1" }),
    )
    .await;
    let opened = call(
        "svc.support.ticket.open",
        json!({ "subject": "Schema", "body": "<b>not HTML</b>", "reference": order_id, "idempotencyKey": "schema-ticket-1" }),
    )
    .await;
    let ticket_id = opened["data"]["ticket"]["id"].as_str().unwrap().to_owned();
    call("svc.support.ticket.list", json!({ "status": "open" })).await;
    call("svc.support.ticket.get", json!({ "ticketId": ticket_id })).await;
    call(
        "svc.support.ticket.reply",
        json!({ "ticketId": ticket_id, "body": "More", "idempotencyKey": "schema-reply-1" }),
    )
    .await;
    // The card order is still open (the first one completed with its COA).
    let filed = call(
        "svc.order.cancel_request",
        json!({ "reference": card_order["data"]["order"]["id"], "reason": "Schema check", "confirm": true,
                "idempotencyKey": "schema-cancel-1" }),
    )
    .await;
    assert_eq!(filed["data"]["cancelRequest"]["status"], "pending", "{filed}");
    // The COA email: a consent, the list, the send (this mesh writes emails to files), the
    // withdrawal.
    let consented_at = (platform::time::now() - chrono::Duration::days(1)).to_rfc3339();
    let consent = call(
        "svc.notification.consent.record",
        json!({ "recipientEmail": "schema.buyer@example.org", "consentedBy": "Schema Buyer",
                "consentedAt": consented_at, "textVersion": "2026-01", "mechanism": "web_form",
                "idempotencyKey": "schema-consent-1" }),
    )
    .await;
    let consent_id = consent["data"]["consent"]["id"].as_str().unwrap().to_owned();
    call("svc.notification.consent.list", json!({ "status": "active" })).await;
    let emailed = call(
        "svc.notification.coa.send",
        json!({ "reference": accession, "recipientEmail": "schema.buyer@example.org",
                "message": "Schema check", "idempotencyKey": "schema-coa-email-1" }),
    )
    .await;
    assert_eq!(emailed["data"]["email"]["status"], "sent", "{emailed}");
    call(
        "svc.notification.consent.withdraw",
        json!({ "consentId": consent_id }),
    )
    .await;
    // Business errors validate too: their structured content is the REST error envelope. This
    // mesh has no stablecoin rail: its two tools answer payment_method_unavailable (their
    // successes are validated in stablecoin.rs against anvil).
    call("svc.payment.stablecoin.request", json!({ "reference": order_id })).await;
    call(
        "svc.payment.stablecoin.submit",
        json!({ "reference": order_id, "transactionHash": format!("0x{}", "ab".repeat(32)),
                "idempotencyKey": "schema-stablecoin-1" }),
    )
    .await;
    call(
        "svc.order.get",
        json!({ "reference": uuid::Uuid::new_v4().to_string() }),
    )
    .await;
    call(
        "svc.webhook.delete",
        json!({ "endpointId": "not-a-uuid", "idempotencyKey": "schema-delete-2" }),
    )
    .await;

    let called: BTreeSet<&str> = results.iter().map(|(name, _)| name.as_str()).collect();
    let listed: BTreeSet<&str> = definitions
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(called, listed, "every tool is exercised");
    let errors = results
        .iter()
        .filter(|(_, result)| result["isError"] == true)
        .count();
    assert_eq!(errors, 5, "only the five deliberate errors failed: {results:#?}");
    let cases: Vec<Value> = results
        .iter()
        .map(|(name, result)| json!({ "tool": name, "schema": schema_of(name), "instance": result["structuredContent"] }))
        .collect();
    crate::mcp_clients::jsonschema_validates(&cases);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_key_whose_spend_limit_is_below_the_total_cannot_order_through_mcp_either() {
    let sandbox = Sandbox::start().await;
    let customer = sandbox.customer("Thrifty Labs", "all").await;
    let capped = sandbox
        .labctl(&[
            "keys",
            "create",
            "--customer",
            &customer.id,
            "--name",
            "capped",
            "--scopes",
            "all",
            "--spend-limit-cents",
            "100",
        ])
        .await
        .unwrap();
    let capped = tests::Customer {
        id: customer.id.clone(),
        key: capped["key"].as_str().unwrap().to_owned(),
    };
    let quote = quote(&sandbox, &capped, &["BPC-157"]).await;
    let body = order_body(quote["id"].as_str().unwrap());
    let rest = place_order(&sandbox, &capped, &body, "capped-rest-0001").await;
    assert_eq!(rest.error_code(), "spend_limit_exceeded", "{:?}", rest.body);
    let mut arguments = body;
    arguments["idempotencyKey"] = json!("capped-mcp-0001");
    let refused = sandbox
        .call_tool(&capped.key, "svc.order.create", arguments)
        .await;
    assert_eq!(refused["result"]["isError"], true);
    assert_eq!(
        refused["result"]["structuredContent"], rest.body,
        "same code and message as REST"
    );
    let text: Value =
        serde_json::from_str(refused["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, rest.body);
    let orders = sandbox.get(&customer.key, "/orders").await;
    assert_eq!(orders.body["data"], json!([]));
    sandbox.stop().await;
}

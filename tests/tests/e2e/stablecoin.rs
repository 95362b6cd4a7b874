//! The stablecoin rail across the whole mesh against a real anvil (npm `@foundry-rs/anvil`) with
//! the test ERC-20 of payments-svc's fixtures: a stablecoin order placed through REST carries
//! the exact `amount` block; the payer (an unlocked anvil account: the node signs, nobody here
//! holds a key) transfers exactly that amount; the hash submitted through REST is `confirming`;
//! after 64 more blocks the transfer is finalized and the request `confirmed`, the invoice and
//! the order paid, `payment.confirmed` delivered signed to the customer's webhook, and only then
//! does the order get its shipping label. The MCP tools `svc.payment.stablecoin.request` and
//! `.submit` run through the MCP endpoint; wrong amounts, unknown hashes and another customer's
//! order are refused through REST. Without the rail configured the method stays
//! `payment_method_unavailable` and nothing is written.

#[allow(dead_code)]
#[path = "../../../payments-svc/tests/api/chain/anvil.rs"]
pub(crate) mod anvil;

use crate::support::{place_order, quote};
use crate::webhooks_flow::verify;
use alloy::primitives::{Address, B256};
use anvil::Anvil;
use payments_svc::chain::ChainAddress;
use payments_svc::stablecoin::StablecoinSettings;
use payments_svc::stablecoin::settings::ProviderSetting;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Customer, Sandbox};

/// Anvil's chain id.
pub(crate) const ANVIL_CHAIN_ID: u64 = 31_337;

/// The rail's settings over `anvil`: two providers under different URLs of the same node (each
/// is read and cross-checked separately), a fast scanner.
pub(crate) fn rail_settings(anvil: &Anvil, token: Address, treasury: Address) -> StablecoinSettings {
    let port = anvil.url.rsplit(':').next().unwrap();
    let mut settings = StablecoinSettings::new(
        ANVIL_CHAIN_ID,
        ChainAddress(token),
        ChainAddress(treasury),
        [
            ProviderSetting {
                name: "provider-a".into(),
                url: anvil.url.clone(),
            },
            ProviderSetting {
                name: "provider-b".into(),
                url: format!("http://localhost:{port}"),
            },
        ],
    );
    settings.scan_interval = Duration::from_millis(200);
    settings.rpc_timeout = Duration::from_secs(5);
    settings
}

pub(crate) fn stablecoin_order(quote_id: &str, payer: Option<&str>) -> Value {
    let mut body = json!({ "quoteId": quote_id, "paymentMethod": "chain_stablecoin", "confirm": true });
    if let Some(payer) = payer {
        body["expectedPayerAddress"] = json!(payer);
    }
    body
}

pub(crate) async fn submit(
    sandbox: &Sandbox,
    customer: &Customer,
    reference: &str,
    hash: &str,
    key: &str,
) -> tests::Answer {
    sandbox
        .post(
            &customer.key,
            "/payments/stablecoin/submit",
            &json!({ "reference": reference, "transactionHash": hash }),
            &[("Idempotency-Key", key)],
        )
        .await
}

async fn order_count(sandbox: &Sandbox, customer: &Customer) -> usize {
    let listed = sandbox.get(&customer.key, "/orders").await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    listed.body["data"].as_array().unwrap().len()
}

async fn label_status(sandbox: &Sandbox, customer: &Customer, order_id: &str) -> u16 {
    sandbox
        .get(&customer.key, &format!("/shipments/{order_id}/label"))
        .await
        .status
}

#[tokio::test]
async fn a_stablecoin_order_is_paid_by_an_exact_transfer_confirmed_after_finality_and_only_then_labelled() {
    let anvil = Anvil::start().await;
    let token = anvil.deploy_token("USDC").await;
    let (payer, stranger, treasury) = (anvil.accounts[1], anvil.accounts[2], anvil.accounts[9]);
    anvil.mint(token, payer, 1_000_000_000_000).await;
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let rail = rail_settings(&anvil, token, treasury);
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.stablecoin = Some(rail);
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let alice = sandbox.customer("Chain Alice", "all").await;
    let bob = sandbox.customer("Chain Bob", "all").await;
    let hook = sandbox
        .post(
            &alice.key,
            "/webhooks",
            &json!({ "url": receiver.url("/alice"), "events": ["payment.confirmed"] }),
            &[("Idempotency-Key", "chain-hook-0001")],
        )
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let secret = hook.body["data"]["signingSecret"].as_str().unwrap().to_owned();

    // The payer address is required and must be EIP-55; refusals write nothing.
    let quoted = quote(&sandbox, &alice, &["BPC-157"]).await;
    let quote_id = quoted["id"].as_str().unwrap();
    let checksummed = payer.to_checksum(None);
    let wrong_checksum = {
        // Flip the case of the first letter of the hex part: a typo the checksum catches.
        let mut chars: Vec<char> = checksummed.chars().collect();
        let index = chars
            .iter()
            .skip(2)
            .position(|c| c.is_ascii_alphabetic())
            .unwrap()
            + 2;
        chars[index] = if chars[index].is_ascii_uppercase() {
            chars[index].to_ascii_lowercase()
        } else {
            chars[index].to_ascii_uppercase()
        };
        chars.into_iter().collect::<String>()
    };
    let lowercase = format!("{payer:#x}");
    let treasury_payer = treasury.to_checksum(None);
    for (payer, key) in [
        (None, "chain-bad-0001"),
        (Some(lowercase.as_str()), "chain-bad-0002"),
        (Some(wrong_checksum.as_str()), "chain-bad-0003"),
        (Some("0x1234"), "chain-bad-0004"),
        (Some(treasury_payer.as_str()), "chain-bad-0005"),
    ] {
        let refused = place_order(&sandbox, &alice, &stablecoin_order(quote_id, payer), key).await;
        assert_eq!(refused.status, 400, "{payer:?}: {:?}", refused.body);
        assert_eq!(refused.error_code(), "invalid_request", "{payer:?}");
        assert_eq!(
            refused.body["error"]["details"]["field"], "expectedPayerAddress",
            "{payer:?}"
        );
    }
    assert_eq!(order_count(&sandbox, &alice).await, 0, "refusals write nothing");

    // The order carries the exact amount block; no label before payment.
    let created = place_order(
        &sandbox,
        &alice,
        &stablecoin_order(quote_id, Some(&checksummed)),
        "chain-order-0001",
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = created.body["data"]["order"].clone();
    let order_id = order["id"].as_str().unwrap().to_owned();
    let order_number = order["orderNumber"].as_str().unwrap().to_owned();
    let total = order["totalCents"].as_i64().unwrap();
    let amount = &order["amount"];
    let reference = amount["referenceAtomic"].as_i64().unwrap();
    assert!((1..=9999).contains(&reference), "{amount}");
    let atomic = amount["atomic"].as_i64().unwrap();
    assert_eq!(atomic, total * 10_000 + reference);
    assert_eq!(
        amount["decimal"],
        format!("{}.{:02}{:04}", total / 100, total % 100, reference)
    );
    assert_eq!(
        amount["decimal"]
            .as_str()
            .unwrap()
            .split('.')
            .nth(1)
            .unwrap()
            .len(),
        6
    );
    assert!(amount["notice"].as_str().unwrap().contains("exactly"), "{amount}");
    assert_eq!(amount["tokenAddress"], token.to_checksum(None));
    assert_eq!(amount["targetAddress"], treasury.to_checksum(None));
    assert_eq!(amount["payerAddress"], checksummed.as_str());
    assert_eq!(amount["chainId"], ANVIL_CHAIN_ID);
    assert!(amount["expiresAt"].is_string());
    assert_eq!(order["paymentMethod"], "chain_stablecoin");
    assert_eq!(order["shipping"], Value::Null);
    // Replaying the creation answers the same order and amount.
    let replayed = place_order(
        &sandbox,
        &alice,
        &stablecoin_order(quote_id, Some(&checksummed)),
        "chain-order-0001",
    )
    .await;
    assert_eq!(replayed.body["data"]["order"]["amount"], order["amount"]);

    // The request reads the same through REST, prepare and the MCP tool.
    let read = sandbox
        .get(&alice.key, &format!("/payments/stablecoin/{order_number}"))
        .await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    let request = &read.body["data"]["stablecoinPayment"];
    assert_eq!(request["status"], "awaiting_transfer");
    assert_eq!(request["amount"]["atomic"], atomic);
    assert_eq!(request["amount"]["decimal"], amount["decimal"]);
    let prepared = sandbox
        .post(
            &alice.key,
            "/payments/prepare",
            &json!({ "orderReference": order_number }),
            &[("Idempotency-Key", "chain-prepare-0001")],
        )
        .await;
    assert_eq!(prepared.status, 200, "{:?}", prepared.body);
    assert_eq!(prepared.body["data"]["payment"]["state"], "awaiting_payment");
    assert_eq!(
        prepared.body["data"]["payment"]["stablecoin"]["amount"]["referenceAtomic"],
        reference
    );
    assert_eq!(
        prepared.body["data"]["payment"]["stablecoin"]["amount"]["decimal"],
        amount["decimal"]
    );
    let tool = sandbox
        .call_tool(
            &alice.key,
            "svc.payment.stablecoin.request",
            json!({ "reference": order_id }),
        )
        .await;
    let tool_request = &tool["result"]["structuredContent"]["data"]["stablecoinPayment"];
    assert_eq!(tool_request["amount"]["targetAddress"], amount["targetAddress"]);
    assert_eq!(tool_request["amount"]["decimal"], amount["decimal"]);

    // Another customer's order is indistinguishable from a missing one.
    let foreign = sandbox
        .get(&bob.key, &format!("/payments/stablecoin/{order_id}"))
        .await;
    assert_eq!(foreign.status, 404, "{:?}", foreign.body);
    assert_eq!(foreign.error_code(), "not_found");

    // Refusals: one atomic unit short, an unknown hash, another customer's order, a stranger.
    let short = anvil.transfer(token, payer, treasury, atomic as u64 - 1).await;
    let refused = submit(
        &sandbox,
        &alice,
        &order_id,
        &format!("{short:#x}"),
        "chain-submit-0001",
    )
    .await;
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "transfer_amount_mismatch");
    assert_eq!(refused.body["error"]["details"]["reason"], "underpaid");
    let unknown = format!("{:#x}", B256::repeat_byte(0x42));
    let refused = submit(&sandbox, &alice, &order_id, &unknown, "chain-submit-0002").await;
    assert_eq!(refused.status, 404, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "transaction_not_found");
    let refused = submit(&sandbox, &alice, &order_id, "0x1234", "chain-submit-0003").await;
    assert_eq!(refused.status, 400, "{:?}", refused.body);
    anvil.mint(token, stranger, 1_000_000_000).await;
    let exact_from_stranger = anvil.transfer(token, stranger, treasury, atomic as u64).await;
    let refused = submit(
        &sandbox,
        &alice,
        &order_id,
        &format!("{exact_from_stranger:#x}"),
        "chain-submit-0004",
    )
    .await;
    assert_eq!(
        refused.error_code(),
        "transfer_wrong_sender",
        "{:?}",
        refused.body
    );

    // The exact transfer, submitted through REST: confirming, still no label.
    let paid = anvil.transfer(token, payer, treasury, atomic as u64).await;
    let hash = format!("{paid:#x}");
    let refused = submit(&sandbox, &bob, &order_id, &hash, "chain-submit-0005").await;
    assert_eq!(
        refused.status, 404,
        "another customer's order: {:?}",
        refused.body
    );
    assert_eq!(refused.error_code(), "not_found");
    let submitted = submit(&sandbox, &alice, &order_number, &hash, "chain-submit-0006").await;
    assert_eq!(submitted.status, 200, "{:?}", submitted.body);
    let request = &submitted.body["data"]["stablecoinPayment"];
    assert_eq!(request["status"], "confirming");
    assert_eq!(request["transfer"]["transactionHash"], hash.as_str());
    let replay = submit(&sandbox, &alice, &order_number, &hash, "chain-submit-0006").await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // The MCP submit of the same hash answers the same request.
    let tool = sandbox
        .call_tool(
            &alice.key,
            "svc.payment.stablecoin.submit",
            json!({ "reference": order_id, "transactionHash": hash, "idempotencyKey": "chain-mcp-submit-1" }),
        )
        .await;
    assert_eq!(
        tool["result"]["structuredContent"]["data"]["stablecoinPayment"]["status"], "confirming",
        "{tool}"
    );
    anvil.mine(8).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(label_status(&sandbox, &alice, &order_id).await, 404);
    let order_now = sandbox.get(&alice.key, &format!("/orders/{order_id}")).await;
    assert_eq!(order_now.body["data"]["order"]["paymentState"], "unpaid");

    // 64 more blocks finalize it: confirmed with its proof, invoice and order paid.
    anvil.mine(70).await;
    let confirmed = wait_for("the request to be confirmed", Duration::from_secs(30), || async {
        let read = sandbox
            .get(&alice.key, &format!("/payments/stablecoin/{order_id}"))
            .await;
        (read.body["data"]["stablecoinPayment"]["status"] == "confirmed")
            .then(|| read.body["data"]["stablecoinPayment"].clone())
    })
    .await;
    assert_eq!(confirmed["proof"]["transactionHash"], hash.as_str());
    assert_eq!(
        confirmed["proof"]["scannerBlockHash"],
        confirmed["proof"]["blockHash"]
    );
    assert_eq!(confirmed["proof"]["providers"][1]["provider"], "provider-b");
    let invoice_number = order["payment"]["invoiceNumber"].as_str().unwrap();
    let invoice = sandbox
        .get(&alice.key, &format!("/invoices/{invoice_number}"))
        .await;
    assert_eq!(invoice.body["data"]["invoice"]["status"], "paid");
    wait_for("the order to be paid", Duration::from_secs(30), || async {
        let order = sandbox.get(&alice.key, &format!("/orders/{order_id}")).await;
        (order.body["data"]["order"]["paymentState"] == "paid").then_some(())
    })
    .await;

    // payment.confirmed is delivered signed; the label exists after it.
    let delivery = wait_for(
        "the payment.confirmed delivery",
        Duration::from_secs(30),
        || async {
            receiver
                .requests()
                .into_iter()
                .find(|request| request.path == "/alice")
        },
    )
    .await;
    let event = verify(&secret, &delivery);
    assert_eq!(event["type"], "payment.confirmed");
    assert_eq!(event["data"]["order_id"], order_id.as_str());
    let label = wait_for("the label after settlement", Duration::from_secs(30), || async {
        let label = sandbox
            .get(&alice.key, &format!("/shipments/{order_id}/label"))
            .await;
        (label.status == 200).then_some(label.body)
    })
    .await;
    assert!(label["data"]["label"]["trackingNumber"].is_string(), "{label}");

    // A paid order prepares as paid; a second transfer of the amount never pays it twice.
    let prepared = sandbox
        .post(
            &alice.key,
            "/payments/prepare",
            &json!({ "orderReference": order_id }),
            &[("Idempotency-Key", "chain-prepare-0002")],
        )
        .await;
    assert_eq!(prepared.body["data"]["payment"]["state"], "paid");
    assert_eq!(
        prepared.body["data"]["payment"]["stablecoin"]["status"],
        "confirmed"
    );
    let again = anvil.transfer(token, payer, treasury, atomic as u64).await;
    let refused = submit(
        &sandbox,
        &alice,
        &order_id,
        &format!("{again:#x}"),
        "chain-submit-0007",
    )
    .await;
    assert_eq!(refused.status, 409, "{:?}", refused.body);

    // The hosted card checkout page offers "settled stablecoin" with the same kind of request:
    // the payer names their wallet, sends exactly the amount shown, and submits the hash there.
    let card = crate::card_checkout::card_order(&sandbox, &alice, "chain-card-order-1").await;
    let card_id = card["id"].as_str().unwrap().to_owned();
    let url = card["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let page = crate::card_checkout::open_page(&sandbox, &url).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("id=\"payer-address\""), "{}", page.html);
    let page = crate::card_checkout::submit(
        &sandbox,
        &format!("{url}/stablecoin"),
        &[("payer_address", checksummed.as_str())],
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.html);
    let card_request = sandbox
        .get(&alice.key, &format!("/payments/stablecoin/{card_id}"))
        .await;
    let card_amount = card_request.body["data"]["stablecoinPayment"]["amount"].clone();
    assert_eq!(
        card_amount["atomic"].as_i64().unwrap(),
        card["totalCents"].as_i64().unwrap() * 10_000 + card_amount["referenceAtomic"].as_i64().unwrap()
    );
    assert!(
        page.html.contains(card_amount["decimal"].as_str().unwrap()),
        "{}",
        page.html
    );
    assert!(page.html.contains(&treasury.to_checksum(None)), "{}", page.html);
    assert!(page.html.contains("id=\"transaction-hash\""), "{}", page.html);
    let sent = anvil
        .transfer(token, payer, treasury, card_amount["atomic"].as_u64().unwrap())
        .await;
    let page = crate::card_checkout::submit(
        &sandbox,
        &format!("{url}/stablecoin"),
        &[("transaction_hash", format!("{sent:#x}").as_str())],
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(page.outcome(), "confirming", "{}", page.html);
    anvil.mine(70).await;
    let card_invoice = card["payment"]["invoiceNumber"].as_str().unwrap().to_owned();
    wait_for(
        "the card order's invoice paid in stablecoin",
        Duration::from_secs(30),
        || async {
            let invoice = sandbox
                .get(&alice.key, &format!("/invoices/{card_invoice}"))
                .await;
            (invoice.body["data"]["invoice"]["status"] == "paid").then_some(())
        },
    )
    .await;

    // The tools' success outputs match their declared output schemas.
    let listed = sandbox
        .mcp(
            &alice.key,
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} }),
        )
        .await;
    let schema_of = |name: &str| {
        listed.body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["outputSchema"].clone())
            .unwrap()
    };
    let read_tool = sandbox
        .call_tool(
            &alice.key,
            "svc.payment.stablecoin.request",
            json!({ "reference": order_number }),
        )
        .await;
    crate::mcp_clients::jsonschema_validates(&[
        json!({ "tool": "svc.payment.stablecoin.request", "schema": schema_of("svc.payment.stablecoin.request"),
                "instance": read_tool["result"]["structuredContent"] }),
        json!({ "tool": "svc.payment.stablecoin.submit", "schema": schema_of("svc.payment.stablecoin.submit"),
                "instance": tool["result"]["structuredContent"] }),
    ]);
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn without_the_rail_a_stablecoin_order_is_refused_as_unavailable_and_nothing_is_written() {
    let sandbox = Sandbox::start().await;
    let customer = sandbox.customer("No Chain", "all").await;
    let quoted = quote(&sandbox, &customer, &["BPC-157"]).await;
    let payer = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    for (spelling, key) in [
        ("chain_stablecoin", "nochain-order-0001"),
        ("stablecoin_erc20", "nochain-order-0002"),
    ] {
        let body = json!({ "quoteId": quoted["id"], "paymentMethod": spelling, "confirm": true,
                           "expectedPayerAddress": payer });
        let refused = place_order(&sandbox, &customer, &body, key).await;
        assert_eq!(refused.status, 400, "{:?}", refused.body);
        assert_eq!(refused.error_code(), "payment_method_unavailable");
        assert_eq!(
            refused.body["error"]["details"]["availableMethods"],
            json!(["bank_invoice", "card_checkout"])
        );
    }
    assert_eq!(order_count(&sandbox, &customer).await, 0);
    let read = sandbox
        .get(&customer.key, "/payments/stablecoin/ORD-2026-000001")
        .await;
    assert_eq!(read.error_code(), "payment_method_unavailable", "{:?}", read.body);
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

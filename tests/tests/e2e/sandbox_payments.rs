//! The payment scenarios of the sandbox simulation (docs/sandbox.md): a declined card on a card
//! order's open checkout, shown on its hosted page like a real decline; and a reorg of a
//! confirming stablecoin transfer against a real anvil, `payment.reorged` reaching the webhook.

use crate::card_checkout::{card_order, open_page, pay_with};
use crate::sandbox_simulation::simulate;
use crate::stablecoin::anvil::Anvil;
use crate::stablecoin::{rail_settings, stablecoin_order, submit};
use crate::support::{place_order, quote};
use crate::webhooks_flow::verify;
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::json;
use std::time::Duration;
use tests::Sandbox;

#[tokio::test]
async fn a_simulated_card_decline_shows_on_the_hosted_page_and_the_card_order_can_still_be_paid() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Sandbox Card Buyer", "all").await;
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();
    let order = card_order(&sandbox, &agent, "sandbox-card-0001").await;
    let order_id = order["id"].as_str().unwrap();
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let declined = simulate(&sandbox, &agent.key, order_id, "card_declined").await;
    assert_eq!(declined.status, 200, "{:?}", declined.body);
    let simulation = &declined.body["data"]["simulation"];
    assert_eq!(simulation["subject"], "payment");
    assert_eq!(simulation["status"], "declined");
    assert_eq!(simulation["ids"]["declineCode"], "generic_decline");
    assert_eq!(simulation["events"], json!([]), "a decline is no event");
    let page = open_page(&sandbox, &hosted_url).await;
    assert_eq!(
        page.session_status(),
        "open",
        "a decline leaves the session usable"
    );
    assert!(page.html.contains("Your card was declined."), "{}", page.html);
    let invoice = sandbox.get(&agent.key, &format!("/invoices/{order_id}")).await;
    assert_ne!(
        invoice.body["data"]["invoice"]["status"], "paid",
        "{:?}",
        invoice.body
    );
    // The card that pays still pays; then a decline no longer fits the order.
    let paid = pay_with(&sandbox, &hosted_url, crate::card_checkout::SUCCESS_CARD).await;
    assert_eq!(paid.outcome(), "paid", "{}", paid.html);
    let late = simulate(&sandbox, &agent.key, order_id, "card_declined").await;
    assert_eq!(late.status, 409, "{:?}", late.body);
    assert_eq!(late.body["error"]["code"], "scenario_not_applicable");
    // A bank order has no card to decline.
    let (bank_order, _, _) = crate::support::bank_order(&sandbox, &agent, "sandbox-bank-0001").await;
    let refused = simulate(&sandbox, &agent.key, &bank_order, "card_declined").await;
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(refused.body["error"]["details"]["status"], "bank_invoice");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_simulated_reorg_returns_a_confirming_stablecoin_payment_to_awaiting_a_transfer() {
    let anvil = Anvil::start().await;
    let token = anvil.deploy_token("USDC").await;
    let (payer, treasury) = (anvil.accounts[1], anvil.accounts[9]);
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
    let agent = sandbox.customer("Sandbox Chain", "all").await;
    sandbox
        .labctl(&["customers", "sandbox", &agent.id, "on"])
        .await
        .unwrap();
    let hook = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &json!({ "url": receiver.url("/chain"), "events": ["payment.reorged"] }),
            &[("Idempotency-Key", "sandbox-chain-hook-1")],
        )
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let secret = hook.body["data"]["signingSecret"].as_str().unwrap().to_owned();
    let quoted = quote(&sandbox, &agent, &["BPC-157"]).await;
    let body = stablecoin_order(quoted["id"].as_str().unwrap(), Some(&payer.to_checksum(None)));
    let created = place_order(&sandbox, &agent, &body, "sandbox-chain-order-1").await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order = &created.body["data"]["order"];
    let order_id = order["id"].as_str().unwrap().to_owned();
    let early = simulate(&sandbox, &agent.key, &order_id, "stablecoin_reorg").await;
    assert_eq!(early.status, 409, "nothing observed yet: {:?}", early.body);
    assert_eq!(early.body["error"]["details"]["status"], "awaiting_transfer");

    let atomic = order["amount"]["atomic"].as_i64().unwrap();
    let paid = anvil.transfer(token, payer, treasury, atomic as u64).await;
    let hash = format!("{paid:#x}");
    let submitted = submit(&sandbox, &agent, &order_id, &hash, "sandbox-chain-submit-1").await;
    assert_eq!(submitted.status, 200, "{:?}", submitted.body);
    assert_eq!(
        submitted.body["data"]["stablecoinPayment"]["status"],
        "confirming"
    );

    let reorged = simulate(&sandbox, &agent.key, &order_id, "stablecoin_reorg").await;
    assert_eq!(reorged.status, 200, "{:?}", reorged.body);
    let simulation = &reorged.body["data"]["simulation"];
    assert_eq!(simulation["status"], "awaiting_transfer");
    assert_eq!(simulation["events"], json!(["payment.reorged"]));
    let request = sandbox
        .get(&agent.key, &format!("/payments/stablecoin/{order_id}"))
        .await;
    assert_eq!(
        request.body["data"]["stablecoinPayment"]["status"], "awaiting_transfer",
        "{:?}",
        request.body
    );
    let delivery = wait_for(
        "payment.reorged at the receiver",
        Duration::from_secs(30),
        || async { receiver.requests_to("/chain").into_iter().next() },
    )
    .await;
    let body = verify(&secret, &delivery);
    assert_eq!(body["type"], "payment.reorged");
    assert_eq!(body["data"]["order_id"], order_id.as_str());
    sandbox.stop().await;
}

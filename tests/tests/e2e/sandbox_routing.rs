//! A sandbox customer in a deployment that runs a real carrier and a real card processor
//! (docs/sandbox.md): its orders' labels come from the built-in sandbox carrier, its card
//! checkouts run on the sandbox processor with a test-mode notice, its bank invoices name the
//! demo account, and the stablecoin rail (a real chain) is refused to it outside development
//! mode, while a live customer of the same deployment keeps the real adapters. Here the EasyPost
//! and PSP doubles stand for the real carrier and processor and count what reaches them.

use crate::card_checkout::{SUCCESS_CARD, card_order, open_page, pay_with};
use crate::card_psp::{SECRET_KEY, WEBHOOK_SECRET, start_double};
use crate::shipping_carrier::easypost;
use crate::stablecoin::anvil::Anvil;
use crate::stablecoin::{rail_settings, stablecoin_order};
use crate::support::{bank_order, place_order, quote};
use payments_svc::config::{BankAccount, CardProcessorSettings};
use payments_svc::processor::stripe::StripeSettings;
use platform::testing::wait_for;
use serde_json::json;
use std::time::Duration;
use tests::Sandbox;
use tests::easypost::EasyPostDouble;

/// The lab's live receiving account of this deployment (the demo account is the sandbox's).
fn live_bank() -> BankAccount {
    BankAccount {
        beneficiary: "Meridian Analytical Laboratories, Inc.".to_owned(),
        bank_name: "First Live Bank".to_owned(),
        account_number: "987650001234".to_owned(),
        routing_number: "021000021".to_owned(),
        swift: "FLBKUS33".to_owned(),
    }
}

#[tokio::test]
async fn a_sandbox_customers_orders_use_the_sandbox_carrier_processor_and_bank_account_where_live_ones_use_the_real_ones()
 {
    let carrier = EasyPostDouble::start().await;
    let (psp, psp_base) = start_double().await;
    let carrier_url = carrier.base_url();
    let sandbox = Sandbox::start_with(|settings| {
        settings.shipping.carrier = easypost(carrier_url);
        settings.payments.card_processor = CardProcessorSettings::Stripe(StripeSettings {
            api_base: psp_base.clone(),
            secret_key: SECRET_KEY.to_owned().into(),
            webhook_secret: WEBHOOK_SECRET.to_owned().into(),
        });
        settings.payments.bank = live_bank();
    })
    .await;
    let live = sandbox.customer("Live Lena", "all").await;
    let tester = sandbox.customer("Sandbox Sam", "all").await;
    sandbox
        .labctl(&["customers", "sandbox", &tester.id, "on"])
        .await
        .unwrap();

    // Card orders: the live one's label is the carrier's, the sandbox one's the sandbox carrier's.
    let live_card = card_order(&sandbox, &live, "routing-live-card").await;
    let test_card = card_order(&sandbox, &tester, "routing-test-card").await;
    assert_eq!(test_card["sandbox"], true, "{test_card}");
    let live_tracking = live_card["shipping"]["trackingNumber"]
        .as_str()
        .unwrap_or_default();
    let test_tracking = test_card["shipping"]["trackingNumber"]
        .as_str()
        .unwrap_or_default();
    assert!(live_tracking.starts_with("1ZEZD"), "{live_card}");
    assert!(
        test_tracking.starts_with("1ZLAB001"),
        "the sandbox carrier's tracking number: {test_card}"
    );
    assert_eq!(
        carrier.labels_bought(),
        1,
        "only the live order's label was bought from the carrier"
    );

    // The sandbox checkout takes a test card on our page, marked test mode; the PSP never hears of it.
    let test_url = test_card["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let page = open_page(&sandbox, &test_url).await;
    assert_eq!(page.status, 200);
    assert!(page.html.contains("id=\"test-mode\""), "{}", page.html);
    assert!(page.html.contains("id=\"card-number\""), "{}", page.html);
    let paid = pay_with(&sandbox, &test_url, SUCCESS_CARD).await;
    assert_eq!(paid.outcome(), "paid", "{}", paid.html);
    let test_order_id = test_card["id"].as_str().unwrap();
    let invoice = sandbox
        .get(&tester.key, &format!("/invoices/{test_order_id}"))
        .await;
    assert_eq!(
        invoice.body["data"]["invoice"]["status"], "paid",
        "{:?}",
        invoice.body
    );
    assert_eq!(
        *psp.create_calls.lock().unwrap(),
        0,
        "no PSP session for the sandbox order"
    );
    // The live checkout goes to the PSP's page, with no test-mode notice.
    let live_url = live_card["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let live_page = open_page(&sandbox, &live_url).await;
    assert!(
        live_page.html.contains("id=\"processor-link\""),
        "{}",
        live_page.html
    );
    assert!(!live_page.html.contains("id=\"test-mode\""), "{}", live_page.html);
    assert_eq!(*psp.create_calls.lock().unwrap(), 1);

    // Bank invoices: the live one names the lab's account, the sandbox one the demo account.
    let (live_bank_order, _, _) = bank_order(&sandbox, &live, "routing-live-bank").await;
    let (test_bank_order, _, _) = bank_order(&sandbox, &tester, "routing-test-bank").await;
    let account = |body: &serde_json::Value| {
        body["data"]["invoice"]["bankInstructions"]["accountNumber"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let live_invoice = sandbox
        .get(&live.key, &format!("/invoices/{live_bank_order}"))
        .await;
    let test_invoice = sandbox
        .get(&tester.key, &format!("/invoices/{test_bank_order}"))
        .await;
    assert_eq!(
        account(&live_invoice.body),
        live_bank().account_number,
        "{:?}",
        live_invoice.body
    );
    assert_eq!(
        account(&test_invoice.body),
        BankAccount::default().account_number,
        "{:?}",
        test_invoice.body
    );
    assert_eq!(carrier.labels_bought(), 2, "the live bank order's label only");

    // The carrier scan scripts play on the sandbox label even though the deployment's carrier is real.
    let delivered = sandbox
        .post(
            &tester.key,
            &format!("/orders/{test_order_id}/simulate"),
            &json!({ "scenario": "delivered" }),
            &[],
        )
        .await;
    assert_eq!(delivered.status, 200, "{:?}", delivered.body);
    assert_eq!(delivered.body["data"]["simulation"]["status"], "delivered");
    wait_for(
        "the sandbox order to follow the sandbox carrier's scans",
        Duration::from_secs(20),
        || async {
            let order = sandbox
                .get(&tester.key, &format!("/orders/{test_order_id}"))
                .await;
            (order.body["data"]["order"]["status"] == "in_transit").then_some(())
        },
    )
    .await;
    assert_eq!(carrier.labels_bought(), 2);
    sandbox.stop().await;
}

#[tokio::test]
async fn the_stablecoin_rail_is_refused_to_a_sandbox_customer_outside_development_mode_and_nothing_is_written()
 {
    let anvil = Anvil::start().await;
    let token = anvil.deploy_token("USDC").await;
    let (payer, treasury) = (anvil.accounts[1], anvil.accounts[9]);
    let rail = rail_settings(&anvil, token, treasury);
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.stablecoin = Some(rail);
        // What production mode sets (the rail watches a real chain).
        settings.payments.stablecoin_for_sandbox = false;
    })
    .await;
    let live = sandbox.customer("Live Chain Payer", "all").await;
    let tester = sandbox.customer("Sandbox Chain Payer", "all").await;
    sandbox
        .labctl(&["customers", "sandbox", &tester.id, "on"])
        .await
        .unwrap();
    let payer = payer.to_checksum(None);

    let test_quote = quote(&sandbox, &tester, &["BPC-157"]).await;
    let refused = place_order(
        &sandbox,
        &tester,
        &stablecoin_order(test_quote["id"].as_str().unwrap(), Some(&payer)),
        "routing-test-chain",
    )
    .await;
    assert_eq!(
        refused.body["error"]["code"], "payment_method_unavailable",
        "{:?}",
        refused.body
    );
    assert!(
        refused.status >= 400 && refused.status < 500,
        "{}",
        refused.status
    );
    assert_eq!(
        refused.body["error"]["details"]["availableMethods"],
        json!(["bank_invoice", "card_checkout"])
    );
    let orders = sandbox.get(&tester.key, "/orders").await;
    assert_eq!(orders.body["data"], json!([]), "{:?}", orders.body);
    // The same quote still orders on another rail.
    let card = place_order(
        &sandbox,
        &tester,
        &json!({ "quoteId": test_quote["id"], "paymentMethod": "card_checkout", "confirm": true }),
        "routing-test-card-after",
    )
    .await;
    assert_eq!(card.status, 201, "{:?}", card.body);

    // A live customer of the same deployment pays on the chain.
    let live_quote = quote(&sandbox, &live, &["BPC-157"]).await;
    let placed = place_order(
        &sandbox,
        &live,
        &stablecoin_order(live_quote["id"].as_str().unwrap(), Some(&payer)),
        "routing-live-chain",
    )
    .await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);
    sandbox.stop().await;
}

//! The hosted checkout page in a real browser: Debian's chromium driven by npm `playwright-core`
//! (`tests/browser/checkout.mjs`) opens the `hostedUrl` of a card order, is declined with the
//! decline card and pays with the success card; the order reaches `paid` and `invoice.updated`
//! arrives as a signed webhook; the paid link offers no second payment, an expired link none at
//! all, and `POST /payments/prepare` returns a fresh link after expiry and the paid state after
//! payment.
//!
//! `deploy/local/test.sh` installs chromium, Node.js and the npm package and sets
//! `LAB_REQUIRE_BROWSER=1`, so there this test cannot skip; elsewhere it skips with a note when
//! the browser tools are missing.

use crate::card_checkout::{DECLINE_CARD, SUCCESS_CARD, card_order, expire_session, wait_for_order};
use hmac::{Hmac, Mac};
use platform::test_receiver::TestReceiver;
use platform::testing::wait_for;
use serde_json::{Value, json};
use sha2::Sha256;
use std::path::PathBuf;
use std::time::Duration;
use tests::Sandbox;

fn browser_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// True when node, the npm package and chromium are there; panics when they are required.
pub fn browser_available() -> bool {
    let chromium = std::env::var("CHROMIUM_PATH").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    let package = browser_dir()
        .join("node_modules/playwright-core/package.json")
        .exists();
    let available = node && package && std::path::Path::new(&chromium).exists();
    if !available && std::env::var_os("LAB_REQUIRE_BROWSER").is_some() {
        panic!(
            "LAB_REQUIRE_BROWSER is set but the browser tools are missing (node: {node}, \
             tests/browser/node_modules: {package}, {chromium})"
        );
    }
    if !available {
        println!("note: chromium, node or tests/browser/node_modules missing; skipping the browser test");
    }
    available
}

/// Runs the browser driver on `url` and returns what the page showed.
pub async fn drive(url: &str, action: &str, card: &str) -> Value {
    let (url, action, card) = (url.to_owned(), action.to_owned(), card.to_owned());
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .current_dir(browser_dir())
            .args(["checkout.mjs", &url, &action, &card])
            .output()
            .expect("node runs")
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "the browser driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the driver prints JSON")
}

/// Verifies a webhook delivery's `X-SVC-Signature` over the raw body with `secret`.
pub fn signed_body(secret: &str, header: &str, body: &[u8]) -> Option<Value> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value.to_owned()),
            _ => {}
        }
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(format!("{}.", timestamp?).as_bytes());
    mac.update(body);
    let expected = hex::encode(mac.finalize().into_bytes());
    signatures
        .contains(&expected)
        .then(|| serde_json::from_slice(body).ok())
        .flatten()
}

#[tokio::test]
async fn a_browser_pays_the_hosted_page_after_a_decline_and_the_paid_or_expired_link_takes_no_more() {
    if !browser_available() {
        return;
    }
    let receiver = TestReceiver::start().await;
    let ca = receiver.ca_pem();
    let sandbox = Sandbox::start_with(|settings| {
        settings.webhooks.allow_loopback_targets = true;
        settings.webhooks.extra_root_certificates_pem = vec![ca];
    })
    .await;
    let agent = sandbox.customer("Browser Buyer", "all").await;
    let registered = sandbox
        .post(
            &agent.key,
            "/webhooks",
            &json!({ "url": receiver.url("/hooks"), "events": ["invoice.updated"] }),
            &[("Idempotency-Key", "browser-hook-0001")],
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let secret = registered.body["data"]["signingSecret"]
        .as_str()
        .unwrap()
        .to_owned();

    let order = card_order(&sandbox, &agent, "browser-order-0001").await;
    let order_id = order["id"].as_str().unwrap().to_owned();
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();

    let opened = drive(&hosted_url, "inspect", "").await;
    assert_eq!(opened["status"], 200, "{opened}");
    assert_eq!(opened["sessionStatus"], "open");
    assert_eq!(opened["hasCardForm"], true);
    assert!(opened["total"].as_str().unwrap().starts_with('$'));

    let declined = drive(&hosted_url, "pay", DECLINE_CARD).await;
    assert_eq!(declined["outcome"], "declined", "{declined}");
    assert_eq!(declined["sessionStatus"], "open");
    assert_eq!(declined["hasCardForm"], true, "the session stays usable");

    let paid = drive(&hosted_url, "pay", SUCCESS_CARD).await;
    assert_eq!(paid["outcome"], "paid", "{paid}");
    assert_eq!(paid["sessionStatus"], "completed");
    wait_for_order(&sandbox, &agent, &order_id, "paid").await;

    let update = wait_for(
        "a signed invoice.updated webhook",
        Duration::from_secs(30),
        || async {
            receiver.requests_to("/hooks").into_iter().find_map(|request| {
                let body = signed_body(&secret, &request.header("x-svc-signature"), &request.body)?;
                (body["type"] == "invoice.updated" && body["data"]["order_id"] == order_id.as_str())
                    .then_some(body)
            })
        },
    )
    .await;
    assert_eq!(update["data"]["status"], "paid");
    assert_eq!(update["data"]["previous_status"], "open");

    let again = drive(&hosted_url, "inspect", "").await;
    assert_eq!(again["sessionStatus"], "completed");
    assert_eq!(again["hasCardForm"], false, "a paid link cannot be paid twice");

    // Another order whose link expires: no form, and prepare answers a fresh link.
    let late = card_order(&sandbox, &agent, "browser-order-0002").await;
    let late_url = late["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    expire_session(&sandbox, &late_url).await;
    let expired = drive(&late_url, "inspect", "").await;
    assert_eq!(expired["sessionStatus"], "expired");
    assert_eq!(expired["hasCardForm"], false, "an expired link cannot be paid");
    let prepare = |key: &'static str| {
        let body = json!({ "orderReference": late["id"] });
        let sandbox = &sandbox;
        let agent = &agent;
        async move {
            sandbox
                .post(
                    &agent.key,
                    "/payments/prepare",
                    &body,
                    &[("Idempotency-Key", key)],
                )
                .await
        }
    };
    let fresh = prepare("browser-prepare-0001").await;
    let fresh_url = fresh.body["data"]["payment"]["checkout"]["hostedUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(fresh_url, late_url);
    let paid_fresh = drive(&fresh_url, "pay", SUCCESS_CARD).await;
    assert_eq!(paid_fresh["outcome"], "paid", "{paid_fresh}");
    wait_for_order(&sandbox, &agent, late["id"].as_str().unwrap(), "paid").await;
    let after = prepare("browser-prepare-0002").await;
    assert_eq!(after.body["data"]["payment"]["state"], "paid");
    sandbox.stop().await;
}

//! The stablecoin rail halted by a provider that serves another chain, across the whole mesh:
//! provider B (payments-svc's recording proxy in front of the same anvil, answering mainnet's
//! `eth_chainId` and forwarding everything else) halts the rail from the start; a genuine exact
//! transfer submitted through REST answers 503 `chain_unavailable` (`chain_mismatch`, with
//! `Retry-After`), the scanner confirms nothing and the gauge `stablecoin_chain_mismatch` shows on
//! the metrics port; once provider B serves anvil's chain again the same Idempotency-Key verifies
//! the transfer (the 503 was not stored) and the request is confirmed.

#[allow(dead_code)]
#[path = "../../../payments-svc/tests/api/chain/proxy.rs"]
mod proxy;

use crate::stablecoin::anvil::Anvil;
use crate::stablecoin::{rail_settings, stablecoin_order, submit};
use crate::support::{place_order, quote};
use platform::testing::{holds_for, wait_for};
use proxy::{Behaviour, RpcProxy};
use std::time::Duration;
use tests::Sandbox;

/// The chain id a provider pointed at Ethereum mainnet answers.
const MAINNET: u64 = 1;

/// The summed value of `stablecoin_chain_mismatch{provider="…"}` in a scrape of the sandbox.
async fn mismatch_gauge(sandbox: &Sandbox, provider: &str) -> Option<f64> {
    let addr = sandbox
        .in_process()
        .metrics_addr
        .expect("a sandbox serves metrics");
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let prefix = format!("stablecoin_chain_mismatch{{provider=\"{provider}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map(|value| value.trim().parse().unwrap())
}

#[tokio::test]
async fn a_provider_serving_another_chain_halts_the_rail_so_a_rest_submission_answers_503_chain_mismatch_until_it_serves_ours_again()
 {
    let anvil = Anvil::start().await;
    let token = anvil.deploy_token("USDC").await;
    let (payer, treasury) = (anvil.accounts[1], anvil.accounts[9]);
    anvil.mint(token, payer, 1_000_000_000_000).await;
    let provider_b = RpcProxy::start(&anvil.url).await;
    provider_b.set(Behaviour::OtherChain(MAINNET));
    let mut rail = rail_settings(&anvil, token, treasury);
    rail.providers[1].url = provider_b.url.clone();
    let sandbox = Sandbox::start_with(|settings| settings.payments.stablecoin = Some(rail)).await;
    let alice = sandbox.customer("Chain Halted", "all").await;

    // Orders are still given their amount while the rail is halted.
    let quoted = quote(&sandbox, &alice, &["BPC-157"]).await;
    let order = stablecoin_order(quoted["id"].as_str().unwrap(), Some(&payer.to_checksum(None)));
    let created = place_order(&sandbox, &alice, &order, "chain-halt-order-1").await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let order_id = created.body["data"]["order"]["id"].as_str().unwrap().to_owned();
    let atomic = created.body["data"]["order"]["amount"]["atomic"]
        .as_u64()
        .unwrap();
    let paid = anvil.transfer(token, payer, treasury, atomic).await;
    let hash = format!("{paid:#x}");

    let refused = submit(&sandbox, &alice, &order_id, &hash, "chain-halt-submit-1").await;
    assert_eq!(refused.status, 503, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "chain_unavailable");
    assert_eq!(refused.body["error"]["details"]["reason"], "chain_mismatch");
    assert!(refused.header("retry-after").is_some(), "{:?}", refused.headers);
    assert!(
        mismatch_gauge(&sandbox, "b").await.unwrap() >= 1.0,
        "the metrics port shows the halted rail"
    );
    assert!(mismatch_gauge(&sandbox, "a").await.is_some());

    anvil.mine(70).await;
    let read = || async {
        sandbox
            .get(&alice.key, &format!("/payments/stablecoin/{order_id}"))
            .await
            .body["data"]["stablecoinPayment"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    holds_for(
        "the request stays awaiting_transfer while provider B serves another chain",
        Duration::from_secs(2),
        || async { read().await == "awaiting_transfer" },
    )
    .await;

    // Provider B serves anvil's chain again: the same key verifies (the 503 was not stored).
    provider_b.set(Behaviour::Honest);
    let verified = submit(&sandbox, &alice, &order_id, &hash, "chain-halt-submit-1").await;
    assert_eq!(verified.status, 200, "{:?}", verified.body);
    assert_eq!(
        verified.body["data"]["stablecoinPayment"]["transfer"]["transactionHash"],
        hash.as_str()
    );
    wait_for("the request to be confirmed", Duration::from_secs(30), || async {
        (read().await == "confirmed").then_some(())
    })
    .await;
    sandbox.stop().await;
}

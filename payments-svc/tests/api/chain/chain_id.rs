//! Both providers must serve the configured chain (`eth_chainId`), at start and before every
//! scanner pass and submission: a provider answering another chain id halts the rail (nothing
//! observed or confirmed, submissions answer 503 `chain_unavailable` with `reason =
//! chain_mismatch`) until both match again; a provider that does not answer is no mismatch.
//!
//! The proxies forward everything else to the same anvil, so without the chain-id check these
//! transfers would be observed and confirmed. The gauge is the process's, shared with the other
//! tests of this binary: the test halted by provider B reads `b`, the one halted by provider A
//! reads `a`, and no other test halts a rail.

use super::proxy::Behaviour;
use super::{Chain, start_chain, start_chain_with};
use crate::helpers::code_of;
use platform::testing::{holds_for, wait_for};
use std::time::Duration;

const FIFTEEN_MINUTES: Duration = Duration::from_secs(15 * 60);
/// Anvil's chain id, the one the rail is configured with.
const ANVIL_CHAIN_ID: u64 = 31_337;
/// What a provider pointed at Ethereum mainnet answers.
const MAINNET: u64 = 1;

fn mismatch_gauge(provider: &'static str) -> i64 {
    platform::metrics::metrics()
        .stablecoin_chain_mismatch
        .get_or_create(&platform::metrics::ChainProviderLabels { provider })
        .get()
}

/// The scanner's checkpoint (`None` before its first read).
async fn checkpoint(chain: &Chain) -> Option<i64> {
    sqlx::query_scalar("SELECT block_number FROM payments.chain_checkpoints")
        .fetch_optional(&chain.app.pool)
        .await
        .unwrap()
}

/// Payments recorded for the invoice of `order_id`.
async fn payments_of(chain: &Chain, order_id: &str) -> i64 {
    let invoice = chain.app.get_invoice(chain.customer, order_id).await.unwrap();
    sqlx::query_scalar("SELECT count(*) FROM payments.payments WHERE invoice_id = $1::uuid")
        .bind(&invoice.id)
        .fetch_one(&chain.app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_provider_serving_another_chain_at_start_halts_the_rail_so_a_genuine_transfer_is_neither_submitted_nor_confirmed()
 {
    let chain = start_chain_with(
        FIFTEEN_MINUTES,
        [Behaviour::Honest, Behaviour::OtherChain(MAINNET)],
    )
    .await;
    // Issuing requests is not settling: an order can still be given its amount.
    let request = chain.new_request(8_800).await;
    let hash = chain.pay_exactly(&request).await;

    let refused = chain.submit(&request.order_id, hash).await.unwrap_err();
    assert_eq!(code_of(&refused), "chain_unavailable");
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    let details = platform::error::ApiError::from_status(&refused).details.unwrap();
    assert_eq!(details["reason"], "chain_mismatch");
    assert!(details["retryAfterSeconds"].as_u64().is_some(), "{details}");
    assert!(
        mismatch_gauge("b") >= 1,
        "stablecoin_chain_mismatch{{provider=\"b\"}} counts the halted rail"
    );

    // Finalized far beyond the transfer: a running scanner would observe and confirm it within
    // a few 100 ms passes.
    chain.anvil.mine(70).await;
    holds_for(
        "the request stays awaiting_transfer while provider B serves another chain",
        Duration::from_secs(2),
        || async { chain.get(&request.order_id).await.status == "awaiting_transfer" },
    )
    .await;
    assert_eq!(checkpoint(&chain).await, None, "no pass read a log");
    assert_eq!(chain.event_types_of(&request.id).await, ["payment.requested"]);
    assert_eq!(payments_of(&chain, &request.order_id).await, 0);

    // Provider B fixed: the same transfer is found by the scanner and confirmed, once.
    chain.provider_b.set(Behaviour::Honest);
    chain.wait_for_status(&request.order_id, "confirmed").await;
    assert_eq!(payments_of(&chain, &request.order_id).await, 1);
}

#[tokio::test]
async fn a_chain_mismatch_appearing_between_scans_stops_confirmation_and_once_both_providers_match_the_transfer_is_confirmed_exactly_once()
 {
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let gauge_before = mismatch_gauge("a");
    let request = chain.new_request(6_600).await;
    let hash = chain.pay_exactly(&request).await;
    assert_eq!(
        chain.submit(&request.order_id, hash).await.unwrap().status,
        "confirming"
    );

    // Provider A (the one whose logs the scanner reads) now answers another chain id.
    chain.provider_a.set(Behaviour::OtherChain(MAINNET));
    wait_for(
        "a scanner pass to see provider A's chain id",
        Duration::from_secs(10),
        || async { (mismatch_gauge("a") > gauge_before).then_some(()) },
    )
    .await;
    let checkpoint_at_mismatch = checkpoint(&chain).await;
    chain.anvil.mine(70).await;
    holds_for(
        "the request stays confirming while provider A serves another chain",
        Duration::from_secs(2),
        || async { chain.get(&request.order_id).await.status == "confirming" },
    )
    .await;
    assert_eq!(
        checkpoint(&chain).await,
        checkpoint_at_mismatch,
        "skipped passes read no log"
    );
    let seen_by_scanner: Option<String> =
        sqlx::query_scalar("SELECT scanner_block_hash FROM payments.chain_transfers WHERE tx_hash = $1")
            .bind(format!("{hash:#x}"))
            .fetch_one(&chain.app.pool)
            .await
            .unwrap();
    assert_eq!(seen_by_scanner, None);
    assert_eq!(payments_of(&chain, &request.order_id).await, 0);

    // Both match again: settlement resumes, and the transfer is confirmed exactly once.
    chain.provider_a.set(Behaviour::Honest);
    let confirmed = chain.wait_for_status(&request.order_id, "confirmed").await;
    assert_eq!(confirmed.transfer.unwrap().transaction_hash, format!("{hash:#x}"));
    wait_for(
        "the gauge to stop counting this rail",
        Duration::from_secs(10),
        || async { (mismatch_gauge("a") == gauge_before).then_some(()) },
    )
    .await;
    chain.anvil.mine(5).await;
    holds_for(
        "one payment and one payment.confirmed while the scanner goes on",
        Duration::from_secs(1),
        || async {
            payments_of(&chain, &request.order_id).await == 1
                && chain.app.events_of("payment.confirmed").await.len() == 1
        },
    )
    .await;
    assert_eq!(
        chain.event_types_of(&request.id).await,
        [
            "payment.requested",
            "payment.observed",
            "payment.confirming",
            "payment.confirmed"
        ]
    );
}

#[tokio::test]
async fn a_provider_unreachable_at_start_is_not_taken_for_another_chain_and_the_rail_settles_once_it_answers()
{
    let chain = start_chain_with(FIFTEEN_MINUTES, [Behaviour::Down, Behaviour::Honest]).await;
    let request = chain.new_request(4_400).await;
    let hash = chain.pay_exactly(&request).await;
    let refused = chain.submit(&request.order_id, hash).await.unwrap_err();
    assert_eq!(code_of(&refused), "chain_unavailable");
    let details = platform::error::ApiError::from_status(&refused).details.unwrap();
    assert_eq!(details["reason"], "provider_unavailable", "not chain_mismatch");

    chain.provider_a.set(Behaviour::Honest);
    assert_eq!(
        chain.submit(&request.order_id, hash).await.unwrap().status,
        "confirming"
    );
    chain.anvil.mine(70).await;
    let confirmed = chain.wait_for_status(&request.order_id, "confirmed").await;
    assert_eq!(confirmed.chain_id, ANVIL_CHAIN_ID);
}

//! Every way a submitted transaction fails to pay, each with its documented code; and the two
//! ways the rail degrades to "cannot verify now" (503) instead of a verdict.

use super::proxy::Behaviour;
use super::start_chain;
use crate::helpers::code_of;
use alloy::primitives::B256;
use std::time::Duration;

#[tokio::test]
async fn wrong_amounts_senders_tokens_reverts_and_unknown_hashes_are_refused_with_their_codes() {
    let chain = start_chain(Duration::from_secs(900)).await;
    let request = chain.new_request(10_000).await;
    let exact = request.amount_atomic as u64;
    let refusal = |hash| {
        let chain = &chain;
        let order = request.order_id.clone();
        async move {
            let status = chain.submit(&order, hash).await.unwrap_err();
            let error = platform::error::ApiError::from_status(&status);
            (code_of(&status), error.details.unwrap_or_default())
        }
    };
    let under = chain
        .anvil
        .transfer(chain.token, chain.payer, chain.treasury, exact - 1)
        .await;
    let (code, details) = refusal(under).await;
    assert_eq!(
        (code, details["reason"].as_str()),
        ("transfer_amount_mismatch", Some("underpaid"))
    );
    assert_eq!(details["receivedAtomic"], (exact - 1).to_string());
    let over = chain
        .anvil
        .transfer(chain.token, chain.payer, chain.treasury, exact + 1)
        .await;
    assert_eq!(refusal(over).await.1["reason"], "overpaid");
    let from_exchange = chain
        .anvil
        .transfer(chain.token, chain.exchange, chain.treasury, exact)
        .await;
    assert_eq!(refusal(from_exchange).await.0, "transfer_wrong_sender");
    let other_token = chain
        .anvil
        .transfer(chain.other_token, chain.payer, chain.treasury, exact)
        .await;
    assert_eq!(refusal(other_token).await.0, "transfer_wrong_token");
    let elsewhere = chain
        .anvil
        .transfer(chain.token, chain.payer, chain.exchange, exact)
        .await;
    assert_eq!(refusal(elsewhere).await.0, "transfer_not_found");
    // More than the balance, with gas set so that it is mined and reverts.
    let reverted = chain
        .anvil
        .transfer(chain.token, chain.payer, chain.treasury, u64::MAX / 2)
        .await;
    assert_eq!(chain.anvil.receipt(reverted).await["status"], "0x0");
    assert_eq!(refusal(reverted).await.0, "transaction_reverted");
    assert_eq!(refusal(B256::repeat_byte(0xab)).await.0, "transaction_not_found");
    assert_eq!(chain.get(&request.order_id).await.status, "awaiting_transfer");

    // None of them moved the request; the exact one still pays it.
    let exact_hash = chain.pay_exactly(&request).await;
    assert_eq!(
        chain.submit(&request.order_id, exact_hash).await.unwrap().status,
        "confirming"
    );
}

#[tokio::test]
async fn a_second_provider_that_lies_blocks_submission_and_confirmation() {
    let chain = start_chain(Duration::from_secs(900)).await;
    let request = chain.new_request(7_700).await;
    let hash = chain.pay_exactly(&request).await;
    chain.provider_b.set(Behaviour::Lying);
    let refused = chain.submit(&request.order_id, hash).await.unwrap_err();
    assert_eq!(code_of(&refused), "chain_unavailable");
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    let details = platform::error::ApiError::from_status(&refused).details.unwrap();
    assert_eq!(details["reason"], "providers_disagree");

    chain.provider_b.set(Behaviour::Honest);
    assert_eq!(
        chain.submit(&request.order_id, hash).await.unwrap().status,
        "confirming"
    );
    chain.provider_b.set(Behaviour::Lying);
    chain.anvil.mine(70).await;
    platform::testing::holds_for(
        "the request stays confirming while provider B lies",
        Duration::from_secs(2),
        || async { chain.get(&request.order_id).await.status == "confirming" },
    )
    .await;
    chain.provider_b.set(Behaviour::Honest);
    chain.wait_for_status(&request.order_id, "confirmed").await;
}

#[tokio::test]
async fn a_provider_that_is_down_answers_cannot_verify_now_never_a_verdict() {
    let chain = start_chain(Duration::from_secs(900)).await;
    let request = chain.new_request(3_300).await;
    let hash = chain.pay_exactly(&request).await;
    chain.provider_a.set(Behaviour::Down);
    let refused = chain.submit(&request.order_id, hash).await.unwrap_err();
    assert_eq!(code_of(&refused), "chain_unavailable");
    let details = platform::error::ApiError::from_status(&refused).details.unwrap();
    assert_eq!(details["reason"], "provider_unavailable");
    chain.anvil.mine(70).await;
    platform::testing::holds_for(
        "nothing is confirmed while provider A is down",
        Duration::from_secs(1),
        || async { chain.get(&request.order_id).await.status == "awaiting_transfer" },
    )
    .await;
    // The same Idempotency-Key is not bound to the 503: a retry verifies once the provider is back.
    chain.provider_a.set(Behaviour::Honest);
    let verified = chain.submit(&request.order_id, hash).await.unwrap();
    assert_eq!(verified.transfer.unwrap().transaction_hash, format!("{hash:#x}"));
}

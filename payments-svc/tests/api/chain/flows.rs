//! The rail's happy paths: an exact payment through observed, confirming and confirmed; two
//! requests paid by one batched transaction; the scanner observing a payment nobody submitted;
//! a reorg removing an observed transfer; expiry and a late transfer.

use super::start_chain;
use crate::helpers::code_of;
use std::time::Duration;

const FIFTEEN_MINUTES: Duration = Duration::from_secs(15 * 60);

#[tokio::test]
async fn an_exact_payment_is_observed_then_confirming_then_confirmed_after_64_blocks_with_its_proof() {
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let request = chain.new_request(12_345).await;
    assert_eq!(request.status, "awaiting_transfer");
    assert_eq!(request.amount_atomic, 123_450_000 + request.reference_atomic);
    assert!((1..=9999).contains(&request.reference_atomic));
    assert_eq!(
        request.amount_decimal,
        format!("123.45{:04}", request.reference_atomic)
    );
    assert_eq!(request.target_address, chain.treasury.to_checksum(None));
    assert!(request.notice.contains("exactly"));

    let hash = chain.pay_exactly(&request).await;
    let submitted = chain.submit(&request.order_id, hash).await.unwrap();
    assert_eq!(submitted.status, "confirming");
    assert_eq!(
        submitted.transfer.as_ref().unwrap().transaction_hash,
        format!("{hash:#x}")
    );
    assert_eq!(
        chain.event_types_of(&request.id).await,
        ["payment.requested", "payment.observed", "payment.confirming"]
    );
    // Not finalized yet: it stays confirming.
    chain.anvil.mine(10).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(chain.get(&request.order_id).await.status, "confirming");

    chain.anvil.mine(64).await;
    let confirmed = chain.wait_for_status(&request.order_id, "confirmed").await;
    let proof: serde_json::Value = serde_json::from_str(confirmed.proof_json.as_deref().unwrap()).unwrap();
    assert_eq!(proof["transactionHash"], format!("{hash:#x}"));
    assert_eq!(
        proof["blockHash"],
        confirmed.transfer.as_ref().unwrap().block_hash
    );
    assert!(proof["finalizedBlock"]["number"].as_u64().unwrap() >= proof["blockNumber"].as_u64().unwrap());
    assert_eq!(proof["providers"][0]["provider"], "provider-a");
    assert_eq!(proof["providers"][1]["provider"], "provider-b");
    assert_eq!(proof["scannerBlockHash"], proof["blockHash"]);
    assert_eq!(
        chain.event_types_of(&request.id).await,
        [
            "payment.requested",
            "payment.observed",
            "payment.confirming",
            "payment.confirmed"
        ]
    );
    let invoice = chain
        .app
        .get_invoice(chain.customer, &request.order_id)
        .await
        .unwrap();
    assert_eq!(invoice.status().as_str(), "paid");
    assert_eq!(chain.app.events_of("invoice.updated").await.len(), 1);
    // The same hash again answers the confirmed request; the same key replays.
    assert_eq!(
        chain.submit(&request.order_id, hash).await.unwrap().status,
        "confirmed"
    );
}

#[tokio::test]
async fn two_requests_paid_by_one_batched_transaction_each_take_their_own_log() {
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let first = chain.new_request(5_000).await;
    let second = chain.new_request(5_000).await;
    assert_ne!(
        first.amount_atomic, second.amount_atomic,
        "references differ for equal totals"
    );
    let amounts = [first.amount_atomic as u64, second.amount_atomic as u64];
    chain
        .anvil
        .approve(
            chain.token,
            chain.payer,
            chain.batcher,
            amounts[0] + amounts[1] + 7,
        )
        .await;
    // A decoy of another contract first, then the two real transfers.
    chain
        .anvil
        .approve(chain.other_token, chain.payer, chain.batcher, amounts[0])
        .await;
    let hash = chain
        .anvil
        .batch(
            chain.batcher,
            chain.payer,
            &[
                (chain.other_token, chain.treasury, amounts[0]),
                (chain.token, chain.treasury, amounts[1]),
                (chain.token, chain.treasury, amounts[0]),
            ],
        )
        .await;
    let paid_first = chain.submit(&first.order_id, hash).await.unwrap();
    let paid_second = chain.submit(&second.order_id, hash).await.unwrap();
    let (log_first, log_second) = (
        paid_first.transfer.unwrap().log_index,
        paid_second.transfer.unwrap().log_index,
    );
    assert_ne!(log_first, log_second);
    chain.anvil.mine(65).await;
    chain.wait_for_status(&first.order_id, "confirmed").await;
    chain.wait_for_status(&second.order_id, "confirmed").await;
}

#[tokio::test]
async fn the_scanner_observes_and_confirms_a_payment_nobody_submitted() {
    let settled = |outcome| {
        platform::metrics::metrics()
            .payment_settlements
            .get_or_create(&platform::metrics::SettlementLabels {
                rail: "stablecoin",
                outcome,
            })
            .get()
    };
    let (observed_before, confirmed_before) = (settled("observed"), settled("confirmed"));
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let request = chain.new_request(990).await;
    let hash = chain.pay_exactly(&request).await;
    chain.anvil.mine(70).await;
    let confirmed = chain.wait_for_status(&request.order_id, "confirmed").await;
    assert!(
        settled("observed") > observed_before && settled("confirmed") > confirmed_before,
        "the scanner's observation and confirmation are counted in payment_settlements_total"
    );
    assert_eq!(confirmed.transfer.unwrap().transaction_hash, format!("{hash:#x}"));
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
async fn a_reorg_removing_an_observed_transfer_reorgs_the_request_which_is_then_paid_in_the_new_chain() {
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let request = chain.new_request(2_500).await;
    let hash = chain.pay_exactly(&request).await;
    assert_eq!(
        chain.submit(&request.order_id, hash).await.unwrap().status,
        "confirming"
    );
    // Replace the last three blocks (the transfer's among them) with empty ones.
    chain.anvil.mine(2).await;
    chain.anvil.rpc("anvil_reorg", serde_json::json!([3, []])).await;
    let waiting = chain
        .wait_for_status(&request.order_id, "awaiting_transfer")
        .await;
    assert!(waiting.transfer.is_none());
    assert!(
        chain
            .event_types_of(&request.id)
            .await
            .contains(&"payment.reorged".to_owned())
    );

    let again = chain.pay_exactly(&request).await;
    assert_eq!(
        chain.submit(&request.order_id, again).await.unwrap().status,
        "confirming"
    );
    chain.anvil.mine(65).await;
    let confirmed = chain.wait_for_status(&request.order_id, "confirmed").await;
    assert_eq!(
        confirmed.transfer.unwrap().transaction_hash,
        format!("{again:#x}")
    );
}

#[tokio::test]
async fn an_unpaid_request_expires_and_a_transfer_after_expiry_is_recorded_late_and_never_applied() {
    let chain = start_chain(Duration::from_secs(60)).await;
    let request = chain.new_request(4_200).await;
    chain
        .anvil
        .rpc("evm_increaseTime", serde_json::json!([120]))
        .await;
    chain.anvil.mine(66).await;
    chain.wait_for_status(&request.order_id, "expired").await;
    assert!(
        chain
            .event_types_of(&request.id)
            .await
            .contains(&"payment.expired".to_owned())
    );

    let late = chain.pay_exactly(&request).await;
    let refused = chain.submit(&request.order_id, late).await.unwrap_err();
    assert_eq!(code_of(&refused), "payment_request_expired");
    chain.anvil.mine(66).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(chain.get(&request.order_id).await.status, "expired");
    let late_rows: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payments.chain_transfers WHERE disposition = 'late' AND tx_hash = $1",
    )
    .bind(format!("{late:#x}"))
    .fetch_one(&chain.app.pool)
    .await
    .unwrap();
    assert_eq!(late_rows, 1);
    assert_eq!(
        chain
            .app
            .get_invoice(chain.customer, &request.order_id)
            .await
            .unwrap()
            .status()
            .as_str(),
        "open"
    );
}

#[tokio::test]
async fn a_transfer_for_an_invoice_settled_otherwise_is_recorded_for_staff_and_the_scanner_goes_on() {
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let settled = chain.new_request(2_500).await;
    let other = chain.new_request(2_600).await;
    let hash = chain.pay_exactly(&settled).await;
    assert_eq!(
        chain.submit(&settled.order_id, hash).await.unwrap().status,
        "confirming"
    );
    // Meanwhile the invoice is paid on another rail (here a bank transfer recorded by staff).
    let invoice = chain
        .app
        .get_invoice(chain.customer, &settled.order_id)
        .await
        .unwrap();
    chain
        .app
        .record(&invoice.invoice_number, 2_500, "WIRE-SETTLED-1")
        .await
        .unwrap();
    let other_hash = chain.pay_exactly(&other).await;
    chain.submit(&other.order_id, other_hash).await.unwrap();
    chain.anvil.mine(70).await;
    // The other request still confirms: the settled invoice's transfer does not stop the pass.
    chain.wait_for_status(&other.order_id, "confirmed").await;
    let back = chain.get(&settled.order_id).await;
    assert_eq!(back.status, "awaiting_transfer");
    let duplicates: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payments.chain_transfers WHERE disposition = 'duplicate' AND tx_hash = $1",
    )
    .bind(format!("{hash:#x}"))
    .fetch_one(&chain.app.pool)
    .await
    .unwrap();
    assert_eq!(duplicates, 1);
    let payments: i64 =
        sqlx::query_scalar("SELECT count(*) FROM payments.payments WHERE invoice_id = $1::uuid")
            .bind(&invoice.id)
            .fetch_one(&chain.app.pool)
            .await
            .unwrap();
    assert_eq!(payments, 1, "only the bank payment is recorded");
}

#[tokio::test]
async fn cancelling_the_order_expires_its_awaiting_request_and_a_transfer_sent_afterwards_is_only_recorded_late()
 {
    let chain = start_chain(FIFTEEN_MINUTES).await;
    let request = chain.new_request(3_300).await;
    let invoice = chain
        .app
        .get_invoice(chain.customer, &request.order_id)
        .await
        .unwrap();
    let cancelled = crate::cancellation::order_cancelled(chain.customer, &invoice, 0);
    crate::consumer::publish(&chain.app, &cancelled).await;
    let last = crate::consumer::publish(&chain.app, &cancelled).await;
    crate::consumer::wait_until_consumed(&chain.app, &last).await;
    assert_eq!(chain.get(&request.order_id).await.status, "expired");
    let expired_events = chain
        .event_types_of(&request.id)
        .await
        .into_iter()
        .filter(|kind| kind == "payment.expired")
        .count();
    assert_eq!(expired_events, 1, "one payment.expired for two deliveries");

    let late = chain.pay_exactly(&request).await;
    let refused = chain.submit(&request.order_id, late).await.unwrap_err();
    assert_eq!(code_of(&refused), "payment_request_expired");
    chain.anvil.mine(66).await;
    platform::testing::wait_for(
        "the scanner to record the transfer late",
        Duration::from_secs(30),
        || async {
            let late_rows: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM payments.chain_transfers WHERE disposition = 'late' AND tx_hash = $1",
            )
            .bind(format!("{late:#x}"))
            .fetch_one(&chain.app.pool)
            .await
            .unwrap();
            (late_rows == 1).then_some(())
        },
    )
    .await;
    let voided = chain
        .app
        .get_invoice(chain.customer, &request.order_id)
        .await
        .unwrap();
    assert_eq!(voided.status().as_str(), "void", "the late transfer pays nothing");
    assert_eq!(voided.amount_paid_cents, 0);
}

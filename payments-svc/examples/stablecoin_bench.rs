//! Benchmark of the stablecoin rail (issue 12, "Performance") against a real anvil.
//!
//! 1. Scanner throughput: 10,000 Transfer logs to the treasury emitted by the fixture's Batcher
//!    (`TRANSFERS_PER_TX` transfers per transaction), finalized, then one scanner pass from a
//!    fresh checkpoint over the whole chain: logs verified and recorded per second and blocks
//!    scanned per second. Reference, same run: the bare `eth_getLogs` over the same range from
//!    one provider (no cross-check, no database), and a pass over `EMPTY_BLOCKS` empty blocks.
//! 2. Submit latency: `SUBMITS` payment requests each paid by one exact transfer, then each hash
//!    submitted (two providers' receipts compared, every log examined, the transfer recorded,
//!    the request moved to confirming): p50/p99/max. Reference, same run: one bare
//!    `eth_getTransactionReceipt` per hash.
//!
//! Run (PostgreSQL and Redis as for the tests; anvil from npm `@foundry-rs/anvil` on PATH):
//! `TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres TEST_REDIS_URL=redis://127.0.0.1:6379
//!  cargo run --release -p payments-svc --example stablecoin_bench`

#[allow(dead_code)]
#[path = "../tests/api/chain/anvil.rs"]
mod anvil;

use alloy::primitives::{Address, B256, U256};
use alloy::sol_types::SolCall;
use anvil::Anvil;
use payments_svc::chain::ChainAddress;
use payments_svc::domain::{InvoiceReference, NewInvoice};
use payments_svc::stablecoin::settings::ProviderSetting;
use payments_svc::stablecoin::{StablecoinRail, StablecoinSettings};
use payments_svc::{Application, Settings};
use platform::config::CommonSettings;
use serde_json::json;
use std::time::{Duration, Instant};
use uuid::Uuid;

const LOGS: usize = 10_000;
const TRANSFERS_PER_TX: usize = 250;
const EMPTY_BLOCKS: u64 = 5_000;
const SUBMITS: usize = 200;

fn rail_settings(anvil: &Anvil, token: Address, treasury: Address) -> StablecoinSettings {
    let port = anvil.url.rsplit(':').next().unwrap();
    let mut settings = StablecoinSettings::new(
        31_337,
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
    settings.rpc_timeout = Duration::from_secs(30);
    // The scanner runs only when called here.
    settings.scan_interval = Duration::from_secs(3600);
    settings
}

async fn fresh_rail(settings: &StablecoinSettings) -> (Application, StablecoinRail) {
    let database_url = platform::testing::fresh_database().await;
    let redis_url = platform::testing::redis_url();
    let prefix = platform::testing::unique_stream_prefix();
    let mut app_settings = Settings::local(CommonSettings::local(&database_url, &redis_url, &prefix));
    app_settings.stablecoin = Some(settings.clone());
    let application = Application::build(app_settings)
        .await
        .expect("payments-svc builds");
    let rail = StablecoinRail::new(application.pool().clone(), settings.clone()).expect("the rail");
    (application, rail)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[tokio::main]
async fn main() {
    // The workspace's one crypto stack, as payments-svc installs it when it starts its rail.
    let _ = rustls::crypto::ring::default_provider().install_default();
    println!("load before: {}", loadavg());
    let anvil = Anvil::start().await;
    let token = anvil.deploy_token("USDC").await;
    let batcher = anvil.deploy("Batcher", vec![]).await;
    let (payer, treasury) = (anvil.accounts[1], anvil.accounts[9]);
    anvil.mint(token, payer, 1_000_000_000_000_000).await;
    anvil.approve(token, payer, batcher, 1_000_000_000_000_000).await;
    let settings = rail_settings(&anvil, token, treasury);

    // 1. 10,000 Transfer logs through the batcher.
    let started = Instant::now();
    let mut emitted = 0;
    while emitted < LOGS {
        let count = TRANSFERS_PER_TX.min(LOGS - emitted);
        let data = anvil::payCall {
            tokens: vec![token; count],
            to: vec![treasury; count],
            values: (0..count)
                .map(|i| U256::from(1_000_000 + (emitted + i) as u64))
                .collect(),
        }
        .abi_encode();
        let hash = anvil.send(payer, Some(batcher), data, Some(25_000_000)).await;
        let receipt = anvil.receipt(hash).await;
        assert_eq!(receipt["status"], "0x1", "a batch transaction succeeded");
        emitted += count;
    }
    anvil.mine(70).await;
    println!(
        "emitted {LOGS} transfers in {} transactions ({:.1} s)",
        LOGS.div_ceil(TRANSFERS_PER_TX),
        started.elapsed().as_secs_f64()
    );
    let head: u64 = u64::from_str_radix(
        anvil
            .rpc("eth_blockNumber", json!([]))
            .await
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();

    // Reference: bare eth_getLogs over the same range, one provider, no database.
    let topic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
    let treasury_topic = format!("0x{:0>64}", hex::encode(treasury.as_slice()));
    let started = Instant::now();
    let logs = anvil
        .rpc(
            "eth_getLogs",
            json!([{ "fromBlock": "0x0", "toBlock": "finalized", "address": token,
                     "topics": [topic, null, treasury_topic] }]),
        )
        .await;
    let bare = started.elapsed();
    let bare_logs = logs.as_array().unwrap().len();

    let (_scan_app, rail) = fresh_rail(&settings).await;
    let started = Instant::now();
    let report = rail.scan_once().await.expect("a scanner pass");
    let pass = started.elapsed();
    println!("scanner pass: {report:?}");
    assert_eq!(report.logs_read as usize, LOGS, "the pass read every transfer");
    println!(
        "SCANNER 10k logs: {} logs, {} blocks in {:.3} s → {:.0} logs/s verified and recorded, {:.0} blocks/s",
        report.logs_read,
        report.blocks_scanned,
        pass.as_secs_f64(),
        report.logs_read as f64 / pass.as_secs_f64(),
        report.blocks_scanned as f64 / pass.as_secs_f64()
    );
    println!(
        "REFERENCE bare eth_getLogs: {bare_logs} logs in {:.3} s → {:.0} logs/s (one provider, no checks, no database); chain head {head}",
        bare.as_secs_f64(),
        bare_logs as f64 / bare.as_secs_f64()
    );

    // Reference: a pass over empty blocks only (the scanner's per-block cost without logs).
    anvil.mine(EMPTY_BLOCKS).await;
    let started = Instant::now();
    let empty = rail.scan_once().await.expect("an empty pass");
    let empty_pass = started.elapsed();
    println!(
        "SCANNER empty range: {} blocks in {:.3} s → {:.0} blocks/s ({} logs)",
        empty.blocks_scanned,
        empty_pass.as_secs_f64(),
        empty.blocks_scanned as f64 / empty_pass.as_secs_f64(),
        empty.logs_read
    );

    // 2. Submit latency.
    let (submit_app, rail) = fresh_rail(&settings).await;
    let service = submit_app.service().expect("the service");
    let customer = Uuid::now_v7();
    let mut paid: Vec<(Uuid, B256)> = Vec::with_capacity(SUBMITS);
    for index in 0..SUBMITS {
        let order_id = Uuid::now_v7();
        let invoice = NewInvoice {
            order_id,
            order_number: format!("ORD-BENCH-{index:06}"),
            payment_method: payments_svc::domain::PaymentMethod::ChainStablecoin,
            currency: "USD",
            lines: vec![],
            total: platform::money::Cents(10_000 + index as i64),
            checkout_expires_at: None,
            addon_id: None,
            sandbox: false,
        };
        service
            .create_invoice(customer, invoice)
            .await
            .expect("an invoice");
        let request = rail
            .request_payment(
                customer,
                &InvoiceReference::Id(order_id),
                Some(ChainAddress(payer)),
            )
            .await
            .expect("a payment request");
        let hash = anvil
            .transfer(token, payer, treasury, request.amount.atomic as u64)
            .await;
        paid.push((order_id, hash));
    }
    // anvil's automine answers the hash before the block is sealed: every transfer is mined
    // before anything is timed.
    for (_, hash) in &paid {
        anvil.receipt(*hash).await;
    }
    let mut reference = Vec::with_capacity(SUBMITS);
    for (_, hash) in &paid {
        let started = Instant::now();
        let receipt = anvil.rpc("eth_getTransactionReceipt", json!([hash])).await;
        reference.push(started.elapsed());
        assert!(!receipt.is_null());
    }
    let mut latencies = Vec::with_capacity(SUBMITS);
    for (order_id, hash) in &paid {
        let started = Instant::now();
        let answer = rail
            .submit(customer, &InvoiceReference::Id(*order_id), *hash, None)
            .await
            .expect("the submission verifies");
        latencies.push(started.elapsed());
        assert_eq!(answer.status.as_str(), "confirming");
    }
    latencies.sort();
    reference.sort();
    println!(
        "SUBMIT {SUBMITS} sequential: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap())
    );
    println!(
        "REFERENCE bare eth_getTransactionReceipt: p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&reference, 0.5)),
        ms(percentile(&reference, 0.99))
    );
    println!("load after: {}", loadavg());
}

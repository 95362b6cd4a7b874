//! The rail never holds or asks for a key and never signs or broadcasts: no signing or sending
//! method reaches either provider during a whole payment, and the crate's source and manifest
//! name no signer, wallet or sending call.

use super::start_chain;
use std::time::Duration;

const SIGNING_METHODS: &[&str] = &[
    "eth_sendTransaction",
    "eth_sendRawTransaction",
    "eth_sign",
    "eth_signTransaction",
    "eth_signTypedData",
    "eth_signTypedData_v4",
    "personal_sign",
    "personal_sendTransaction",
    "personal_unlockAccount",
    "eth_accounts",
];

#[tokio::test]
async fn no_signing_or_sending_method_ever_reaches_a_provider_during_a_whole_payment() {
    let chain = start_chain(Duration::from_secs(900)).await;
    let request = chain.new_request(1_000).await;
    let hash = chain.pay_exactly(&request).await;
    chain.submit(&request.order_id, hash).await.unwrap();
    chain.anvil.mine(70).await;
    chain.wait_for_status(&request.order_id, "confirmed").await;
    for provider in [&chain.provider_a, &chain.provider_b] {
        let methods = provider.methods();
        assert!(methods.contains(&"eth_getTransactionReceipt".to_owned()));
        assert!(methods.contains(&"eth_getLogs".to_owned()) || provider.url == chain.provider_b.url);
        for method in &methods {
            assert!(
                !SIGNING_METHODS.contains(&method.as_str()),
                "the service called {method}"
            );
            assert!(
                method.starts_with("eth_get") || method == "eth_chainId" || method == "eth_blockNumber",
                "unexpected method {method}"
            );
        }
    }
}

#[test]
fn the_crate_names_no_signer_wallet_key_or_sending_call() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let forbidden = [
        "alloy::signers",
        "alloy_signer",
        "Signer",
        "sign_hash",
        "sign_transaction",
        "sign_message",
        "EthereumWallet",
        ".wallet(",
        "private_key",
        "PrivateKey",
        "send_transaction",
        "send_raw_transaction",
        "eth_send",
        "eth_sign",
        "personal_",
        "mnemonic",
        "keystore",
    ];
    let mut files = vec![std::path::PathBuf::from(root)];
    let mut checked = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for word in forbidden {
            // Documentation may say what the crate does not do; code may not use it.
            let in_code = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .any(|line| line.contains(word));
            assert!(!in_code, "{} uses {word}", path.display());
        }
        checked += 1;
    }
    assert!(checked > 10);
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let workspace = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml")).unwrap();
    let alloy_line = workspace.lines().find(|line| line.starts_with("alloy ")).unwrap();
    for feature in ["signer", "essentials", "default-features = true", "\"full\""] {
        assert!(!alloy_line.contains(feature), "alloy is built with {feature}");
    }
    assert!(alloy_line.contains("default-features = false"));
    assert!(!manifest.contains("signer"));
}

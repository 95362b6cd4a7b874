//! Rotation of the COA signing key: results-svc restarted with a new current key and the old one
//! among its previous public keys keeps verifying the COAs the old key signed (picked by each
//! COA's `kid`), signs new COAs with the new key, and publishes both in the JWK set at
//! `/.well-known/coa-signing-key.json`; once the old key leaves the set, its COAs answer
//! `unverifiable` (a verdict, not an error).

use crate::lab_support::{
    LabStaff, approve_and_publish, lab_staff, pay, receive_and_start, record_and_submit,
};
use crate::support::bank_order;
use platform::tokens::SigningKey;
use reqwest::Method;
use secrecy::SecretString;
use serde_json::{Value, json};
use tests::{Customer, Sandbox};

/// A fresh COA key: its public JWK (as the previous-key set lists it) and its private JWK.
fn coa_key(kid: &str) -> (Value, SecretString) {
    let (key, private) = SigningKey::generate(kid);
    let public = json!({ "kty": "OKP", "crv": "Ed25519", "kid": kid, "x": key.public_x });
    (public, private)
}

/// A paid one-sample order of `agent` with its published COA: (accession, the COA as the agent
/// reads it).
async fn published_coa(sandbox: &Sandbox, agent: &Customer, staff: &LabStaff, key: &str) -> (String, Value) {
    let (order_id, invoice, total) = bank_order(sandbox, agent, key).await;
    pay(sandbox, &invoice, &total, &format!("PAY-{key}")).await;
    let samples = receive_and_start(sandbox, staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(sandbox, staff, &samples[0]).await;
    let published = approve_and_publish(sandbox, staff, &accession).await;
    assert_eq!(published["status"], "published", "{published}");
    let read = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    (accession, read.body["data"]["result"].clone())
}

/// The public verdict of `coa` with its printed code (so the signed content is revealed).
async fn verify(sandbox: &Sandbox, coa: &Value) -> Value {
    let path = format!(
        "/verify?accession={}&code={}",
        coa["accessionNumber"].as_str().unwrap(),
        coa["verificationCode"].as_str().unwrap()
    );
    let answer = sandbox.call(Method::GET, &path, None, None, &[]).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["data"]["verification"].clone()
}

/// The published JWK set of the COA keys.
async fn key_set(sandbox: &Sandbox) -> Value {
    let response = sandbox
        .http
        .get(format!("{}/.well-known/coa-signing-key.json", sandbox.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn kids(set: &Value) -> Vec<&str> {
    set["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["kid"].as_str().unwrap())
        .collect()
}

/// True when the key of `set` named by the verdict's `signingKeyId` verifies its signature over
/// its signed content: the check an offline verifier makes.
fn verifies_offline(set: &Value, verdict: &Value) -> bool {
    let kid = verdict["signingKeyId"].as_str().unwrap();
    let Some(key) = set["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["kid"] == kid)
    else {
        return false;
    };
    results_svc::domain::signing::verify(
        key["x"].as_str().unwrap(),
        verdict["signedContent"].as_str().unwrap(),
        verdict["signature"].as_str().unwrap(),
    )
}

#[tokio::test]
async fn a_coa_signed_before_a_key_rotation_still_verifies_by_its_kid_and_new_coas_are_signed_with_the_new_key()
 {
    let (old_public, old_private) = coa_key("coa-rotation-k1");
    let (_, new_private) = coa_key("coa-rotation-k2");
    let sandbox = Sandbox::start_with(|settings| settings.results.coa_signing_key = Some(old_private)).await;
    let agent = sandbox.customer("Rotation Reader", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (_, old_coa) = published_coa(&sandbox, &agent, &staff, "rotation-0001").await;
    assert_eq!(old_coa["signingKeyId"], "coa-rotation-k1");
    assert_eq!(kids(&key_set(&sandbox).await), ["coa-rotation-k1"]);

    let sandbox = sandbox
        .restart_with(|settings| {
            settings.results.coa_signing_key = Some(new_private);
            settings.results.coa_previous_keys = Some(json!({ "keys": [old_public] }).to_string());
        })
        .await;
    let set = key_set(&sandbox).await;
    assert_eq!(kids(&set), ["coa-rotation-k2", "coa-rotation-k1"], "{set}");
    for key in set["keys"].as_array().unwrap() {
        assert_eq!(
            (&key["kty"], &key["crv"], &key["use"], &key["alg"]),
            (&json!("OKP"), &json!("Ed25519"), &json!("sig"), &json!("EdDSA")),
            "{key}"
        );
        assert!(key.get("d").is_none(), "no private part is published: {key}");
    }

    let old = verify(&sandbox, &old_coa).await;
    assert_eq!(
        (old["status"].as_str(), old["signingKeyId"].as_str()),
        (Some("authentic"), Some("coa-rotation-k1")),
        "{old}"
    );
    assert!(verifies_offline(&set, &old), "{old}");

    let (_, new_coa) = published_coa(&sandbox, &agent, &staff, "rotation-0002").await;
    assert_eq!(new_coa["signingKeyId"], "coa-rotation-k2");
    let new = verify(&sandbox, &new_coa).await;
    assert_eq!(
        (new["status"].as_str(), new["signingKeyId"].as_str()),
        (Some("authentic"), Some("coa-rotation-k2")),
        "{new}"
    );
    assert!(verifies_offline(&set, &new), "{new}");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_coa_whose_key_left_the_published_set_answers_unverifiable_instead_of_authentic() {
    let (_, old_private) = coa_key("coa-retired-k1");
    let (_, new_private) = coa_key("coa-retired-k2");
    let sandbox = Sandbox::start_with(|settings| settings.results.coa_signing_key = Some(old_private)).await;
    let agent = sandbox.customer("Retired Key Reader", "all").await;
    let staff = lab_staff(&sandbox).await;
    let (accession, coa) = published_coa(&sandbox, &agent, &staff, "retired-0001").await;
    assert_eq!(verify(&sandbox, &coa).await["status"], "authentic");

    let sandbox = sandbox
        .restart_with(|settings| settings.results.coa_signing_key = Some(new_private))
        .await;
    let set = key_set(&sandbox).await;
    assert_eq!(kids(&set), ["coa-retired-k2"]);
    let verdict = verify(&sandbox, &coa).await;
    assert_eq!(
        (verdict["status"].as_str(), verdict["signingKeyId"].as_str()),
        (Some("unverifiable"), Some("coa-retired-k1")),
        "{verdict}"
    );
    assert!(!verifies_offline(&set, &verdict));
    let batch = sandbox
        .call(
            Method::POST,
            "/verify/batch",
            None,
            Some(&json!({ "accessions": [accession] })),
            &[],
        )
        .await;
    assert_eq!(batch.status, 200, "{:?}", batch.body);
    assert_eq!(batch.body["data"][0]["status"], "unverifiable");
    // The customer still reads the COA; only the public check withholds `authentic`.
    let read = sandbox.get(&agent.key, &format!("/results/{accession}")).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    sandbox.stop().await;
}

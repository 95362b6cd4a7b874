//! The COA document: kept in the blob store when it is first rendered (at publication), then
//! served byte for byte from there, checked against its recorded SHA-256.

use crate::helpers::{TestApp, spawn_app};
use proto::results as pb;
use uuid::Uuid;

/// The kept document of a COA: (blob key, SHA-256), if any.
async fn kept(app: &TestApp, coa_id: &str) -> Option<(String, String)> {
    sqlx::query_as("SELECT document_key, document_sha256 FROM results.coas WHERE id = $1::uuid AND document_key IS NOT NULL")
        .bind(coa_id)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
}

/// Downloads the PDF behind the signed link the customer's read of `coa_id` carries, as the
/// gateway does (the rpc takes no token: the link is the authority).
async fn download(app: &TestApp, customer: Uuid, coa_id: &str) -> Result<Vec<u8>, tonic::Status> {
    let read = app
        .get_result_as(&app.customer(customer), coa_id)
        .await
        .expect("the customer reads the COA");
    let query = read.document_path.split_once('?').expect("a signed path").1;
    let parameter = |name: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
            .expect("the parameter")
            .to_owned()
    };
    let message = pb::RenderCoaPdfRequest {
        coa_id: coa_id.to_owned(),
        expires: parameter("expires").parse().unwrap(),
        signature: parameter("signature"),
    };
    let mut client = app.client.clone();
    Ok(client.render_coa_pdf(message).await?.into_inner().pdf)
}

/// Where the local store of [`spawn_app`] keeps `key`.
fn stored_file(app: &TestApp, key: &str) -> std::path::PathBuf {
    std::env::temp_dir()
        .join(format!("lab-blobs-{}", app.stream_prefix))
        .join(key)
}

#[tokio::test]
async fn a_published_coa_keeps_its_document_at_issue_and_every_download_serves_exactly_those_bytes() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let (_, coa) = app.published(customer).await;

    let (key, sha256) = kept(&app, &coa.id).await.expect("kept at publication");
    assert_eq!(key, format!("coas/{}/{sha256}.pdf", coa.id));
    let stored = std::fs::read(stored_file(&app, &key)).expect("the document is in the blob store");
    assert_eq!(platform::production::sha256_hex(&stored), sha256);

    let first = download(&app, customer, &coa.id).await.unwrap();
    assert!(first.starts_with(b"%PDF"));
    assert_eq!(first, stored, "the kept bytes, not a new rendering");
    assert_eq!(download(&app, customer, &coa.id).await.unwrap(), stored);
    assert_eq!(kept(&app, &coa.id).await, Some((key, sha256)), "kept once");
}

#[tokio::test]
async fn an_altered_kept_document_is_refused_rather_than_served() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let (_, coa) = app.published(customer).await;
    let (key, _) = kept(&app, &coa.id).await.expect("kept at publication");
    let file = stored_file(&app, &key);
    let mut altered = std::fs::read(&file).unwrap();
    let last = altered.len() - 10;
    altered[last] ^= 0x01;
    std::fs::write(&file, &altered).unwrap();

    let refused = download(&app, customer, &coa.id)
        .await
        .expect_err("an altered document");
    assert_eq!(refused.code(), tonic::Code::Internal, "{refused:?}");
    assert!(!refused.message().contains("%PDF"));
}

#[tokio::test]
async fn a_coa_without_a_kept_document_keeps_one_rendering_even_when_two_downloads_race() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let (_, coa) = app.published(customer).await;
    // As a COA published before documents were kept.
    sqlx::query("UPDATE results.coas SET document_key = NULL, document_sha256 = NULL WHERE id = $1::uuid")
        .bind(&coa.id)
        .execute(&app.pool)
        .await
        .unwrap();

    let (one, two) = tokio::join!(
        download(&app, customer, &coa.id),
        download(&app, customer, &coa.id)
    );
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one, two, "both downloads serve the one kept rendering");
    let (key, sha256) = kept(&app, &coa.id).await.expect("kept at the first download");
    assert_eq!(platform::production::sha256_hex(&one), sha256);
    assert_eq!(std::fs::read(stored_file(&app, &key)).unwrap(), one);
    assert_eq!(download(&app, customer, &coa.id).await.unwrap(), one);
}

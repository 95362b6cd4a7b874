//! Blob storage against both stores: a local directory, and real S3 servers: npm `s3rver` (see
//! `platform::testing::s3rver`) and PyPI `ministack` (`platform::testing::ministack`). The S3
//! tests skip with a note when their server is not installed, and fail instead under
//! `LAB_REQUIRE_NODE_TOOLS` (s3rver) or `LAB_REQUIRE_PYTHON_TOOLS` (ministack), which
//! deploy/local/test.sh sets.
//!
//! s3rver 3.7 checks a presigned URL's access key and expiry but computes no SigV4 signature, so
//! its tampering test asserts what it does refuse and pins down what it does not. ministack
//! 1.5.33 recomputes the signature, so the tampering and expiry of S3 URLs are proven against it
//! (docs/operations.md, "Blob storage").

use bytes::Bytes;
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use platform::blobs::{BlobError, BlobSettings, BlobStore, LinkError};
use platform::testing::ministack::Ministack;
use platform::testing::s3rver::S3rver;
use platform::testing::wait_for;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Duration;

/// A local store in a fresh directory, removed on drop.
struct LocalStore {
    store: BlobStore,
    dir: PathBuf,
}

impl Drop for LocalStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn local_store() -> LocalStore {
    let dir = std::env::temp_dir().join(format!("blobs-{}", uuid::Uuid::new_v4().simple()));
    let settings = BlobSettings::local(&dir, "https://lab.example/");
    LocalStore {
        store: BlobStore::new(&settings, "results").unwrap(),
        dir,
    }
}

fn s3_store(server: &S3rver) -> BlobStore {
    BlobStore::new(&server.settings(), "results").unwrap()
}

/// Some bytes that are not text, different per test.
fn sample() -> Bytes {
    let seed = uuid::Uuid::new_v4();
    Bytes::from(
        (0..70_000u32)
            .map(|i| seed.as_bytes()[i as usize % 16] ^ (i % 251) as u8)
            .collect::<Vec<_>>(),
    )
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The decoded key and the raw query of a local link.
fn link_parts(url: &url::Url) -> (String, String) {
    let key = url
        .path()
        .strip_prefix("/api/v1/files/results/")
        .expect("the files route of the service");
    let key = percent_encoding::percent_decode_str(key)
        .decode_utf8()
        .unwrap()
        .into_owned();
    (key, url.query().unwrap_or_default().to_owned())
}

async fn a_round_trip_keeps_every_byte(store: &BlobStore) {
    let bytes = sample();
    store.put("coa/round-trip.bin", bytes.clone()).await.unwrap();
    let read = store.get("coa/round-trip.bin").await.unwrap();
    assert_eq!(sha256(&read), sha256(&bytes));
    let replacement = sample();
    store
        .put("coa/round-trip.bin", replacement.clone())
        .await
        .unwrap();
    assert_eq!(
        sha256(&store.get("coa/round-trip.bin").await.unwrap()),
        sha256(&replacement)
    );
    store.delete("coa/round-trip.bin").await.unwrap();
    assert_eq!(store.get("coa/round-trip.bin").await, Err(BlobError::NotFound));
    store.delete("coa/round-trip.bin").await.unwrap();
}

async fn missing_objects_and_invalid_keys_are_told_apart(store: &BlobStore) {
    assert_eq!(store.get("coa/never-stored.pdf").await, Err(BlobError::NotFound));
    let later = Utc::now() + ChronoDuration::minutes(5);
    for key in ["../outside", "/absolute", "a//b", "a/./b", ""] {
        assert!(
            matches!(
                store.put(key, Bytes::from_static(b"x")).await,
                Err(BlobError::Invalid(_))
            ),
            "{key:?}"
        );
        assert!(
            matches!(store.get(key).await, Err(BlobError::Invalid(_))),
            "{key:?}"
        );
        assert!(
            matches!(store.delete(key).await, Err(BlobError::Invalid(_))),
            "{key:?}"
        );
        assert!(
            matches!(store.signed_url(key, later).await, Err(BlobError::Invalid(_))),
            "{key:?}"
        );
    }
    let past = Utc::now() - ChronoDuration::seconds(1);
    assert!(matches!(
        store.signed_url("coa/a.pdf", past).await,
        Err(BlobError::Invalid(_))
    ));
}

#[tokio::test]
async fn the_local_store_keeps_every_byte_of_a_blob() {
    let local = local_store();
    a_round_trip_keeps_every_byte(&local.store).await;
    assert!(local.store.is_local());
}

#[tokio::test]
async fn the_local_store_tells_a_missing_blob_from_an_invalid_key() {
    let local = local_store();
    missing_objects_and_invalid_keys_are_told_apart(&local.store).await;
}

#[tokio::test]
async fn a_local_link_opens_the_blob_until_it_expires() {
    let local = local_store();
    let bytes = sample();
    local
        .store
        .put("coa/2026/report.pdf", bytes.clone())
        .await
        .unwrap();
    let expires_at = Utc::now() + ChronoDuration::minutes(10);
    let url = local
        .store
        .signed_url("coa/2026/report.pdf", expires_at)
        .await
        .unwrap();
    assert_eq!(url.origin().ascii_serialization(), "https://lab.example");
    let (key, query) = link_parts(&url);
    assert_eq!(key, "coa/2026/report.pdf");
    local
        .store
        .open_local_link_query(&key, &query, Utc::now())
        .unwrap();
    assert_eq!(sha256(&local.store.get(&key).await.unwrap()), sha256(&bytes));

    let expires = platform::blobs::parse_local_link_query(&query).unwrap().0;
    assert!(expires >= expires_at.timestamp());
    let after = DateTime::from_timestamp(expires, 0).unwrap();
    assert_eq!(
        local.store.open_local_link_query(&key, &query, after),
        Err(LinkError::Expired(expires))
    );
}

#[tokio::test]
async fn an_edited_local_link_is_refused() {
    let local = local_store();
    let url = local
        .store
        .signed_url("coa/report.pdf", Utc::now() + ChronoDuration::minutes(10))
        .await
        .unwrap();
    let (key, query) = link_parts(&url);
    let now = Utc::now();
    let (expires, signature) = platform::blobs::parse_local_link_query(&query).unwrap();
    let store = &local.store;
    assert_eq!(store.open_local_link(&key, expires, &signature, now), Ok(()));
    assert_eq!(
        store.open_local_link("coa/other.pdf", expires, &signature, now),
        Err(LinkError::BadSignature)
    );
    assert_eq!(
        store.open_local_link(&key, expires + 3600, &signature, now),
        Err(LinkError::BadSignature)
    );
    let mut flipped = signature.clone().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    assert_eq!(
        store.open_local_link(&key, expires, &flipped, now),
        Err(LinkError::BadSignature)
    );
    assert_eq!(
        store.open_local_link(&key, expires, "not base64!", now),
        Err(LinkError::MalformedSignature)
    );
    assert!(matches!(
        store.open_local_link("../coa/report.pdf", expires, &signature, now),
        Err(LinkError::InvalidKey(_))
    ));
    assert!(matches!(
        store.open_local_link_query(&key, &format!("{query}&filename=x.html"), now),
        Err(LinkError::MalformedQuery(_))
    ));
    // Another service's store, or another key, does not accept the link.
    let other = BlobStore::new(&BlobSettings::local(&local.dir, "https://lab.example"), "labels").unwrap();
    assert_eq!(
        other.open_local_link(&key, expires, &signature, now),
        Err(LinkError::BadSignature)
    );
    let rekeyed = BlobSettings::local(&local.dir, "https://lab.example")
        .with_download_url_key("another-download-url-key-of-40-characters".to_owned().into());
    let rekeyed = BlobStore::new(&rekeyed, "results").unwrap();
    assert_eq!(
        rekeyed.open_local_link(&key, expires, &signature, now),
        Err(LinkError::BadSignature)
    );
}

#[tokio::test]
async fn s3_keeps_every_byte_of_a_blob() {
    let Some(server) = S3rver::start() else { return };
    let store = s3_store(&server);
    a_round_trip_keeps_every_byte(&store).await;
    assert!(!store.is_local());
}

#[tokio::test]
async fn s3_tells_a_missing_blob_from_an_invalid_key() {
    let Some(server) = S3rver::start() else { return };
    missing_objects_and_invalid_keys_are_told_apart(&s3_store(&server)).await;
    assert_eq!(
        s3_store(&server).open_local_link("coa/a.pdf", i64::MAX, "sig", Utc::now()),
        Err(LinkError::NotLocal)
    );
}

/// The status and body of a GET of `url`.
async fn download(url: &str) -> (u16, Bytes) {
    let response = reqwest::get(url).await.expect("s3rver answers");
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap())
}

#[tokio::test]
async fn a_presigned_s3_url_downloads_the_blob_until_it_expires() {
    let Some(server) = S3rver::start() else { return };
    let store = s3_store(&server);
    let bytes = sample();
    store.put("coa/presigned.bin", bytes.clone()).await.unwrap();
    let url = store
        .signed_url("coa/presigned.bin", Utc::now() + ChronoDuration::seconds(2))
        .await
        .unwrap();
    let expires = url
        .query_pairs()
        .find(|(name, _)| name == "X-Amz-Expires")
        .unwrap()
        .1;
    assert!(["2", "3"].contains(&expires.as_ref()), "X-Amz-Expires={expires}");
    let (status, body) = download(url.as_str()).await;
    assert_eq!(status, 200);
    assert_eq!(sha256(&body), sha256(&bytes));
    wait_for(
        "s3rver to refuse the expired URL",
        Duration::from_secs(15),
        || async {
            let (status, body) = download(url.as_str()).await;
            (status == 403).then_some(body)
        },
    )
    .await;
    let (status, body) = download(url.as_str()).await;
    assert_eq!(status, 403);
    assert!(String::from_utf8_lossy(&body).contains("Request has expired"));
}

#[tokio::test]
async fn s3rver_refuses_an_unknown_access_key_or_a_backdated_url_but_checks_no_signature() {
    let Some(server) = S3rver::start() else { return };
    let store = s3_store(&server);
    store.put("coa/tamper.bin", sample()).await.unwrap();
    store.put("coa/other.bin", sample()).await.unwrap();
    let url = store
        .signed_url("coa/tamper.bin", Utc::now() + ChronoDuration::minutes(5))
        .await
        .unwrap();
    let text = url.as_str();
    assert_eq!(download(text).await.0, 200);

    // What s3rver enforces: the access key and the expiry (a date moved back a day).
    assert_eq!(download(&text.replace("S3RVER%2F", "INTRUDER%2F")).await.0, 403);
    let date = url
        .query_pairs()
        .find(|(name, _)| name == "X-Amz-Date")
        .unwrap()
        .1
        .into_owned();
    let yesterday = (Utc::now() - ChronoDuration::days(1))
        .format("%Y%m%dT%H%M%SZ")
        .to_string();
    assert_eq!(download(&text.replace(&date, &yesterday)).await.0, 403);

    // What it does not: these edits would fail on AWS S3 (SignatureDoesNotMatch) but s3rver
    // computes no SigV4 signature. Asserted so that a s3rver that starts checking shows up here
    // and these lines become refusals.
    let signature = url
        .query_pairs()
        .find(|(name, _)| name == "X-Amz-Signature")
        .unwrap()
        .1
        .into_owned();
    let wrong = format!(
        "{}{}",
        &signature[..signature.len() - 1],
        if signature.ends_with('0') { '1' } else { '0' }
    );
    let lifetime = url
        .query_pairs()
        .find(|(name, _)| name == "X-Amz-Expires")
        .unwrap()
        .1
        .into_owned();
    let unchecked = [
        text.replace(&signature, &wrong),
        text.replace(&format!("X-Amz-Expires={lifetime}"), "X-Amz-Expires=604000"),
        text.replace("coa/tamper.bin", "coa/other.bin"),
        format!("{text}&response-content-type=text%2Fhtml"),
    ];
    for edited in unchecked {
        assert_eq!(
            download(&edited).await.0,
            200,
            "s3rver now refuses {edited}: tighten this test"
        );
    }
}

fn ministack_store(server: &Ministack) -> BlobStore {
    BlobStore::new(&server.settings(), "results").unwrap()
}

/// The S3 error code of an error body (`<Error><Code>…</Code>…`), or the whole body.
fn s3_error_code(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map_or_else(|| text.clone().into_owned(), |(code, _)| code.to_owned())
}

/// The value of the query parameter `name` of `url`.
fn query_value(url: &url::Url, name: &str) -> String {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .unwrap_or_else(|| panic!("{url} has no {name}"))
        .1
        .into_owned()
}

/// `url` with the query parameter `name` set to `value` (the others kept, in order).
fn with_query_value(url: &url::Url, name: &str, value: &str) -> url::Url {
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    assert!(pairs.iter().any(|(key, _)| key == name), "{url} has no {name}");
    let mut edited = url.clone();
    edited.query_pairs_mut().clear().extend_pairs(
        pairs
            .iter()
            .map(|(key, old)| (key.as_str(), if key == name { value } else { old.as_str() })),
    );
    edited
}

#[tokio::test]
async fn a_verifying_s3_server_keeps_every_byte_of_a_blob() {
    let Some(server) = Ministack::start() else { return };
    let store = ministack_store(&server);
    a_round_trip_keeps_every_byte(&store).await;
    let bytes = sample();
    store.put("coa/kept.bin", bytes.clone()).await.unwrap();
    assert_eq!(store.get("coa/kept.bin").await.unwrap(), bytes);
    let url = store
        .signed_url("coa/kept.bin", Utc::now() + ChronoDuration::minutes(5))
        .await
        .unwrap();
    assert!(
        url.query_pairs().any(|(name, _)| name == "X-Amz-Signature"),
        "{url}"
    );
    let (status, body) = download(url.as_str()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, bytes);
}

#[tokio::test]
async fn a_tampered_presigned_url_is_refused_by_a_verifying_s3_server() {
    let Some(server) = Ministack::start() else { return };
    let store = ministack_store(&server);
    let bytes = sample();
    store.put("coa/tamper.bin", bytes.clone()).await.unwrap();
    store.put("coa/other.bin", sample()).await.unwrap();
    let url = store
        .signed_url("coa/tamper.bin", Utc::now() + ChronoDuration::minutes(5))
        .await
        .unwrap();
    let (status, body) = download(url.as_str()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, bytes);
    // The edits below rebuild the query; rebuilt unchanged, it still downloads, so a refusal is
    // the edit's doing and not the rebuilding's.
    let signature = query_value(&url, "X-Amz-Signature");
    let rebuilt = with_query_value(&url, "X-Amz-Signature", &signature);
    assert_eq!(download(rebuilt.as_str()).await.0, 200, "{rebuilt}");

    // One hex digit of the signature, changed to one that surely differs.
    let mut flipped = signature.clone().into_bytes();
    flipped[0] = if flipped[0] == b'0' { b'1' } else { b'0' };
    let flipped = String::from_utf8(flipped).unwrap();
    assert_ne!(flipped, signature);
    let credential = query_value(&url, "X-Amz-Credential");
    let (access_key, scope) = credential.split_once('/').unwrap();
    assert_eq!(access_key, platform::testing::ministack::MINISTACK_ACCESS_KEY_ID);
    let lifetime: i64 = query_value(&url, "X-Amz-Expires").parse().unwrap();
    let date = query_value(&url, "X-Amz-Date");
    let signed_at = chrono::NaiveDateTime::parse_from_str(&date, "%Y%m%dT%H%M%SZ").unwrap();
    let a_second_earlier = (signed_at - ChronoDuration::seconds(1))
        .format("%Y%m%dT%H%M%SZ")
        .to_string();
    let mut added = url.clone();
    added
        .query_pairs_mut()
        .append_pair("response-content-type", "text/html");
    let mut other_key = url.clone();
    other_key.set_path(&url.path().replace("coa/tamper.bin", "coa/other.bin"));
    assert_ne!(other_key.path(), url.path());
    let other_secret = BlobSettings::s3(
        &server.endpoint,
        &server.bucket,
        platform::blobs::DEFAULT_S3_REGION,
        access_key,
        "another-secret-than-the-servers",
    );
    let other_secret = BlobStore::new(&other_secret, "results")
        .unwrap()
        .signed_url("coa/tamper.bin", Utc::now() + ChronoDuration::minutes(5))
        .await
        .unwrap();

    let tampered = [
        (
            "a changed signature",
            with_query_value(&url, "X-Amz-Signature", &flipped),
            "SignatureDoesNotMatch",
        ),
        (
            "another access key id",
            with_query_value(&url, "X-Amz-Credential", &format!("INTRUDERKEY/{scope}")),
            "InvalidAccessKeyId",
        ),
        (
            "a longer X-Amz-Expires",
            with_query_value(&url, "X-Amz-Expires", &(lifetime + 3600).to_string()),
            "SignatureDoesNotMatch",
        ),
        (
            "a shorter X-Amz-Expires",
            with_query_value(&url, "X-Amz-Expires", &(lifetime - 60).to_string()),
            "SignatureDoesNotMatch",
        ),
        (
            "an X-Amz-Date a second earlier",
            with_query_value(&url, "X-Amz-Date", &a_second_earlier),
            "SignatureDoesNotMatch",
        ),
        ("an added query parameter", added, "SignatureDoesNotMatch"),
        ("another key in the path", other_key, "SignatureDoesNotMatch"),
        (
            "a URL signed with another secret",
            other_secret,
            "SignatureDoesNotMatch",
        ),
    ];
    for (edit, edited, code) in tampered {
        assert_ne!(edited, url, "{edit} changes the URL");
        let (status, body) = download(edited.as_str()).await;
        assert_eq!(
            (status, s3_error_code(&body)),
            (403, code.to_owned()),
            "{edit}: {edited}"
        );
    }
    let (status, body) = download(url.as_str()).await;
    assert_eq!(status, 200, "the untampered URL after the tampered ones");
    assert_eq!(body, bytes);
}

#[tokio::test]
async fn an_expired_presigned_url_is_refused_by_a_verifying_s3_server() {
    let Some(server) = Ministack::start() else { return };
    let store = ministack_store(&server);
    let bytes = sample();
    store.put("coa/expiring.bin", bytes.clone()).await.unwrap();
    let url = store
        .signed_url("coa/expiring.bin", Utc::now() + ChronoDuration::seconds(2))
        .await
        .unwrap();
    let lifetime = query_value(&url, "X-Amz-Expires");
    assert!(
        ["2", "3"].contains(&lifetime.as_str()),
        "X-Amz-Expires={lifetime}"
    );
    let (status, body) = download(url.as_str()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, bytes);
    let (status, body) = wait_for(
        "ministack to refuse the expired URL",
        Duration::from_secs(15),
        || async {
            let (status, body) = download(url.as_str()).await;
            (status != 200).then_some((status, body))
        },
    )
    .await;
    assert_eq!((status, s3_error_code(&body)), (403, "AccessDenied".to_owned()));
    assert!(
        String::from_utf8_lossy(&body).contains("Request has expired"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

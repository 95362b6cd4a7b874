//! `BlobSettings::from_lookup` over fixed environments.

use super::*;
use secrecy::ExposeSecret;
use std::collections::HashMap;

const KEY: &str = "a-download-url-key-of-forty-characters-00";

fn read(variables: &[(&str, &str)], dev_mode: bool) -> (anyhow::Result<BlobSettings>, anyhow::Result<()>) {
    let variables: HashMap<String, String> = variables
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    let mut need = Requirements::new("test-svc", dev_mode);
    let settings = BlobSettings::from_lookup("RESULTS", dev_mode, &mut need, &|name| {
        variables.get(name).cloned()
    });
    (settings, need.finish())
}

#[test]
fn a_file_url_selects_a_local_store_with_its_link_key() {
    let (settings, _) = read(
        &[
            ("RESULTS_BLOB_STORE", "file:///var/lib/lab/blobs"),
            ("RESULTS_DOWNLOAD_URL_KEY", KEY),
        ],
        false,
    );
    let settings = settings.unwrap();
    assert_eq!(
        settings.location,
        BlobLocation::Local {
            dir: PathBuf::from("/var/lib/lab/blobs")
        }
    );
    assert_eq!(settings.download_url_key.expose_secret(), KEY);
}

#[test]
fn an_s3_url_reads_its_bucket_prefix_endpoint_region_and_own_credentials_first() {
    let (settings, _) = read(
        &[
            ("RESULTS_BLOB_STORE", "s3://lab-files/results/coa"),
            ("RESULTS_S3_ENDPOINT", "http://127.0.0.1:4569/"),
            ("RESULTS_S3_REGION", "eu-west-1"),
            ("RESULTS_S3_ACCESS_KEY_ID", "own-id"),
            ("RESULTS_S3_SECRET_ACCESS_KEY", "own-secret"),
            ("AWS_ACCESS_KEY_ID", "aws-id"),
            ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ],
        true,
    );
    let BlobLocation::S3(s3) = settings.unwrap().location else {
        panic!("not s3")
    };
    assert_eq!(
        s3,
        S3Settings {
            bucket: "lab-files".into(),
            prefix: Some("results/coa".into()),
            endpoint: Some("http://127.0.0.1:4569".into()),
            region: "eu-west-1".into(),
            access_key_id: Some("own-id".into()),
            secret_access_key: Some("own-secret".to_owned().into()),
        }
    );
}

#[test]
fn an_s3_store_falls_back_to_the_aws_credentials_and_the_default_region() {
    let (settings, _) = read(
        &[
            ("RESULTS_BLOB_STORE", "s3://lab-files"),
            ("AWS_ACCESS_KEY_ID", "aws-id"),
            ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ],
        true,
    );
    let BlobLocation::S3(s3) = settings.unwrap().location else {
        panic!("not s3")
    };
    assert_eq!(
        (s3.prefix, s3.endpoint, s3.region.as_str()),
        (None, None, DEFAULT_S3_REGION)
    );
    assert_eq!(s3.access_key_id.as_deref(), Some("aws-id"));
}

#[test]
fn an_s3_store_without_credentials_is_refused() {
    let (settings, _) = read(&[("RESULTS_BLOB_STORE", "s3://lab-files")], true);
    assert!(settings.unwrap_err().to_string().contains("AWS_ACCESS_KEY_ID"));
}

#[test]
fn a_local_store_without_its_link_key_is_refused_outside_development_mode() {
    let (settings, finished) = read(&[("RESULTS_BLOB_STORE", "file:///var/lib/lab/blobs")], false);
    let key = settings.unwrap().download_url_key;
    assert_ne!(key.expose_secret(), DEVELOPMENT_DOWNLOAD_URL_KEY);
    let problems = finished.unwrap_err().to_string();
    assert!(
        problems.contains("RESULTS_DOWNLOAD_URL_KEY is not set"),
        "{problems}"
    );
}

#[test]
fn the_development_link_key_or_a_short_one_is_refused_outside_development_mode() {
    for key in [DEVELOPMENT_DOWNLOAD_URL_KEY, "short"] {
        let (_, finished) = read(
            &[
                ("RESULTS_BLOB_STORE", "file:///srv/blobs"),
                ("RESULTS_DOWNLOAD_URL_KEY", key),
            ],
            false,
        );
        let problems = finished.unwrap_err().to_string();
        assert!(problems.contains("RESULTS_DOWNLOAD_URL_KEY"), "{problems}");
    }
}

#[test]
fn development_mode_defaults_to_a_directory_under_the_state_dir_and_the_development_key() {
    let (settings, finished) = read(&[("LAB_STATE_DIR", "/tmp/lab-state")], true);
    let settings = settings.unwrap();
    assert_eq!(
        settings.location,
        BlobLocation::Local {
            dir: PathBuf::from("/tmp/lab-state/blobs/results")
        }
    );
    assert_eq!(
        settings.download_url_key.expose_secret(),
        DEVELOPMENT_DOWNLOAD_URL_KEY
    );
    assert!(finished.is_ok());
}

#[test]
fn a_missing_store_is_refused_outside_development_mode() {
    let (_, finished) = read(&[("RESULTS_DOWNLOAD_URL_KEY", KEY)], false);
    assert!(
        finished
            .unwrap_err()
            .to_string()
            .contains("RESULTS_BLOB_STORE is not set")
    );
}

#[test]
fn a_link_key_may_be_read_from_a_file() {
    let path = std::env::temp_dir().join(format!("blob-key-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, format!("{KEY}\n")).unwrap();
    let reference = format!("@{}", path.display());
    let (settings, _) = read(
        &[
            ("RESULTS_BLOB_STORE", "file:///srv/blobs"),
            ("RESULTS_DOWNLOAD_URL_KEY", &reference),
        ],
        false,
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(settings.unwrap().download_url_key.expose_secret(), KEY);
}

#[test]
fn malformed_store_urls_are_refused() {
    for value in [
        "/var/lib/blobs",
        "file://host/var/lib/blobs",
        "ftp://bucket",
        "s3://",
        "s3://user:secret@bucket",
        "s3://bucket/../x",
        "s3://bucket?region=x",
    ] {
        let (settings, _) = read(&[("RESULTS_BLOB_STORE", value)], true);
        assert!(settings.is_err(), "{value}");
    }
}

#[test]
fn a_store_without_links_needs_no_link_key_outside_development_mode() {
    let variables: HashMap<String, String> = HashMap::from([(
        "SHIPPING_BLOB_STORE".to_owned(),
        "file:///var/lib/lab/labels".to_owned(),
    )]);
    let mut need = Requirements::new("shipping-svc", false);
    let settings = BlobSettings::read(
        "SHIPPING",
        false,
        &mut need,
        &|name| variables.get(name).cloned(),
        false,
    )
    .unwrap();
    // (The site root is the only other requirement, read from the process environment.)
    if let Err(refused) = need.finish() {
        assert!(!refused.to_string().contains("DOWNLOAD_URL_KEY"), "{refused}");
    }
    assert_eq!(
        settings.location,
        BlobLocation::Local {
            dir: PathBuf::from("/var/lib/lab/labels")
        }
    );
    assert_ne!(
        settings.download_url_key.expose_secret(),
        DEVELOPMENT_DOWNLOAD_URL_KEY,
        "never the published key"
    );
    // The store itself is still required.
    let mut need = Requirements::new("shipping-svc", false);
    let _ = BlobSettings::read("SHIPPING", false, &mut need, &|_| None, false);
    let refused = need.finish().unwrap_err().to_string();
    assert!(refused.contains("SHIPPING_BLOB_STORE"), "{refused}");
}

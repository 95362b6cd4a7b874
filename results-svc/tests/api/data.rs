//! Data products over gRPC: imports (parsed, failed, repeated, raced), the raw-data manifest
//! with local download links, and the exports' paging through ties, split publications and
//! rows committed while a reader pages.

use crate::helpers::{TestApp, spawn_app};
use platform::grpc::outgoing;
use proto::results as pb;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use uuid::Uuid;

const CSV: &[u8] = include_bytes!("../data/instruments/quant_report.csv");

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn header(accession: &str, filename: &str, file: &[u8]) -> pb::ImportHeader {
    pb::ImportHeader {
        accession_number: accession.into(),
        result_set: "quant".into(),
        vendor: "Agilent".into(),
        filename: filename.into(),
        mime_type: Some("text/csv".into()),
        client_sha256: Some(sha256_hex(file)),
        connector_version: Some("test/1".into()),
        ..Default::default()
    }
}

async fn import(
    app: &TestApp,
    header: pb::ImportHeader,
    file: &[u8],
) -> Result<pb::ImportResponse, tonic::Status> {
    let mut messages = vec![pb::ImportChunk {
        part: Some(pb::import_chunk::Part::Header(Box::new(header))),
    }];
    // Small chunks: the service reassembles them in order.
    messages.extend(file.chunks(100).map(|chunk| pb::ImportChunk {
        part: Some(pb::import_chunk::Part::FileChunk(chunk.to_vec())),
    }));
    let mut client = app.client.clone();
    client
        .import_instrument_file(outgoing(futures::stream::iter(messages), &app.analyst()))
        .await
        .map(tonic::Response::into_inner)
}

fn data_key(app: &TestApp, customer: Uuid) -> String {
    app.keys.customer(
        customer,
        &[
            proto::scopes::RAW_DATA_READ,
            proto::scopes::INSTRUMENTS_READ,
            proto::scopes::RESULTS_READ,
        ],
    )
}

#[tokio::test]
async fn an_import_parses_once_and_a_repeat_or_a_race_of_the_same_file_stores_nothing_more() {
    let app = spawn_app().await;
    let sample = app.sample_in_testing(Uuid::now_v7()).await;
    let first = import(&app, header(&sample.accession, "quant.csv", CSV), CSV)
        .await
        .unwrap();
    let stored = first.import.unwrap();
    assert!(!first.unchanged);
    assert_eq!(
        (stored.parse_status.as_str(), stored.measurement_count),
        ("parsed", 5)
    );
    assert_eq!(stored.sha256, sha256_hex(CSV));
    assert!(stored.integrity_verified_at.is_some());
    assert_eq!(
        stored.instrument_name.as_deref(),
        Some("Agilent 6470 Triple Quad LC/MS, SN SG2204A112")
    );
    assert_eq!(stored.run_identifier.as_deref(), Some("B240514-03"));

    // The same file again, twice at once: the stored import answers, unchanged.
    let (a, b) = tokio::join!(
        import(&app, header(&sample.accession, "quant.csv", CSV), CSV),
        import(&app, header(&sample.accession, "quant.csv", CSV), CSV)
    );
    for again in [a.unwrap(), b.unwrap()] {
        assert!(again.unchanged);
        assert_eq!(again.import.unwrap().id, stored.id);
    }
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM results.instrument_measurements")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 5);

    // A file that does not parse is stored with its error; a wrong client hash is not verified.
    let broken = b"Analyte,RT (min)\r\nBenzo,abc\r\n";
    let mut broken_header = header(&sample.accession, "broken.csv", broken);
    broken_header.client_sha256 = Some("ab".repeat(32));
    let failed = import(&app, broken_header, broken).await.unwrap().import.unwrap();
    assert_eq!(failed.parse_status, "failed");
    assert!(failed.parse_error.as_deref().is_some_and(|e| !e.is_empty()));
    assert!(failed.integrity_verified_at.is_none());
    assert_eq!(failed.measurement_count, 0);

    // Refusals: unknown sample, a path for a name, no header, a bad hash.
    let refused = import(&app, header("ACC-NOPE", "a.csv", CSV), CSV)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound);
    let refused = import(&app, header(&sample.accession, "../etc/passwd", CSV), CSV)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    let mut bad_hash = header(&sample.accession, "c.csv", CSV);
    bad_hash.client_sha256 = Some("xyz".into());
    assert_eq!(
        import(&app, bad_hash, CSV).await.unwrap_err().code(),
        tonic::Code::InvalidArgument
    );
    let imports: i64 = sqlx::query_scalar("SELECT count(*) FROM results.instrument_imports")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(imports, 2, "refused imports wrote nothing");
}

#[tokio::test]
async fn a_published_coa_releases_earlier_imports_whose_local_links_return_the_exact_bytes() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let sample = app.sample_in_testing(customer).await;
    app.pay(&sample).await;
    app.approved(&sample.accession).await;
    import(&app, header(&sample.accession, "quant.csv", CSV), CSV)
        .await
        .unwrap();
    let key = data_key(&app, customer);
    let request = || pb::RawDataRequest {
        order_id: sample.order_id.to_string(),
        order_number: "ORD-1".into(),
    };
    let mut client = app.client.clone();
    let unpublished = client
        .get_raw_data_manifest(outgoing(request(), &key))
        .await
        .unwrap_err();
    assert_eq!(unpublished.code(), tonic::Code::NotFound);

    crate::helpers::wait_until_paid(&app, &sample).await;
    let coa = app
        .publish_as(&app.qa(), &sample.accession)
        .await
        .unwrap()
        .coa
        .unwrap();
    // Imported after publication: released by no COA yet.
    import(&app, header(&sample.accession, "late.csv", CSV), CSV)
        .await
        .unwrap();
    let manifest = client
        .get_raw_data_manifest(outgoing(request(), &key))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(manifest.files.len(), 1, "{manifest:?}");
    let file = &manifest.files[0];
    assert_eq!(file.releases[0].coa_id, coa.id);
    assert_eq!(
        manifest.expires_at.unwrap().seconds - manifest.generated_at.unwrap().seconds,
        3600
    );
    let url = url::Url::parse(&file.download_url).unwrap();
    let query: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    let key_path = url.path().trim_start_matches("/api/v1/files/results/");
    let open = |key: &str, expires: i64, signature: &str| pb::OpenDownloadRequest {
        key: percent_decode(key),
        expires,
        signature: signature.to_owned(),
    };
    let expires: i64 = query["expires"].parse().unwrap();
    let mut stream = client
        .open_download(open(key_path, expires, &query["signature"]))
        .await
        .unwrap()
        .into_inner();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.message().await.unwrap() {
        bytes.extend_from_slice(&chunk.data);
    }
    assert_eq!(sha256_hex(&bytes), file.sha256);
    assert_eq!(bytes, CSV);
    // An altered link opens nothing.
    for (key, expires, signature) in [
        (
            key_path.replace("quant", "late"),
            expires,
            query["signature"].clone(),
        ),
        (key_path.to_owned(), expires + 1, query["signature"].clone()),
        (
            key_path.to_owned(),
            expires,
            // Another first character (a signature may start with "A" itself).
            format!(
                "{}{}",
                if query["signature"].starts_with('A') {
                    'B'
                } else {
                    'A'
                },
                &query["signature"][1..]
            ),
        ),
    ] {
        let refused = client
            .open_download(open(&key, expires, &signature))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::NotFound);
    }
    // Another customer sees no manifest of this order.
    let other = data_key(&app, Uuid::now_v7());
    let foreign = client
        .get_raw_data_manifest(outgoing(request(), &other))
        .await
        .unwrap_err();
    assert_eq!(foreign.code(), tonic::Code::NotFound);
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// Inserts `coas` published COAs of `customer` with `rows` analyte rows each; every `per_stamp`
/// consecutive COAs share one `published_at` (ties), stamps one second apart from `start`.
async fn seed_published(app: &TestApp, customer: Uuid, coas: i32, rows: i32, per_stamp: i32, start: &str) {
    let order = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO results.samples (accession_number, customer_id, order_id, order_number, line_number, compound, \
           test_ids, test_names, received_at) \
         SELECT 'ACC-SEED-' || n, $1, $2, 'ORD-SEED', n, 'BPC-157', ARRAY['hplc-purity'], ARRAY['HPLC'], now() \
         FROM generate_series(1, $3) n",
    )
    .bind(customer)
    .bind(order)
    .bind(coas)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO results.coas (id, submission_id, accession_number, customer_id, order_id, version, status, \
           verification_code, created_at, updated_at, published_at) \
         SELECT gen_random_uuid(), gen_random_uuid(), 'ACC-SEED-' || n, $1, $2, 1, 'published', 'CODE', now(), now(), \
           $4::timestamptz + ((n - 1) / $5) * interval '1 second' \
         FROM generate_series(1, $3) n",
    )
    .bind(customer)
    .bind(order)
    .bind(coas)
    .bind(start)
    .bind(per_stamp)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO results.analyte_results (coa_id, customer_id, position, analyte, test_id, value, unit, method, \
           instrument, analyst, measured_at) \
         SELECT c.id, $1, p, 'Analyte ' || p, 'hplc-purity', '99.' || p, '%', 'USP <621>', 'HPLC-01', 'ana', now() \
         FROM results.coas c CROSS JOIN generate_series(1, $2) p WHERE c.customer_id = $1",
    )
    .bind(customer)
    .bind(rows)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// One export page as JSON: (rows, truncated, nextSince, nextCursor).
async fn export_page(
    app: &TestApp,
    token: &str,
    since: Option<&str>,
    cursor: Option<&str>,
    limit: i32,
) -> (Vec<Value>, bool, Option<String>, Option<String>) {
    let mut client = app.client.clone();
    let request = pb::ExportRequest {
        since: since.map(|since| platform::time::to_timestamp(since.parse().unwrap())),
        cursor: cursor.map(str::to_owned),
        format: "json".into(),
        limit,
    };
    let mut stream = client
        .export_coas(outgoing(request, token))
        .await
        .unwrap()
        .into_inner();
    let Some(pb::export_chunk::Part::Head(head)) = stream.message().await.unwrap().unwrap().part else {
        panic!("the head comes first");
    };
    let mut text = String::from("[");
    while let Some(chunk) = stream.message().await.unwrap() {
        if let Some(pb::export_chunk::Part::Rows(rows)) = chunk.part {
            text.push_str(std::str::from_utf8(&rows).unwrap());
        }
    }
    text.push(']');
    let rows: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(rows.len(), usize::try_from(head.row_count).unwrap());
    let next_since = head
        .next_since
        .as_ref()
        .and_then(platform::time::from_timestamp)
        .map(platform::time::rfc3339);
    (rows, head.truncated, next_since, head.next_cursor)
}

/// Pages through the whole export as a client does; returns every row key in order.
async fn page_through(app: &TestApp, token: &str, limit: i32) -> Vec<(String, String)> {
    let (mut since, mut cursor, mut keys) = (None::<String>, None::<String>, Vec::new());
    for _ in 0..100 {
        let (rows, truncated, next_since, next_cursor) =
            export_page(app, token, since.as_deref(), cursor.as_deref(), limit).await;
        assert!(rows.len() <= usize::try_from(limit).unwrap());
        if let Some(last) = rows.last() {
            assert_eq!(Some(last["publishedAt"].as_str().unwrap().to_owned()), next_since);
        }
        keys.extend(rows.iter().map(|row| {
            (
                row["coaId"].as_str().unwrap().to_owned(),
                row["analyte"].as_str().unwrap().to_owned(),
            )
        }));
        if !truncated {
            return keys;
        }
        (since, cursor) = (next_since, next_cursor);
    }
    panic!("the export never ended");
}

#[tokio::test]
async fn twelve_thousand_rows_sharing_timestamps_page_through_without_loss_or_duplicate() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    // 1,200 COAs of 10 rows: 12,000 rows, every 60 COAs (600 rows) sharing one publishedAt.
    seed_published(&app, customer, 1200, 10, 60, "2026-01-01T00:00:00Z").await;
    let token = app.customer(customer);
    for limit in [5000, 1000, 250] {
        // 250 < 600: every publication time is split and continued by the cursor.
        let keys = page_through(&app, &token, limit).await;
        assert_eq!(keys.len(), 12_000, "limit {limit}");
        let unique: HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), 12_000, "no duplicate at limit {limit}");
    }
    // Pages end on whole publication times: the first 5000-row page holds 8 groups of 600.
    let (rows, truncated, _, cursor) = export_page(&app, &token, None, None, 5000).await;
    assert_eq!((rows.len(), truncated, cursor), (4800, true, None));
    // Another customer's export is empty.
    let (rows, truncated, _, _) = export_page(&app, &app.customer(Uuid::now_v7()), None, None, 5000).await;
    assert_eq!((rows.len(), truncated), (0, false));
}

#[tokio::test]
async fn a_publication_committed_while_a_reader_pages_comes_after_every_row_the_reader_saw() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    seed_published(&app, customer, 30, 10, 1, "2026-01-01T00:00:00Z").await;
    let token = app.customer(customer);
    // Publication A takes its stamp and holds its transaction open.
    let mut a = app.pool.begin().await.unwrap();
    let stamp_a = results_svc::repo::publication_stamp(&mut a, platform::time::now())
        .await
        .unwrap();
    // Publication B waits for A's lock.
    let pool = app.pool.clone();
    let b = tokio::spawn(async move {
        let mut b = pool.begin().await.unwrap();
        let stamp = results_svc::repo::publication_stamp(&mut b, platform::time::now())
            .await
            .unwrap();
        (b, stamp)
    });
    // The reader pages to the end: neither A nor B is visible.
    let (rows, truncated, last_seen, _) = export_page(&app, &token, None, None, 5000).await;
    assert_eq!((rows.len(), truncated), (300, false));
    // A commits a COA with its stamp; then B gets a later stamp and commits one too.
    for (tx, stamp, name) in [(&mut a, stamp_a, "LATE-A")] {
        insert_coa_at(tx, customer, name, stamp).await;
    }
    a.commit().await.unwrap();
    let (mut b, stamp_b) = b.await.unwrap();
    assert!(stamp_b > stamp_a, "stamps follow commit order");
    insert_coa_at(&mut b, customer, "LATE-B", stamp_b).await;
    b.commit().await.unwrap();
    assert!(
        platform::time::rfc3339(stamp_a) > last_seen.clone().unwrap(),
        "stamped after every visible row"
    );
    // The reader continues from the last publishedAt it saw: both late publications arrive.
    let (rows, _, _, _) = export_page(&app, &token, last_seen.as_deref(), None, 5000).await;
    let accessions: Vec<&str> = rows
        .iter()
        .map(|row| row["accessionNumber"].as_str().unwrap())
        .collect();
    assert_eq!(accessions, ["LATE-A", "LATE-B"]);
}

async fn insert_coa_at(
    tx: &mut sqlx::PgConnection,
    customer: Uuid,
    accession: &str,
    at: chrono::DateTime<chrono::Utc>,
) {
    sqlx::query(
        "INSERT INTO results.samples (accession_number, customer_id, order_id, order_number, line_number, compound, \
           test_ids, test_names, received_at) VALUES ($1, $2, gen_random_uuid(), 'ORD-LATE', 1, 'BPC-157', \
           ARRAY['hplc-purity'], ARRAY['HPLC'], now())",
    )
    .bind(accession)
    .bind(customer)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "WITH c AS (INSERT INTO results.coas (id, submission_id, accession_number, customer_id, order_id, version, \
           status, verification_code, created_at, updated_at, published_at) \
           SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, order_id, 1, 'published', 'CODE', now(), now(), $3 \
           FROM results.samples WHERE accession_number = $1 RETURNING id) \
         INSERT INTO results.analyte_results (coa_id, customer_id, position, analyte, test_id, value, unit, method, \
           instrument, analyst, measured_at) \
         SELECT c.id, $2, 1, 'Purity', 'hplc-purity', '99.1', '%', 'USP <621>', 'HPLC-01', 'ana', now() FROM c",
    )
    .bind(accession)
    .bind(customer)
    .bind(at)
    .execute(&mut *tx)
    .await
    .unwrap();
}

//! ImportCatalog: revisions, unchanged re-imports, validation and the staff role.

use crate::helpers::{assert_error, sample_catalog, spawn_app};
use serde_json::json;

#[tokio::test]
async fn an_import_creates_a_revision_with_its_counts() {
    let app = spawn_app().await;
    let imported = app.import(&sample_catalog()).await;
    assert_eq!(imported.catalog_revision, "rev-000001");
    assert_eq!(
        (imported.test_count, imported.bundle_count, imported.unchanged),
        (7, 2, false)
    );
    let stored: (bool, String) =
        sqlx::query_as("SELECT is_current, note FROM catalog.revisions WHERE id = 'rev-000001'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(stored, (true, "test import".to_owned()));
}

#[tokio::test]
async fn an_identical_reimport_is_unchanged_and_keeps_the_revision() {
    let app = spawn_app().await;
    let first = app.import(&sample_catalog()).await;
    // Same content, other key order and whitespace.
    let mut reordered = serde_json::Map::new();
    for key in ["bundles", "tests", "turnarounds", "matrices", "categories"] {
        reordered.insert(key.to_owned(), sample_catalog()[key].clone());
    }
    let again = app.import(&serde_json::Value::Object(reordered)).await;
    assert!(again.unchanged);
    assert_eq!(again.catalog_revision, first.catalog_revision);
    assert_eq!((again.test_count, again.bundle_count), (7, 2));
    let revisions: i64 = sqlx::query_scalar("SELECT count(*) FROM catalog.revisions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(revisions, 1);
}

#[tokio::test]
async fn a_changed_document_becomes_a_new_current_revision_and_the_old_one_is_kept() {
    let app = spawn_app().await;
    let first = app.import(&sample_catalog()).await;
    let mut changed = sample_catalog();
    changed["tests"][0]["priceCents"] = json!(13000);
    let second = app.import(&changed).await;
    assert!(!second.unchanged);
    assert_eq!(second.catalog_revision, "rev-000002");
    let rows: Vec<(String, bool)> =
        sqlx::query_as("SELECT id, is_current FROM catalog.revisions ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![(first.catalog_revision, false), (second.catalog_revision, true)]
    );
}

#[tokio::test]
async fn an_invalid_document_is_rejected_with_the_offending_path() {
    let app = spawn_app().await;
    let mut document = sample_catalog();
    document["bundles"][1]["testIds"][1] = json!("nmr");
    let error = assert_error(
        app.import_as(&app.staff_token(&["catalog.admin"]), &document)
            .await,
        "invalid_request",
        Some("documentJson"),
    );
    assert_eq!(error.details.unwrap()["path"], "bundles[1].testIds[1]");
    assert!(
        error.message.contains("unknown test \"nmr\""),
        "{}",
        error.message
    );

    let mut unknown_field = sample_catalog();
    unknown_field["tests"][0]["colour"] = json!("blue");
    let error = assert_error(
        app.import_as(&app.staff_token(&["catalog.admin"]), &unknown_field)
            .await,
        "invalid_request",
        Some("documentJson"),
    );
    assert!(error.message.contains("colour"), "{}", error.message);
    let revisions: i64 = sqlx::query_scalar("SELECT count(*) FROM catalog.revisions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(revisions, 0);
}

#[tokio::test]
async fn an_import_records_the_operator_who_made_it() {
    let app = spawn_app().await;
    let token = app.keys.staff("carol", &["catalog.admin"]);
    let imported = app.import_as(&token, &sample_catalog()).await.unwrap();
    let imported_by: String = sqlx::query_scalar("SELECT imported_by FROM catalog.revisions WHERE id = $1")
        .bind(&imported.catalog_revision)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(imported_by, "carol");
}

#[tokio::test]
async fn an_import_without_the_catalog_admin_role_is_forbidden() {
    let app = spawn_app().await;
    assert_error(
        app.import_as(&app.customer_token(), &sample_catalog()).await,
        "forbidden",
        None,
    );
    assert_error(
        app.import_as(&app.staff_token(&["payments.admin"]), &sample_catalog())
            .await,
        "forbidden",
        None,
    );
    let service = app.keys.mint_service("orders-svc", Some(app.customer_id));
    assert_error(
        app.import_as(&service, &sample_catalog()).await,
        "forbidden",
        None,
    );
    assert_error(
        app.import_as("not-a-token", &sample_catalog()).await,
        "unauthenticated",
        None,
    );
}

#[tokio::test]
async fn the_shipped_catalog_imports_lists_and_quotes() {
    let app = spawn_app().await;
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalog.json")).unwrap();
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    let imported = app.import(&document).await;
    let expected =
        document["tests"].as_array().unwrap().len() + document["bundles"].as_array().unwrap().len();
    assert_eq!((imported.test_count + imported.bundle_count) as usize, expected);

    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let request = proto::catalog::ListCatalogItemsRequest {
            limit: Some(7),
            cursor,
            ..Default::default()
        };
        let page = app.list(request).await.unwrap();
        seen.extend(crate::helpers::ids(&page));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!((seen.len(), &seen), (expected, &sorted));

    let bundle = &document["bundles"][0];
    let category = bundle["categoryIds"][0].as_str().unwrap();
    let request = crate::helpers::quote_request(category, &["Sample 1"], &[bundle["id"].as_str().unwrap()]);
    let quote = app.create_quote(request).await.unwrap();
    assert_eq!(quote.total_cents, bundle["priceCents"].as_i64().unwrap());
    assert_eq!(
        quote.lines[0].sample_requirements.len(),
        bundle["testIds"].as_array().unwrap().len()
    );
}

//! ListCatalogItems: pages, cursors pinned to a revision and filters, filters and includes.

use crate::helpers::{SAMPLE_IDS, assert_error, ids, sample_catalog, spawn_app};
use proto::catalog as pb;
use serde_json::json;

fn list_request(limit: Option<i32>) -> pb::ListCatalogItemsRequest {
    pb::ListCatalogItemsRequest {
        limit,
        ..Default::default()
    }
}

#[tokio::test]
async fn listing_before_any_import_is_unavailable() {
    let app = spawn_app().await;
    assert_error(app.list(list_request(None)).await, "catalog_unavailable", None);
}

#[tokio::test]
async fn a_listing_after_an_import_returns_every_item_sorted_by_id() {
    let app = spawn_app().await;
    let imported = app.import(&sample_catalog()).await;
    let page = app.list(list_request(None)).await.unwrap();
    assert_eq!(page.catalog_revision, imported.catalog_revision);
    assert_eq!(ids(&page), SAMPLE_IDS);
    assert_eq!(page.next_cursor, None);
    let panel = page.items.iter().find(|item| item.id == "purity-panel").unwrap();
    assert_eq!(panel.kind, "bundle");
    assert_eq!(panel.test_ids, ["residual-solvents", "heavy-metals"]);
    assert_eq!(
        (panel.price_cents, panel.category_ids.clone()),
        (22000, vec!["purity".to_owned()])
    );
    let hplc = page.items.iter().find(|item| item.id == "hplc-potency").unwrap();
    assert_eq!(
        (hplc.kind.as_str(), hplc.method.as_str(), hplc.price_cents),
        ("test", "HPLC-UV", 12345)
    );
    assert!(
        hplc.sample_requirement.is_none(),
        "requirements are only sent when included"
    );
    assert!(page.categories.is_empty() && page.matrices.is_empty() && page.turnarounds.is_empty());
}

#[tokio::test]
async fn walking_cursors_with_small_limits_returns_every_item_exactly_once() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    for limit in [1, 2, 4, 8, 9] {
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let request = pb::ListCatalogItemsRequest {
                limit: Some(limit),
                cursor: cursor.take(),
                ..Default::default()
            };
            let page = app.list(request).await.unwrap();
            assert!(page.items.len() <= limit as usize);
            seen.extend(ids(&page));
            pages += 1;
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, SAMPLE_IDS, "limit {limit}");
        assert_eq!(pages, SAMPLE_IDS.len().div_ceil(limit as usize), "limit {limit}");
    }
}

#[tokio::test]
async fn a_cursor_stays_pinned_to_its_revision_across_a_mid_walk_import() {
    let app = spawn_app().await;
    let first = app.import(&sample_catalog()).await;
    let page = app.list(list_request(Some(3))).await.unwrap();
    let mut seen = ids(&page);

    let mut changed = sample_catalog();
    changed["tests"]
        .as_array_mut()
        .unwrap()
        .retain(|test| test["id"] != "water-content");
    changed["tests"][0]["id"] = json!("aaa-first");
    changed["tests"].as_array_mut().unwrap().push(json!({
        "id": "nmr", "name": "NMR", "description": "", "method": "1H NMR", "categoryIds": ["potency"],
        "priceCents": 30000, "sampleRequirement": { "container": "NMR tube", "amount": "20 mg", "notes": "" }
    }));
    let second = app.import(&changed).await;
    assert_ne!(second.catalog_revision, first.catalog_revision);

    let mut cursor = page.next_cursor;
    while let Some(next) = cursor {
        let request = pb::ListCatalogItemsRequest {
            limit: Some(3),
            cursor: Some(next),
            ..Default::default()
        };
        let page = app.list(request).await.unwrap();
        assert_eq!(page.catalog_revision, first.catalog_revision);
        seen.extend(ids(&page));
        cursor = page.next_cursor;
    }
    assert_eq!(seen, SAMPLE_IDS);

    let fresh = app.list(list_request(Some(200))).await.unwrap();
    assert_eq!(fresh.catalog_revision, second.catalog_revision);
    assert_eq!(ids(&fresh).first().map(String::as_str), Some("aaa-first"));
    assert!(ids(&fresh).contains(&"nmr".to_owned()) && !ids(&fresh).contains(&"water-content".to_owned()));
}

#[tokio::test]
async fn the_category_filter_returns_only_items_quotable_in_it() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let request = pb::ListCatalogItemsRequest {
        category: Some("purity".into()),
        ..Default::default()
    };
    let page = app.list(request).await.unwrap();
    assert_eq!(
        ids(&page),
        [
            "heavy-metals",
            "hplc-potency",
            "purity-panel",
            "residual-solvents",
            "water-content"
        ]
    );
    let request = pb::ListCatalogItemsRequest {
        category: Some("toxicology".into()),
        ..Default::default()
    };
    assert_error(app.list(request).await, "unknown_category", Some("category"));
}

#[tokio::test]
async fn the_query_matches_id_name_description_and_method_case_insensitively() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let search = |query: &str| pb::ListCatalogItemsRequest {
        query: Some(query.into()),
        ..Default::default()
    };
    assert_eq!(ids(&app.list(search("icp-ms")).await.unwrap()), ["heavy-metals"]);
    assert_eq!(
        ids(&app.list(search("  PANEL ")).await.unwrap()),
        ["micro-panel", "purity-panel"]
    );
    assert_eq!(
        ids(&app.list(search("endotoxins")).await.unwrap()),
        ["endotoxin", "micro-panel"]
    );
    assert_eq!(
        ids(&app.list(search("Water-Con")).await.unwrap()),
        ["water-content"]
    );
    assert_eq!(ids(&app.list(search("%")).await.unwrap()), Vec::<String>::new());
    let both = pb::ListCatalogItemsRequest {
        category: Some("purity".into()),
        query: Some("ms".into()),
        ..Default::default()
    };
    assert_eq!(
        ids(&app.list(both).await.unwrap()),
        ["heavy-metals", "residual-solvents"]
    );
}

#[tokio::test]
async fn includes_add_requirements_and_blocks() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let include = |values: &[&str]| pb::ListCatalogItemsRequest {
        include: values.iter().map(|value| (*value).to_owned()).collect(),
        ..Default::default()
    };
    let page = app.list(include(&["requirements"])).await.unwrap();
    let hplc = page.items.iter().find(|item| item.id == "hplc-potency").unwrap();
    let requirement = hplc.sample_requirement.clone().unwrap();
    assert_eq!(
        (requirement.container.as_str(), requirement.amount.as_str()),
        ("2 mL amber glass vial", "10 mg")
    );
    assert!(
        page.items
            .iter()
            .filter(|item| item.kind == "bundle")
            .all(|item| item.sample_requirement.is_none())
    );
    assert!(page.categories.is_empty());

    let page = app
        .list(include(&["categories,matrices", "bundles"]))
        .await
        .unwrap();
    let categories: Vec<_> = page
        .categories
        .iter()
        .map(|c| (c.id.as_str(), c.conformity_sample_price_cents))
        .collect();
    assert_eq!(
        categories,
        [("potency", 2500), ("purity", 1000), ("microbiology", 1500)]
    );
    assert_eq!(page.categories[0].matrix_ids, ["powder", "liquid"]);
    assert_eq!(page.matrices.len(), 2);
    assert!(page.turnarounds.is_empty() && page.items.iter().all(|item| item.sample_requirement.is_none()));

    let page = app.list(include(&["all"])).await.unwrap();
    let rush = page.turnarounds.iter().find(|t| t.id == "rush").unwrap();
    assert_eq!((rush.business_days, rush.surcharge_basis_points), (2, 10000));
    assert_eq!(
        (page.categories.len(), page.matrices.len(), page.turnarounds.len()),
        (3, 2, 3)
    );
    assert_eq!(
        page.items
            .iter()
            .filter(|item| item.sample_requirement.is_some())
            .count(),
        7
    );

    assert_error(
        app.list(include(&["requirements", "prices"])).await,
        "invalid_request",
        Some("include"),
    );
}

#[tokio::test]
async fn limits_of_zero_and_two_hundred_and_one_are_rejected() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    assert_error(
        app.list(list_request(Some(0))).await,
        "invalid_request",
        Some("limit"),
    );
    assert_error(
        app.list(list_request(Some(201))).await,
        "invalid_request",
        Some("limit"),
    );
    assert_eq!(app.list(list_request(Some(200))).await.unwrap().items.len(), 9);
}

#[tokio::test]
async fn bad_cursors_are_rejected() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let with_cursor = |cursor: &str| pb::ListCatalogItemsRequest {
        cursor: Some(cursor.into()),
        ..Default::default()
    };
    assert_error(
        app.list(with_cursor("not-a-cursor")).await,
        "invalid_cursor",
        Some("cursor"),
    );

    let filtered = pb::ListCatalogItemsRequest {
        category: Some("purity".into()),
        limit: Some(2),
        ..Default::default()
    };
    let cursor = app.list(filtered.clone()).await.unwrap().next_cursor.unwrap();
    assert_error(
        app.list(with_cursor(&cursor)).await,
        "invalid_cursor",
        Some("cursor"),
    );
    let other_query = pb::ListCatalogItemsRequest {
        query: Some("ms".into()),
        cursor: Some(cursor.clone()),
        ..filtered.clone()
    };
    assert_error(app.list(other_query).await, "invalid_cursor", Some("cursor"));
    let same = pb::ListCatalogItemsRequest {
        cursor: Some(cursor),
        limit: Some(10),
        ..filtered
    };
    assert_eq!(
        ids(&app.list(same).await.unwrap()),
        ["purity-panel", "residual-solvents", "water-content"]
    );
}

#[tokio::test]
async fn listing_without_the_catalog_read_scope_is_insufficient_scope() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let token = app.token_for(app.customer_id, &["quotes:write"]);
    let error = assert_error(
        app.list_as(&token, list_request(None)).await,
        "insufficient_scope",
        None,
    );
    assert_eq!(error.details.unwrap()["required"], json!(["catalog:read"]));
    assert_error(
        app.list_as(&app.staff_token(&["catalog.admin"]), list_request(None))
            .await,
        "forbidden",
        None,
    );
}

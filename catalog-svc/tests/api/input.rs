//! The input rules over gRPC (internal callers such as labctl bypass the gateway): a control
//! character in any string of a request, or in any string of an imported catalog document, is
//! `invalid_request` naming the field, never an internal error, and nothing is written.

use crate::helpers::{TestApp, assert_error, quote_request, sample_catalog, spawn_app};
use platform::error::ApiError;
use proto::catalog as pb;
use serde_json::Value;

const CONTROLS: [&str; 5] = ["\u{0}", "\u{1}", "\u{1f}", "\u{7f}", "\u{85}"];

#[tokio::test]
async fn a_control_character_in_a_quote_id_or_a_listing_filter_is_invalid_not_internal() {
    let app = spawn_app().await;
    app.import(&sample_catalog()).await;
    let token = app.customer_token();
    for control in CONTROLS {
        let quote_id = format!("{}{control}", uuid::Uuid::now_v7());
        assert_error(
            app.get_quote_as(&token, &quote_id).await,
            "invalid_request",
            Some("quoteId"),
        );
        let filters = [
            (
                "query",
                pb::ListCatalogItemsRequest {
                    query: Some(format!("hplc{control}")),
                    ..Default::default()
                },
            ),
            (
                "category",
                pb::ListCatalogItemsRequest {
                    category: Some(format!("potency{control}")),
                    ..Default::default()
                },
            ),
            (
                "include[1]",
                pb::ListCatalogItemsRequest {
                    include: vec!["categories".into(), format!("all{control}")],
                    ..Default::default()
                },
            ),
            (
                "cursor",
                pb::ListCatalogItemsRequest {
                    cursor: Some(format!("c{control}")),
                    ..Default::default()
                },
            ),
        ];
        for (field, request) in filters {
            assert_error(app.list(request).await, "invalid_request", Some(field));
        }
        let compounds = ["Caffeine".to_owned(), format!("BPC{control}157")];
        let mut request = quote_request("potency", &[], &["hplc-potency"]);
        request.compound_names = compounds.to_vec();
        let field = Some("compoundNames[1]");
        assert_error(app.create_quote(request).await, "invalid_request", field);
    }
    assert!(app.list(Default::default()).await.is_ok());
}

/// Imports `document` written with every control character escaped (`\u0085`), so that only
/// the check of the document's strings can find them.
async fn import_escaped(
    app: &TestApp,
    token: &str,
    document: &Value,
) -> Result<pb::ImportCatalogResponse, ApiError> {
    let escaped: String = document
        .to_string()
        .chars()
        .map(|c| {
            if c.is_control() {
                format!("\\u{:04x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect();
    let message = pb::ImportCatalogRequest {
        document_json: escaped,
        note: "escaped".into(),
    };
    let request = platform::grpc::outgoing(message, token);
    let response = app.client.clone().import_catalog(request).await;
    response
        .map(tonic::Response::into_inner)
        .map_err(|status| ApiError::from_status(&status))
}

#[tokio::test]
async fn a_control_character_in_an_imported_document_is_invalid_and_descriptions_keep_newlines() {
    let app = spawn_app().await;
    let admin = app.staff_token(&["catalog.admin"]);
    for control in CONTROLS {
        let mut document = sample_catalog();
        document["categories"][0]["name"] = format!("Potency{control}").into();
        let field = Some("documentJson.categories[0].name");
        assert_error(
            import_escaped(&app, &admin, &document).await,
            "invalid_request",
            field,
        );
        let mut document = sample_catalog();
        document["tests"][2]["sampleRequirement"]["notes"] = format!("keep {control} cold").into();
        let field = Some("documentJson.tests[2].sampleRequirement.notes");
        assert_error(
            import_escaped(&app, &admin, &document).await,
            "invalid_request",
            field,
        );
    }
    // Unescaped in the message itself, DEL and C1 break the rules of the documentJson field.
    let mut document = sample_catalog();
    document["matrices"][0]["name"] = "Powder\u{85}".into();
    assert_error(
        app.import_as(&admin, &document).await,
        "invalid_request",
        Some("documentJson"),
    );
    assert_error(app.list(Default::default()).await, "catalog_unavailable", None);

    let mut document = sample_catalog();
    document["categories"][0]["description"] =
        "Assay of the active compound\nin two lines\twith a tab".into();
    app.import(&document).await;
}

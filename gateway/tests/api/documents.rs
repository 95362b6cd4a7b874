//! `GET /api/v1/openapi.json` (readiness is in `readiness.rs`).

use crate::helpers::{json_with_status, spawn_app};

#[tokio::test]
async fn the_openapi_document_is_3_1_with_the_spec_version_and_every_routed_operation() {
    let app = spawn_app().await;
    let document = json_with_status(
        app.http
            .get(app.url("/api/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["version"], "2026-07-17");
    assert_eq!(document["servers"][0]["url"], "/api/v1/agent");
    assert_eq!(
        document["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );
    assert!(document["components"]["schemas"]["ErrorEnvelope"].is_object());
    let paths = document["paths"].as_object().unwrap();
    let mut routes: Vec<String> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    routes.sort();
    assert_eq!(
        routes,
        vec![
            "DELETE /webhooks/{endpointId}",
            "GET /.well-known/coa-signing-key.json",
            "GET /catalog",
            "GET /export/coas",
            "GET /export/instrument-results",
            "GET /instruments",
            "GET /invoices",
            "GET /invoices/{reference}",
            "GET /methods",
            "GET /notifications/consents",
            "GET /orders",
            "GET /orders/{reference}",
            "GET /orders/{reference}/custody",
            "GET /orders/{reference}/eta",
            "GET /orders/{reference}/instrument-data",
            "GET /orders/{reference}/pickup",
            "GET /orders/{reference}/raw-data",
            "GET /orders/{reference}/samples",
            "GET /payments",
            "GET /payments/stablecoin/{reference}",
            "GET /payments/{reference}",
            "GET /results",
            "GET /results/{reference}",
            "GET /results/{reference}/analytes",
            "GET /results/{reference}/instrument-data",
            "GET /shipments",
            "GET /shipments/{reference}",
            "GET /shipments/{reference}/label",
            "GET /spend-envelope",
            "GET /support/tickets",
            "GET /support/tickets/{ticketId}",
            "GET /verify",
            "GET /verify/batch",
            "GET /webhooks",
            "GET /webhooks/{endpointId}/deliveries",
            "POST /notifications/consents",
            "POST /notifications/consents/{consentId}/withdraw",
            "POST /notifications/customer-coa",
            "POST /orders",
            "POST /orders/{reference}/addons",
            "POST /orders/{reference}/cancel-request",
            "POST /orders/{reference}/pickup",
            "POST /orders/{reference}/simulate",
            "POST /payments/prepare",
            "POST /payments/stablecoin/submit",
            "POST /quotes",
            "POST /support/tickets",
            "POST /support/tickets/{ticketId}/messages",
            "POST /verify",
            "POST /verify/batch",
            "POST /webhooks",
            "POST /webhooks/{endpointId}/rotate-secret",
            "POST /webhooks/{endpointId}/test",
        ]
    );
    let create_order = &document["paths"]["/orders"]["post"];
    assert!(
        create_order["description"]
            .as_str()
            .unwrap()
            .contains("`orders:write`")
    );
    assert_eq!(create_order["parameters"][0]["name"], "Idempotency-Key");
    assert_eq!(create_order["parameters"][0]["required"], true);
    assert_eq!(
        create_order["responses"]["401"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ErrorEnvelope"
    );
    assert!(create_order["requestBody"]["content"]["application/json"].is_object());
    // The COA key set lives at the site root, not in the agent area: its own server says so.
    let key_set = &document["paths"]["/.well-known/coa-signing-key.json"]["get"];
    assert_eq!(key_set["servers"][0]["url"], "/");
    assert_eq!(
        key_set["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/CoaSigningKeySet"
    );
}

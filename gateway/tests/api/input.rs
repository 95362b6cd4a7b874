//! The input rules at the gateway: refused inputs answer 400 `invalid_request` naming the
//! location of the flaw and never reach a service; free text keeps its newlines; the gateway's
//! own identity gRPC API applies the same rules to its messages.

use crate::helpers::{error_envelope, order_body, spawn_app};
use proto::identity as pb;

const CONTROLS: [&str; 5] = ["%00", "%01", "%1F", "%7F", "%C2%85"];

#[tokio::test]
async fn refused_inputs_name_their_location_and_never_reach_a_service() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["all"]).await;
    let key = &customer.plaintext;
    for control in CONTROLS {
        let cases = [
            (format!("/orders/ORD-{control}"), "path.reference"),
            (format!("/invoices/{control}"), "path.reference"),
            (format!("/catalog?query={control}"), "query.query"),
            (format!("/orders?limit=5&status=paid{control}"), "query.status"),
            (format!("/webhooks/{control}/deliveries"), "path.endpointId"),
        ];
        for (path, field) in cases {
            let body = error_envelope(app.get(&path, key).await, 400, "invalid_request").await;
            assert_eq!(body["error"]["details"]["field"], field, "{path}");
            assert!(
                !body.to_string().contains("\\u0000"),
                "the value is not echoed: {body}"
            );
        }
    }
    let mut body = order_body();
    body["sampleMetadata"][0]["lotNumber"] = "LOT\u{0}1".into();
    let response = app.post_json("/orders", key, &body, Some("input-key-1")).await;
    let answer = error_envelope(response, 400, "invalid_request").await;
    assert_eq!(
        answer["error"]["details"]["field"],
        "body.sampleMetadata[0].lotNumber"
    );
    let response = app
        .post_json("/orders", key, &order_body(), Some("input\u{85}key-2"))
        .await;
    let answer = error_envelope(response, 400, "idempotency_key_invalid").await;
    assert_eq!(answer["error"]["details"]["field"], "header.idempotency-key");
    assert!(app.fakes.calls().is_empty(), "no service was called");

    let mut body = order_body();
    body["notes"] = "line one\nline two\ttabbed\r\n".into();
    body["sampleMetadata"][0]["matrixNotes"] = "two\nlines".into();
    let response = app.post_json("/orders", key, &body, Some("input-key-3")).await;
    assert!(response.status().as_u16() < 400, "free text keeps its newlines");
    assert_eq!(app.fakes.calls_of("CreateOrder").len(), 1);
}

#[tokio::test]
async fn the_identity_api_refuses_control_characters_as_invalid_not_internal() {
    let app = spawn_app().await;
    let identity = &app.identity;
    let mut client = identity.client().await;
    let customer = identity.create_customer("input@acme.example").await;
    let refused = |status: tonic::Status, field: &str| {
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        let error = platform::error::ApiError::from_status(&status);
        assert_eq!(error.code.as_str(), "invalid_request");
        assert_eq!(error.details.unwrap()["field"], field);
    };
    for control in ["\u{0}", "\u{1}", "\u{1f}", "\u{7f}", "\u{85}"] {
        let create = pb::CreateCustomerRequest {
            name: format!("Acme{control}"),
            email: "acme@acme.example".into(),
        };
        refused(
            client.create_customer(identity.admin(create)).await.unwrap_err(),
            "name",
        );
        let key = pb::CreateApiKeyRequest {
            customer_id: customer.id.clone(),
            name: "agent".into(),
            scopes: vec!["orders:read".into(), format!("all{control}")],
            spend_limit_cents: None,
        };
        refused(
            client.create_api_key(identity.admin(key)).await.unwrap_err(),
            "scopes[1]",
        );
        let list = pb::ListApiKeysRequest {
            customer_id: format!("{}{control}", customer.id),
        };
        refused(
            client.list_api_keys(identity.admin(list)).await.unwrap_err(),
            "customerId",
        );
        let revoke = pb::RevokeApiKeyRequest {
            key: format!("abc{control}"),
        };
        refused(
            client.revoke_api_key(identity.admin(revoke)).await.unwrap_err(),
            "key",
        );
    }
}

//! Secret recovery: only the same API key replaying the identical request gets the secret back.

use crate::helpers::{code_of, new_key, spawn_app};
use proto::webhooks as pb;
use uuid::Uuid;

#[tokio::test]
async fn the_same_key_replaying_the_identical_request_recovers_the_secret() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let key = new_key();
    let request = pb::CreateEndpointRequest {
        url: app.receiver.url("/hooks/recover"),
        events: vec!["order.created".into()],
        description: None,
    };
    let first = app
        .create_with(&app.token(customer), &key, request.clone())
        .await
        .unwrap()
        .into_inner();
    let replay = app
        .create_with(&app.token(customer), &key, request.clone())
        .await
        .unwrap();
    assert_eq!(replay.metadata().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(replay.into_inner(), first);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM webhooks.endpoints")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 1, "one endpoint for one key");

    // The stored answer is sealed: the secret is not readable in the idempotency table.
    let stored: Vec<u8> = sqlx::query_scalar("SELECT outcome FROM webhooks.idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let stored = String::from_utf8(stored).unwrap();
    assert!(stored.starts_with("v1:"));
    assert!(!stored.contains(&first.signing_secret));

    let mut different = request.clone();
    different.events = vec!["order.created".into(), "invoice.created".into()];
    let conflict = app
        .create_with(&app.token(customer), &key, different)
        .await
        .unwrap_err();
    assert_eq!(code_of(&conflict), "idempotency_key_reused");

    let other_key_of_same_customer = app.customer_token(customer, "key-other", &crate::helpers::ALL_SCOPES);
    let stolen = app
        .create_with(&other_key_of_same_customer, &key, request)
        .await
        .unwrap_err();
    assert_eq!(code_of(&stolen), "idempotency_key_reused");
    assert!(!format!("{stolen:?}").contains(&first.signing_secret));
}

#[tokio::test]
async fn rotation_is_idempotent_and_recoverable_by_the_same_key_only() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let created = app
        .register(customer, "/hooks/rotate-replay", &["order.created"])
        .await;
    let endpoint_id = created.endpoint.unwrap().id;
    let rotate = |token: String, key: String| {
        let request = pb::RotateSecretRequest {
            endpoint_id: endpoint_id.clone(),
        };
        let mut client = app.client.clone();
        async move {
            client
                .rotate_secret(platform::grpc::outgoing_idempotent(request, &token, &key))
                .await
        }
    };
    let key = new_key();
    let first = rotate(app.token(customer), key.clone())
        .await
        .unwrap()
        .into_inner();
    assert_ne!(first.signing_secret, created.signing_secret);
    assert!(first.endpoint.unwrap().previous_secret_expires_at.is_some());
    let replay = rotate(app.token(customer), key.clone()).await.unwrap();
    assert_eq!(replay.metadata().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(replay.into_inner().signing_secret, first.signing_secret);
    let other = app.customer_token(customer, "key-other", &crate::helpers::ALL_SCOPES);
    let refused = rotate(other, key).await.unwrap_err();
    assert_eq!(code_of(&refused), "idempotency_key_reused");
    let second = rotate(app.token(customer), new_key()).await.unwrap().into_inner();
    assert_ne!(second.signing_secret, first.signing_secret);
}

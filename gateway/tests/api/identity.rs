//! The internal identity gRPC API: staff only, customers by email, keys shown once and stored
//! only as a peppered verifier.

use crate::helpers::spawn_app;
use platform::principal::{Principal, PrincipalKind, roles};
use proto::identity as pb;
use secrecy::SecretString;

#[tokio::test]
async fn identity_calls_need_a_staff_token_with_the_identity_admin_role() {
    let app = spawn_app().await;
    let mut client = app.identity.client().await;
    let anonymous = client
        .list_customers(pb::ListCustomersRequest {})
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), tonic::Code::Unauthenticated);
    let other_role = platform::grpc::outgoing(
        pb::ListCustomersRequest {},
        &app.identity.staff_token(&[roles::CATALOG_ADMIN]),
    );
    assert_eq!(
        client.list_customers(other_role).await.unwrap_err().code(),
        tonic::Code::PermissionDenied
    );
    let customer_token = app.identity.keys.mint(&Principal {
        kind: PrincipalKind::Customer,
        subject: "key".into(),
        customer_id: Some(uuid::Uuid::new_v4()),
        scopes: vec!["all".into()],
        roles: vec![roles::IDENTITY_ADMIN.into()],
        spend_limit_cents: None,
        operator_id: None,
        credential_id: None,
        sandbox: false,
    });
    let as_customer = platform::grpc::outgoing(pb::ListCustomersRequest {}, &customer_token);
    assert_eq!(
        client.list_customers(as_customer).await.unwrap_err().code(),
        tonic::Code::PermissionDenied
    );
    assert!(
        client
            .list_customers(app.identity.admin(pb::ListCustomersRequest {}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn creating_a_customer_twice_returns_the_existing_one() {
    let app = spawn_app().await;
    let mut client = app.identity.client().await;
    let first = client
        .create_customer(app.identity.admin(pb::CreateCustomerRequest {
            name: "Acme".into(),
            email: "Ops@Acme.example".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(first.created);
    let second = client
        .create_customer(app.identity.admin(pb::CreateCustomerRequest {
            name: "Acme 2".into(),
            email: "ops@acme.example ".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(!second.created);
    assert_eq!(second.customer.unwrap().id, first.customer.clone().unwrap().id);
    let listed = client
        .list_customers(app.identity.admin(pb::ListCustomersRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.customers.len(), 1);
    assert_eq!(listed.customers[0].email, "ops@acme.example");
    let bad = pb::CreateCustomerRequest {
        name: "Acme".into(),
        email: "not-an-email".into(),
    };
    let status = client.create_customer(app.identity.admin(bad)).await.unwrap_err();
    assert_eq!(
        platform::error::ApiError::from_status(&status).code,
        platform::error::ErrorCode::InvalidRequest
    );
}

#[tokio::test]
async fn a_key_is_shown_once_in_its_format_and_the_database_holds_only_its_verifier() {
    let app = spawn_app().await;
    let customer = app.identity.create_customer("lab@acme.example").await;
    let (key, plaintext) = app
        .identity
        .create_key(&customer.id, &["all"], Some(100_000))
        .await;
    let rest = plaintext.strip_prefix("svc_live_").expect("the svc_live_ prefix");
    let (public_id, secret) = rest.split_once('_').unwrap();
    assert_eq!(public_id, key.public_id);
    assert!(
        public_id.len() == 16
            && public_id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    );
    assert!(secret.len() == 32 && secret.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_eq!(key.scopes.len(), 13);
    assert_eq!(key.spend_limit_cents, Some(100_000));

    let rows: Vec<String> = sqlx::query_scalar("SELECT row_to_json(k)::text FROM identity.api_keys k")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].contains(secret) && !rows[0].contains(&plaintext));
    let verifier: Vec<u8> = sqlx::query_scalar("SELECT verifier FROM identity.api_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let pepper: SecretString = identity_svc::config::DEV_API_KEY_PEPPER.to_owned().into();
    assert_eq!(
        verifier,
        identity_svc::domain::api_key::compute_verifier(&pepper, public_id, secret)
    );

    let listed = app
        .identity
        .client()
        .await
        .list_api_keys(app.identity.admin(pb::ListApiKeysRequest {
            customer_id: customer.id,
        }))
        .await
        .unwrap();
    assert_eq!(listed.into_inner().keys[0].public_id, key.public_id);
}

#[tokio::test]
async fn unknown_scopes_and_unknown_customers_are_refused() {
    let app = spawn_app().await;
    let customer = app.identity.create_customer("lab@acme.example").await;
    let mut client = app.identity.client().await;
    let unknown_scope = pb::CreateApiKeyRequest {
        customer_id: customer.id.clone(),
        name: "ci".into(),
        scopes: vec!["orders:read".into(), "orders:delete".into()],
        spend_limit_cents: None,
    };
    let error = platform::error::ApiError::from_status(
        &client
            .create_api_key(app.identity.admin(unknown_scope))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, platform::error::ErrorCode::InvalidRequest);
    assert_eq!(error.details.unwrap()["field"], "scopes");
    let no_customer = pb::CreateApiKeyRequest {
        customer_id: uuid::Uuid::new_v4().to_string(),
        name: "ci".into(),
        scopes: vec!["all".into()],
        spend_limit_cents: None,
    };
    assert_eq!(
        client
            .create_api_key(app.identity.admin(no_customer))
            .await
            .unwrap_err()
            .code(),
        tonic::Code::NotFound
    );
    let revoke_missing = pb::RevokeApiKeyRequest {
        key: uuid::Uuid::new_v4().to_string(),
    };
    assert_eq!(
        client
            .revoke_api_key(app.identity.admin(revoke_missing))
            .await
            .unwrap_err()
            .code(),
        tonic::Code::NotFound
    );
}

#[tokio::test]
async fn a_key_is_revoked_by_its_id() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let revoke = pb::RevokeApiKeyRequest {
        key: customer.key.id.clone(),
    };
    let revoked = app
        .identity
        .client()
        .await
        .revoke_api_key(app.identity.admin(revoke))
        .await
        .unwrap()
        .into_inner()
        .key
        .unwrap();
    assert!(revoked.revoked_at.is_some());
    let response = app.get("/orders", &customer.plaintext).await;
    assert_eq!(
        response.status(),
        401,
        "a key never seen before is read fresh and refused at once"
    );
}
